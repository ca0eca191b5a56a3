/**
 * Aggregations from chunk columns (db/storage/columns.ts): a read of every
 * chunk in a time range, newest first, that takes a chunk's columns where
 * they answer (the filter is on time, levels and column fields; the
 * groupings are levels, column fields and whole-minute time buckets) and
 * its lines where they do not (a chunk written without columns, a field
 * left out of its columns, an entry in a partial minute at either end of
 * the range). No entry is parsed where the columns answer.
 *
 * Exact while merges move entries, as a scan is (db/query/scan.ts): it
 * records the versionstamp of every value it read and reads again when one
 * was gone or changed by the end, at most `MAX_READ_ATTEMPTS` times, then
 * throws `InexactReadError`. When the time budget runs out it counts the
 * entries of the chunks it read received from the minute after the next
 * unread chunk's last entry on: all of them and no others.
 *
 * @module
 */
import type { LogRecord } from "../../domain/entry.ts";
import { idTime, timeBound } from "../../domain/ids.ts";
import {
  logChunkKey,
  logColumnsKey,
  logSummariesPrefix,
  logSummaryKey,
  logUnitId,
} from "../keys.ts";
import { GET_MANY_MAX_KEYS, getManyChunked } from "../kv.ts";
import { CHUNK_SPAN_MS, type ChunkSummary } from "../storage/chunk.ts";
import { decodeSummary, readChunkText } from "../storage/chunk.ts";
import {
  COLUMN_FIELDS,
  type Columns,
  readColumns,
} from "../storage/columns.ts";
import { decodeRecordLine, lineId, lineLevel } from "../storage/lines.ts";
import { fieldText, resolvePath } from "../storage/text.ts";
import { InexactReadError, MAX_READ_ATTEMPTS } from "./consistent.ts";
import type { CompiledFilter, Filter } from "./filter.ts";
import { MAX_ID } from "./listing.ts";
import type { GroupBy } from "./pipe.ts";
import type { ScanStats } from "./scan.ts";
import type { Cell } from "./tally.ts";

const MINUTE_MS = 60_000;

/** The paths chunk columns hold, `level` included. */
const COLUMN_PATHS = new Set([...COLUMN_FIELDS, "level"]);

/**
 * Whether columns may answer: no text terms, field terms and groupings on
 * column fields or `level` only, time buckets of whole minutes.
 */
export function columnsMayAnswer(filter: Filter, by: GroupBy[]): boolean {
  if ((filter.text?.length ?? 0) > 0 || (filter.notText?.length ?? 0) > 0) {
    return false;
  }
  if ((filter.fields ?? []).some((t) => !COLUMN_PATHS.has(t.path))) {
    return false;
  }
  return by.every((b) =>
    b.kind === "time" ? b.ms % MINUTE_MS === 0 : COLUMN_PATHS.has(b.path)
  );
}

/** A value as a cell: objects and arrays as their JSON. */
export function cellOf(value: unknown): Cell {
  if (value === undefined || value === null) return null;
  if (typeof value === "object") return JSON.stringify(value);
  return value as string | number | boolean;
}

/** The matching entries of one chunk read from its columns. */
interface ColumnsPart {
  columns: Columns;
  /** 1 where the entry matches. */
  mask: Uint8Array;
}

/** The matching entries of one chunk read from its lines. */
interface LinesPart {
  /** Per matching entry: id time, receipt time, the paths' values. */
  rows: { idMs: number; receivedAt: number; values: unknown[] }[];
}

/** What one read collected, to be counted from a time on. */
export interface Collected {
  parts: (ColumnsPart | LinesPart)[];
  /** The paths of `LinesPart.values`, in order. */
  paths: string[];
  stats: ScanStats;
  /** Set when the budget ran out: only entries from this time on count. */
  searchedTo?: number;
}

/** Options of {@linkcode collect}. */
export interface CollectOptions {
  filter: CompiledFilter;
  /** Field paths the counting groups by (`level` included). */
  paths: string[];
  budget: { ms: number; clock?: () => number };
}

/**
 * Reads the matching entries of a project in the filter's time range, as
 * columns where they answer and as lines elsewhere, exactly (see the
 * module doc).
 */
export async function collect(
  kv: Deno.Kv,
  projectId: string,
  options: CollectOptions,
): Promise<Collected> {
  for (let attempt = 1; attempt <= MAX_READ_ATTEMPTS; attempt++) {
    const read: { key: Deno.KvKey; versionstamp: string }[] = [];
    const result = await collectOnce(kv, projectId, options, read);
    if (!result) continue;
    const now = await getManyChunked(kv, read.map((r) => r.key));
    if (now.every((e, i) => e.versionstamp === read[i]!.versionstamp)) {
      return result;
    }
  }
  throw new InexactReadError();
}

/** The id range and the summaries' listing of a filter. */
function listChunks(
  kv: Deno.Kv,
  projectId: string,
  filter: Filter,
): { lo: string; hi: string; iter: Deno.KvListIterator<unknown> } {
  const lo = filter.since === undefined ? "" : timeBound(filter.since);
  const hi = filter.until === undefined ? MAX_ID : timeBound(filter.until);
  const prefix = logSummariesPrefix(projectId);
  const iter = kv.list({
    start: lo === "" ? prefix : [...prefix, lo],
    end: hi === MAX_ID
      ? [...prefix, MAX_ID]
      : [...prefix, timeBound(idTime(hi) + CHUNK_SPAN_MS + 1)],
  }, { reverse: true, batchSize: 500 });
  return { lo, hi, iter };
}

/** One attempt of {@linkcode collect}; undefined when a chunk was gone. */
async function collectOnce(
  kv: Deno.Kv,
  projectId: string,
  options: CollectOptions,
  read: { key: Deno.KvKey; versionstamp: string }[],
): Promise<Collected | undefined> {
  const { filter } = options;
  const { lo, hi, iter } = listChunks(kv, projectId, filter.filter);
  const stats: ScanStats = {
    chunksRead: 0,
    chunksSkipped: 0,
    entriesScanned: 0,
  };
  const out: Collected = { parts: [], paths: options.paths, stats };
  const clock = options.budget.clock ?? (() => performance.now());
  const deadline = clock() + options.budget.ms;
  const context: BatchContext = { options, lo, hi, out, read };
  let batch: ChunkSummary[] = [];
  // The batch whose columns are being fetched while the one before is read.
  let fetching: Promise<Fetched> | null = null;
  const flush = async () => {
    const next = batch.length > 0 ? fetchBatch(kv, projectId, batch) : null;
    batch = [];
    const gone = fetching !== null &&
      await readBatch(kv, projectId, await fetching, context);
    fetching = next;
    // A read done again leaves no fetch behind.
    if (gone && next) await next;
    return gone;
  };
  for await (const entry of iter) {
    const summary = decodeSummary(entry.value, logUnitId(entry.key));
    if (
      summary.lastId < lo || summary.firstId >= hi ||
      !filter.summaryMayMatch(summary)
    ) {
      stats.chunksSkipped++;
      continue;
    }
    if (stats.chunksRead + batch.length > 0 && clock() >= deadline) {
      if (await flush() || await flush()) return undefined;
      // Every entry of a later minute than this chunk's last is counted.
      out.searchedTo = (Math.floor(idTime(summary.lastId) / MINUTE_MS) + 1) *
        MINUTE_MS;
      return out;
    }
    batch.push(summary);
    if (batch.length >= GET_MANY_MAX_KEYS && await flush()) return undefined;
  }
  if (await flush() || await flush()) return undefined;
  return out;
}

/** What {@linkcode readBatch} reads into. */
interface BatchContext {
  options: CollectOptions;
  lo: string;
  hi: string;
  out: Collected;
  read: { key: Deno.KvKey; versionstamp: string }[];
}

/** A batch of chunks with their columns values, fetched. */
type Fetched = {
  batch: ChunkSummary[];
  withColumns: ChunkSummary[];
  entries: Deno.KvEntryMaybe<unknown>[];
};

/** Fetches the columns values of a batch's chunks that have columns. */
async function fetchBatch(
  kv: Deno.Kv,
  projectId: string,
  batch: ChunkSummary[],
): Promise<Fetched> {
  const withColumns = batch.filter((s) => (s.columns ?? 0) > 0);
  const entries = await getManyChunked(
    kv,
    withColumns.map((s) => logColumnsKey(projectId, s.lastId)),
  );
  return { batch, withColumns, entries };
}

/**
 * Reads a fetched batch of chunks: their columns, or their lines where the
 * columns do not answer. Returns true when one was gone. A chunk, its
 * summary and its columns are written in one commit, so the summary's
 * versionstamp (a small value to read again at the end) is theirs.
 */
async function readBatch(
  kv: Deno.Kv,
  projectId: string,
  fetched: Fetched,
  context: BatchContext,
): Promise<boolean> {
  const { out, read } = context;
  const { withColumns, entries } = fetched;
  const lines: ChunkSummary[] = fetched.batch.filter((s) => !s.columns);
  const wanted = new Set([
    ...context.options.paths,
    ...(context.options.filter.filter.fields ?? []).map((t) => t.path),
  ]);
  for (const [i, entry] of entries.entries()) {
    const summary = withColumns[i]!;
    if (entry.versionstamp === null) return true;
    read.push({
      key: logSummaryKey(projectId, summary.lastId),
      versionstamp: entry.versionstamp,
    });
    const columns = await readColumns(
      kv,
      projectId,
      summary.lastId,
      entry.value,
      wanted,
    );
    const mask = columnsMask(columns, context.options);
    if (mask) {
      out.parts.push({ columns, mask });
      out.stats.chunksRead++;
      out.stats.entriesScanned += columns.count;
    } else lines.push(summary);
  }
  const values = await getManyChunked(
    kv,
    lines.map((s) => logChunkKey(projectId, s.lastId)),
  );
  for (const [i, entry] of values.entries()) {
    if (entry.versionstamp === null) return true;
    read.push({
      key: logSummaryKey(projectId, lines[i]!.lastId),
      versionstamp: entry.versionstamp,
    });
    const text = await readChunkText(
      kv,
      projectId,
      lines[i]!.lastId,
      entry.value,
    );
    out.parts.push(linesPart(text, context));
    out.stats.chunksRead++;
  }
  return false;
}

/** The matching entries of a chunk's lines. */
function linesPart(text: string, context: BatchContext): LinesPart {
  const { lo, hi, out } = context;
  const rows: LinesPart["rows"] = [];
  const { levelOk } = context.options.filter;
  if (text === "") return { rows };
  for (const line of text.split("\n")) {
    out.stats.entriesScanned++;
    const id = lineId(line);
    if (id < lo || id >= hi) continue;
    if (levelOk && !levelOk(lineLevel(line))) continue;
    const record: LogRecord = decodeRecordLine(line);
    if (!context.options.filter.test(record)) continue;
    rows.push({
      idMs: idTime(id),
      receivedAt: record.receivedAt,
      values: out.paths.map((p) => resolvePath(record, p)),
    });
  }
  return { rows };
}

/**
 * Which entries of a chunk match, from its columns; undefined when the
 * columns cannot tell (a field left out, an entry in a partial minute).
 */
function columnsMask(
  columns: Columns,
  options: CollectOptions,
): Uint8Array | undefined {
  const { filter } = options;
  const { since, until } = filter.filter;
  // Ids and receipt times in other minutes, or words: the lines tell.
  const words = [...filter.filter.text ?? [], ...filter.filter.notText ?? []];
  if (!columns.timeExact || words.length > 0) return undefined;
  const terms = (filter.filter.fields ?? []).filter((t) => t.path !== "level");
  for (const path of [...options.paths, ...terms.map((t) => t.path)]) {
    if (path !== "level" && !columns.fields.has(path)) return undefined;
  }
  const levelOk = columns.levels.map((l) => filter.levelOk?.(l) ?? true);
  const fieldOk = terms.map((term) => {
    const field = columns.fields.get(term.path)!;
    const ok = field.values.map((value) => {
      const text = fieldText(value);
      switch (term.op) {
        case "eq":
          return text === term.value;
        case "neq":
          return text !== term.value;
        case "exists":
          return text !== undefined;
        case "missing":
          return text === undefined;
      }
    });
    return { codes: field.codes, ok };
  });
  const mask = new Uint8Array(columns.count);
  for (let i = 0; i < columns.count; i++) {
    const start = columns.baseMs + columns.minutes[i]! * MINUTE_MS;
    if (since !== undefined && start < since) {
      if (start + MINUTE_MS > since) return undefined;
      continue;
    }
    if (until !== undefined && start + MINUTE_MS > until) {
      if (start < until) return undefined;
      continue;
    }
    if (!levelOk[columns.levelCodes[i]!]) continue;
    if (!fieldOk.every((f) => f.ok[f.codes[i]!])) continue;
    mask[i] = 1;
  }
  return mask;
}

/**
 * Counts what `collect` read into `add`: per group of `by`'s cells, the
 * entries received from `from` on (all of them by default).
 */
export function countCollected(
  collected: Collected,
  by: GroupBy[],
  add: (cells: Cell[], n: number) => void,
): void {
  const from = collected.searchedTo ?? -Infinity;
  for (const part of collected.parts) {
    if ("mask" in part) countColumns(part, by, from, add);
    else {
      const index = by.map((b) =>
        b.kind === "field" ? collected.paths.indexOf(b.path) : -1
      );
      for (const row of part.rows) {
        if (row.idMs < from) continue;
        add(
          by.map((b, i) =>
            b.kind === "time"
              ? new Date(Math.floor(row.receivedAt / b.ms) * b.ms).toISOString()
              : cellOf(row.values[index[i]!])
          ),
          1,
        );
      }
    }
  }
}

/** {@linkcode countCollected} of one chunk's columns, by dictionary codes. */
function countColumns(
  part: ColumnsPart,
  by: GroupBy[],
  from: number,
  add: (cells: Cell[], n: number) => void,
): void {
  const { columns, mask } = part;
  const base = columns.baseMs;
  // Per grouping: each entry's index, how many indexes, the cell of one.
  const dims = by.map((b) => {
    if (b.kind === "time") {
      const first = Math.floor(base / b.ms);
      return {
        of: (i: number) =>
          Math.floor((base + columns.minutes[i]! * MINUTE_MS) / b.ms) - first,
        size: Math.floor(255 * MINUTE_MS / b.ms) + 2,
        cell: (k: number) => new Date((first + k) * b.ms).toISOString(),
      };
    }
    if (b.path === "level") {
      return {
        of: (i: number) => columns.levelCodes[i]!,
        size: 256,
        cell: (k: number) => columns.levels[k]!,
      };
    }
    const field = columns.fields.get(b.path)!;
    return {
      of: (i: number) => field.codes[i]!,
      size: field.values.length,
      cell: (k: number) => cellOf(field.values[k]),
    };
  });
  const counts = new Map<number, number>();
  for (let i = 0; i < columns.count; i++) {
    if (!mask[i] || base + columns.minutes[i]! * MINUTE_MS < from) continue;
    let key = 0;
    for (const d of dims) key = key * d.size + d.of(i);
    counts.set(key, (counts.get(key) ?? 0) + 1);
  }
  for (const [key, n] of counts) {
    const cells: Cell[] = new Array(dims.length);
    let rest = key;
    for (let d = dims.length - 1; d >= 0; d--) {
      const dim = dims[d]!;
      cells[d] = dim.cell(rest % dim.size);
      rest = Math.floor(rest / dim.size);
    }
    add(cells, n);
  }
}

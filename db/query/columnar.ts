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
  logColumnsPrefix,
  logSummariesPrefix,
  logUnitId,
} from "../keys.ts";
import { GET_MANY_MAX_KEYS, getManyChunked } from "../kv.ts";
import type { ChunkSummary } from "../storage/chunk.ts";
import { decodeSummary, readChunkText } from "../storage/chunk.ts";
import {
  COLUMN_FIELDS,
  type Columns,
  readColumns,
} from "../storage/columns.ts";
import {
  decodeLineMembers,
  decodeRecordLine,
  lineId,
  lineLevel,
} from "../storage/lines.ts";
import { fieldText, resolvePath } from "../storage/text.ts";
import { InexactReadError, MAX_READ_ATTEMPTS } from "./consistent.ts";
import { type CompiledFilter, type Filter, termHolds } from "./filter.ts";
import { keyEnd, MAX_ID } from "./listing.ts";
import { turnTaker } from "./turns.ts";
import type { GroupBy } from "./pipe.ts";
import type { ScanStats } from "./scan.ts";
import type { Cell } from "./tally.ts";

const MINUTE_MS = 60_000;
/**
 * Characters of a line from which only the members a count needs are
 * parsed (db/storage/lines.ts, `decodeLineMembers`): a wide entry's other
 * members are scanned past, never built, so counting over lines holds
 * memory in proportion to what it counts.
 */
export const WIDE_LINE_CHARS = 4096;

/**
 * The top-level members that a count by `paths` under `filter` reads of an
 * entry; null when it needs them all (words are searched in every value).
 */
function rootsNeeded(filter: Filter, paths: string[]): Set<string> | null {
  if ((filter.text?.length ?? 0) + (filter.notText?.length ?? 0) > 0) {
    return null;
  }
  const roots = new Set<string>();
  for (const path of [...paths, ...(filter.fields ?? []).map((t) => t.path)]) {
    roots.add(path.split(".")[0]!);
  }
  return roots;
}

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

/** What a read read: each chunk's last id and the versionstamp it had. */
type Read = Map<string, string>;

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
    const read: Read = new Map();
    const result = await collectOnce(kv, projectId, options, read);
    if (result && await unchanged(kv, projectId, options.filter.filter, read)) {
      return result;
    }
  }
  throw new InexactReadError();
}

/**
 * Whether every chunk read is still there as it was read: a chunk, its
 * summary and its columns are written in one commit, so the summary's
 * versionstamp is theirs, and listing the summaries again (small values,
 * a few reads) tells.
 */
async function unchanged(
  kv: Deno.Kv,
  projectId: string,
  filter: Filter,
  read: Read,
): Promise<boolean> {
  const now = new Map<string, string>();
  const { summaries } = listChunks(kv, projectId, filter);
  for await (const e of summaries) now.set(logUnitId(e.key), e.versionstamp);
  for (const [lastId, versionstamp] of read) {
    if (now.get(lastId) !== versionstamp) return false;
  }
  return true;
}

/** The id range of a filter, and the listings of summaries and columns. */
function listChunks(
  kv: Deno.Kv,
  projectId: string,
  filter: Filter,
): {
  lo: string;
  hi: string;
  summaries: Deno.KvListIterator<unknown>;
  columns: Deno.KvListIterator<unknown>;
} {
  const lo = filter.since === undefined ? "" : timeBound(filter.since);
  const hi = filter.until === undefined ? MAX_ID : timeBound(filter.until);
  const range = (prefix: Deno.KvKey) => ({
    start: lo === "" ? prefix : [...prefix, lo],
    end: [...prefix, keyEnd(hi)],
  });
  return {
    lo,
    hi,
    summaries: kv.list(range(logSummariesPrefix(projectId)), {
      reverse: true,
      batchSize: 500,
    }),
    columns: kv.list(range(logColumnsPrefix(projectId)), {
      reverse: true,
      batchSize: 100,
    }),
  };
}

/**
 * The columns entry of each chunk in turn (newest first), from a listing
 * of the columns in the same range and order as the summaries'; null when
 * the chunk has none any more (merged away or expired since it was listed).
 */
function columnsReader(
  iter: Deno.KvListIterator<unknown>,
): (lastId: string) => Promise<Deno.KvEntry<unknown> | null> {
  let current: Deno.KvEntry<unknown> | null = null;
  let done = false;
  return async (lastId) => {
    for (;;) {
      if (current === null && !done) {
        const next = await iter.next();
        if (next.done) done = true;
        else current = next.value;
      }
      if (current === null) return null;
      const id = logUnitId(current.key);
      // Columns of a chunk the summaries' listing skipped, or newer.
      if (id > lastId) {
        current = null;
        continue;
      }
      if (id < lastId) return null;
      const entry = current;
      current = null;
      return entry;
    }
  };
}

/** One attempt of {@linkcode collect}; undefined when a chunk was gone. */
async function collectOnce(
  kv: Deno.Kv,
  projectId: string,
  options: CollectOptions,
  read: Read,
): Promise<Collected | undefined> {
  const { filter } = options;
  const listed = listChunks(kv, projectId, filter.filter);
  const { lo, hi } = listed;
  const stats: ScanStats = {
    chunksRead: 0,
    chunksSkipped: 0,
    entriesScanned: 0,
  };
  const out: Collected = { parts: [], paths: options.paths, stats };
  const clock = options.budget.clock ?? (() => performance.now());
  const deadline = clock() + options.budget.ms;
  const context: BatchContext = { options, lo, hi, out, read };
  const columnsOf = columnsReader(listed.columns);
  // Chunks to read by their lines, a batch at a time.
  let lines: ChunkSummary[] = [];
  const flush = async () => {
    const gone = await readLines(kv, projectId, lines, context);
    lines = [];
    return gone;
  };
  const turn = turnTaker();
  for await (const entry of listed.summaries) {
    await turn();
    const summary = decodeSummary(entry.value, logUnitId(entry.key));
    if (
      summary.lastId < lo || summary.firstId >= hi ||
      !filter.summaryMayMatch(summary)
    ) {
      stats.chunksSkipped++;
      continue;
    }
    if (stats.chunksRead + lines.length > 0 && clock() >= deadline) {
      if (await flush()) return undefined;
      // Every entry of a later minute than this chunk's last is counted.
      out.searchedTo = (Math.floor(idTime(summary.lastId) / MINUTE_MS) + 1) *
        MINUTE_MS;
      return out;
    }
    if (summary.columns) {
      const found = await columnsOf(summary.lastId);
      if (found === null) return undefined;
      if (!await readColumnsPart(kv, projectId, found, context)) {
        lines.push(summary);
      }
    } else lines.push(summary);
    if (lines.length >= GET_MANY_MAX_KEYS && await flush()) return undefined;
  }
  if (await flush()) return undefined;
  return out;
}

/** What a read of chunks reads into. */
interface BatchContext {
  options: CollectOptions;
  lo: string;
  hi: string;
  out: Collected;
  read: Read;
}

/**
 * Counts a chunk from its columns entry; false when its columns cannot
 * answer (its lines must).
 */
async function readColumnsPart(
  kv: Deno.Kv,
  projectId: string,
  entry: Deno.KvEntry<unknown>,
  context: BatchContext,
): Promise<boolean> {
  const { options, out } = context;
  const lastId = logUnitId(entry.key);
  const wanted = new Set([
    ...options.paths,
    ...(options.filter.filter.fields ?? []).map((t) => t.path),
  ]);
  const columns = await readColumns(
    kv,
    projectId,
    lastId,
    entry.value,
    wanted,
  );
  const mask = columnsMask(columns, options);
  if (!mask) return false;
  context.read.set(lastId, entry.versionstamp);
  out.parts.push({ columns, mask });
  out.stats.chunksRead++;
  out.stats.entriesScanned += columns.count;
  return true;
}

/** Reads chunks by their lines; true when one was gone. */
async function readLines(
  kv: Deno.Kv,
  projectId: string,
  lines: ChunkSummary[],
  context: BatchContext,
): Promise<boolean> {
  const { out, read } = context;
  const values = await getManyChunked(
    kv,
    lines.map((s) => logChunkKey(projectId, s.lastId)),
  );
  for (const [i, entry] of values.entries()) {
    if (entry.versionstamp === null) return true;
    const { lastId } = lines[i]!;
    read.set(lastId, entry.versionstamp);
    const text = await readChunkText(kv, projectId, lastId, entry.value);
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
  const roots = rootsNeeded(context.options.filter.filter, out.paths);
  for (const line of text.split("\n")) {
    out.stats.entriesScanned++;
    const id = lineId(line);
    if (id < lo || id >= hi) continue;
    if (levelOk && !levelOk(lineLevel(line))) continue;
    const record: LogRecord = roots && line.length > WIDE_LINE_CHARS
      ? decodeLineMembers(line, roots)
      : decodeRecordLine(line);
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
    const ok = field.values.map((value) => termHolds(term, fieldText(value)));
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
 * entries received from `collected.searchedTo` on (all of them when unset).
 */
export function countCollected(
  collected: Collected,
  by: GroupBy[],
  add: (cells: Cell[], n: number) => void,
): void {
  const from = collected.searchedTo ?? -Infinity;
  if (by.length === 1) {
    // One grouping: summed per value here, handed on once per value.
    const sums = new Map<Cell, number>();
    countParts(collected, by, from, (cells, n) => {
      const cell = cells[0]!;
      sums.set(cell, (sums.get(cell) ?? 0) + n);
    });
    for (const [cell, n] of sums) add([cell], n);
    return;
  }
  countParts(collected, by, from, add);
}

/** {@linkcode countCollected} of every part. */
function countParts(
  collected: Collected,
  by: GroupBy[],
  from: number,
  add: (cells: Cell[], n: number) => void,
): void {
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
  const size = dims.reduce((n, d) => n * d.size, 1);
  // Per key: an array when the keys are few, else a map.
  const dense = size <= 65_536 ? new Uint32Array(size) : null;
  const counts = new Map<number, number>();
  for (let i = 0; i < columns.count; i++) {
    if (!mask[i] || base + columns.minutes[i]! * MINUTE_MS < from) continue;
    let key = 0;
    for (const d of dims) key = key * d.size + d.of(i);
    if (dense) dense[key]!++;
    else counts.set(key, (counts.get(key) ?? 0) + 1);
  }
  if (dense) dense.forEach((n, key) => n > 0 && counts.set(key, n));
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

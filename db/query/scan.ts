/**
 * The reading engine: a project's entries in an id range, in time order
 * (newest or oldest first), filtered, reading only what may match.
 *
 * Entries live in chunks, each a sorted run known by a summary keyed by its
 * last id and spanning at most `CHUNK_SPAN_MS`. Chunks overlap in time
 * (batches of several processes, a retried batch beside merged chunks), so
 * the engine merges them: it lists summaries lazily in scan order, keeps a
 * bound — no entry of a chunk still unlisted comes before it — and hands
 * out the first entry of the open runs only when it comes before the bound
 * and before every chunk listed but not yet read.
 * A chunk is read only when its turn comes and its summary (levels, id
 * span) and Bloom filters say it may hold a match, and then only its blocks
 * whose Bloom filter says so are inflated; lines are checked as text
 * (ids, levels, the terms' JSON text) and parsed only when they may match.
 * See docs/query.md#reading.
 *
 * @module
 */
import type { LogRecord } from "../../domain/entry.ts";
import { idTime, timeBound } from "../../domain/ids.ts";
import {
  logBloomsPrefix,
  logChunkKey,
  logSummariesPrefix,
  logUnitId,
} from "../keys.ts";
import { decodeRecordLine } from "../lines.ts";
import { type Run, selectLines } from "./select.ts";
import { GET_MANY_MAX_KEYS } from "../kv.ts";
import { bloomHas } from "./bloom.ts";
import {
  CHUNK_SPAN_MS,
  type ChunkSummary,
  decodeChunkIndex,
  decodeSummary,
  readChunkText,
} from "./chunk.ts";
import type { CompiledFilter } from "./filter.ts";
import { Heap } from "./heap.ts";

/** Above every id. */
export const MAX_ID = "\uffff";

/** Which end a scan starts from. */
export type Order = "newest" | "oldest";

/** Options of {@linkcode scan}. */
export interface ScanOptions {
  order: Order;
  /** Smallest id included. @default {""} (from the first entry) */
  lo?: string;
  /** Ids below this one only. @default {MAX_ID} */
  hi?: string;
  filter: CompiledFilter;
  /** Records wanted; one more is looked for, to tell whether more exist. */
  limit: number;
  /**
   * Work one call may do before it stops with what it found and where it
   * stopped ({@linkcode ScanResult.resume}); at least one chunk is read.
   * @default no bound
   */
  budget?: ScanBudget;
}

/** Bounds on the work of one scan. */
export interface ScanBudget {
  /** Chunks read at most. */
  chunks?: number;
  /** Milliseconds of `clock` at most. */
  ms?: number;
  /** @default {performance.now} */
  clock?: () => number;
}

/** What a scan read and skipped. */
export interface ScanStats {
  /** Chunks read. */
  pagesRead: number;
  /** Chunks not read because their summary showed they hold no match. */
  pagesSkipped: number;
  /** Entries in the pages and chunks read. */
  entriesScanned: number;
}

/** The result of {@linkcode scan}. */
export interface ScanResult {
  records: LogRecord[];
  /** Whether a further match exists beyond `limit`. */
  more: boolean;
  stats: ScanStats;
  /**
   * Set when the budget ran out first: every entry before this id in scan
   * order was examined (`records` are all the matches among them); a scan
   * continues from it, this id included.
   */
  resume?: string;
}

/** A chunk listed and not yet read. */
interface PendingChunk {
  summary: ChunkSummary;
  /** The blocks that may hold a match; undefined: all of them. */
  blocks: number[] | undefined;
  value?: unknown;
  versionstamp?: string | null;
  fetched: boolean;
}

/** Times a scan is done again when a merge moved what it read. */
const MAX_ATTEMPTS = 5;

/**
 * Reads a project's entries in [lo, hi) in time order, filtered, up to
 * `limit` (and whether more exist), exactly even while merges move entries:
 * a merge writes its chunk under the newest source's key and deletes the
 * other sources, so a scan can only miss entries when a chunk it listed is
 * gone when its value is read, or when a chunk value it read was replaced
 * before the scan ended. It checks both (the versionstamps of what it read,
 * at the end) and is done again then, at most 5 times; entries a reader
 * meets twice are handed out once.
 *
 * @example
 * ```ts
 * const { records } = await scan(kv, projectId, {
 *   order: "newest", filter: compileFilter({}), limit: 100,
 * });
 * ```
 */
export async function scan(
  kv: Deno.Kv,
  projectId: string,
  options: ScanOptions,
): Promise<ScanResult> {
  for (let attempt = 1;; attempt++) {
    const { result, read, moved } = await scanOnce(kv, projectId, options);
    if (attempt >= MAX_ATTEMPTS) return result;
    if (moved) continue;
    const now = await getManyVersions(kv, read.map((r) => r.key));
    if (now.every((v, i) => v === read[i]!.versionstamp)) return result;
  }
}

/** The versionstamps of `keys` now. */
async function getManyVersions(
  kv: Deno.Kv,
  keys: Deno.KvKey[],
): Promise<(string | null)[]> {
  const out: (string | null)[] = [];
  for (let i = 0; i < keys.length; i += GET_MANY_MAX_KEYS) {
    const entries = await kv.getMany(keys.slice(i, i + GET_MANY_MAX_KEYS));
    out.push(...entries.map((e) => e.versionstamp));
  }
  return out;
}

/**
 * One attempt of {@linkcode scan}: its result, the chunk values it read
 * with their versionstamps, and whether a chunk it listed was gone.
 */
async function scanOnce(
  kv: Deno.Kv,
  projectId: string,
  options: ScanOptions,
): Promise<{
  result: ScanResult;
  read: { key: Deno.KvKey; versionstamp: string }[];
  moved: boolean;
}> {
  const read: { key: Deno.KvKey; versionstamp: string }[] = [];
  let moved = false;
  const result = await scanBody(kv, projectId, options, {
    onRead: (key, versionstamp) => read.push({ key, versionstamp }),
    onGone: () => {
      moved = true;
    },
  });
  return { result, read, moved };
}

async function scanBody(
  kv: Deno.Kv,
  projectId: string,
  options: ScanOptions,
  seen: {
    onRead(key: Deno.KvKey, versionstamp: string): void;
    onGone(): void;
  },
): Promise<ScanResult> {
  const { filter, limit } = options;
  const desc = options.order === "newest";
  let lo = options.lo ?? "";
  let hi = options.hi ?? MAX_ID;
  if (filter.id !== undefined) {
    if (filter.id > lo) lo = filter.id;
    if (filter.id + "\0" < hi) hi = filter.id + "\0";
  }
  const stats: ScanStats = { pagesRead: 0, pagesSkipped: 0, entriesScanned: 0 };
  if (lo >= hi) return { records: [], more: false, stats };
  /** Whether `a` comes before `b` in scan order. */
  const first = (a: string, b: string) => desc ? a > b : a < b;

  const useBloom = filter.probes.length > 0;
  const summaryPrefix = useBloom
    ? logBloomsPrefix(projectId)
    : logSummariesPrefix(projectId);
  const summaries = kv.list({
    start: lo === "" ? summaryPrefix : [...summaryPrefix, lo],
    end: hi === MAX_ID
      ? [...summaryPrefix, MAX_ID]
      : [...summaryPrefix, timeBound(idTime(hi) + CHUNK_SPAN_MS + 1)],
  }, { reverse: desc, batchSize: useBloom ? 100 : 500 });

  // No entry of a chunk still unlisted comes before this; null once the
  // listing is done.
  let chunkBound: string | null = desc ? hi : lo;
  // Chunks listed, not read: newest first by last id (their listing order),
  // oldest first by first id.
  const pending: PendingChunk[] = [];
  const pendingBound = (chunk: PendingChunk) =>
    desc ? chunk.summary.lastId : chunk.summary.firstId;
  let fetchSize = 1;
  const runs = new Heap<Run>((a, b) => first(a.ids[a.pos]!, b.ids[b.pos]!));
  const records: LogRecord[] = [];
  let last = "";

  const nextSummary = async () => {
    const next = await summaries.next();
    if (next.done) {
      chunkBound = null;
      return;
    }
    const lastId = logUnitId(next.value.key);
    chunkBound = desc ? lastId : timeBound(idTime(lastId) - CHUNK_SPAN_MS);
    let summary: ChunkSummary;
    // Blocks whose Bloom filter holds every probe; undefined: all blocks.
    let blocks: number[] | undefined;
    if (useBloom) {
      const index = decodeChunkIndex(next.value.value, lastId);
      summary = index;
      blocks = [];
      index.blooms.forEach((bloom, i) => {
        if (filter.probes.every((probe) => bloomHas(bloom, probe))) {
          blocks!.push(i);
        }
      });
      if (blocks.length === index.blooms.length) blocks = undefined;
    } else summary = decodeSummary(next.value.value, lastId);
    if (summary.firstId >= hi || summary.lastId < lo) return;
    if (!filter.summaryMayMatch(summary) || blocks?.length === 0) {
      stats.pagesSkipped++;
      return;
    }
    const chunk: PendingChunk = { summary, fetched: false, blocks };
    if (desc) pending.push(chunk);
    else {
      let at = pending.length;
      while (at > 0 && summary.firstId < pending[at - 1]!.summary.firstId) at--;
      pending.splice(at, 0, chunk);
    }
  };

  const readChunk = async () => {
    const chunk = pending.shift()!;
    if (!chunk.fetched) {
      // Fetch the following chunks too (they are likely next), more each time.
      const batch = [chunk, ...pending.filter((c) => !c.fetched)]
        .slice(0, fetchSize);
      fetchSize = Math.min(GET_MANY_MAX_KEYS, fetchSize * 2);
      const values = await kv.getMany(
        batch.map((c) => logChunkKey(projectId, c.summary.lastId)),
      );
      batch.forEach((c, i) => {
        c.fetched = true;
        c.value = values[i]!.value;
        c.versionstamp = values[i]!.versionstamp;
      });
    }
    // Absent: expired, or merged into a chunk since it was listed.
    if (chunk.value === null) {
      seen.onGone();
      return;
    }
    seen.onRead(
      logChunkKey(projectId, chunk.summary.lastId),
      chunk.versionstamp!,
    );
    const text = await readChunkText(
      kv,
      projectId,
      chunk.summary.lastId,
      chunk.value,
      chunk.blocks,
    );
    stats.pagesRead++;
    const run = selectLines(text, filter, lo, hi, desc, stats);
    if (run) runs.push(run);
  };

  const clock = options.budget?.clock ?? (() => performance.now());
  const deadline = options.budget?.ms === undefined
    ? Infinity
    : clock() + options.budget.ms;
  const spent = () =>
    stats.pagesRead > 0 &&
    (stats.pagesRead >= (options.budget?.chunks ?? Infinity) ||
      clock() >= deadline);
  while (records.length <= limit) {
    // The listing or pending chunk whose bound comes first blocks the rest.
    let bound: string | null = null;
    let step: (() => Promise<void>) | null = null;
    const consider = (b: string | null, advance: () => Promise<void>) => {
      if (b !== null && (bound === null || first(b, bound))) {
        bound = b;
        step = advance;
      }
    };
    consider(chunkBound, nextSummary);
    if (pending.length > 0) consider(pendingBound(pending[0]!), readChunk);
    const run = runs.peek();
    if (run && (bound === null || first(run.ids[run.pos]!, bound))) {
      const id = run.ids[run.pos]!;
      const line = run.lines[run.pos]!;
      if (++run.pos >= run.ids.length) runs.pop();
      else runs.fix();
      // The same entry in two runs (a chunk read before and after a merge):
      // handed out once, since entries are handed out in scan order.
      if (last !== "" && !first(last, id)) continue;
      last = id;
      const record = decodeRecordLine(line);
      if (filter.test(record)) records.push(record);
      continue;
    }
    if (step === null) break;
    if (step === readChunk && spent()) {
      return { records, more: true, stats, resume: bound! };
    }
    await (step as () => Promise<void>)();
  }
  return {
    records: records.slice(0, limit),
    more: records.length > limit,
    stats,
  };
}

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
 * See docs/query.md#what-each-query-reads.
 *
 * @module
 */
import { turnTaker } from "./turns.ts";
import type { LogRecord } from "../../domain/entry.ts";
import { logSummaryKey } from "../keys.ts";
import { decodeRecordLine } from "../storage/lines.ts";
import { type Run, selectLines } from "./select.ts";
import { getManyChunked } from "../kv.ts";
import { readChunkText } from "../storage/chunk.ts";
import type { CompiledFilter } from "./filter.ts";
import { Heap } from "./heap.ts";
import { InexactReadError, MAX_READ_ATTEMPTS } from "./consistent.ts";
import { ChunkListing, type ListedChunk, MAX_ID } from "./listing.ts";
import { AttemptMemory } from "./attempts.ts";

export { MAX_ID };

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
  /**
   * Streams the matches instead: called as each attempt starts (a scan is
   * done again when a merge moved what it read), it returns the function
   * each match of that attempt goes to; `records` stay empty (give a
   * `limit` of `Infinity`). Aggregations count this way without holding
   * entries.
   */
  visit?: () => (record: LogRecord) => void;
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
  chunksRead: number;
  /** Chunks not read because their summary showed they hold no match. */
  chunksSkipped: number;
  /** Entries in the chunks read. */
  entriesScanned: number;
}

/** The result of {@linkcode scan}. */
export interface ScanResult {
  /** At most `limit` matches, in scan order. */
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

/**
 * Reads a project's entries in [lo, hi) in time order, filtered, up to
 * `limit` (and whether more exist), exactly even while merges move entries:
 * a merge writes its chunk under the newest source's key and deletes the
 * other sources, so a scan can only miss entries when a chunk it listed is
 * gone when its value is read, or when a chunk value it read was replaced
 * before the scan ended. It checks both (the versionstamps of what it read,
 * at the end, through the chunks' summaries) and is done again then, at
 * most `MAX_READ_ATTEMPTS` times in all, after which it throws
 * {@linkcode InexactReadError} rather than answer what it saw; entries a
 * reader meets twice are handed out once. An attempt after the first reads
 * again only the chunks that moved (db/query/attempts.ts).
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
  // What an attempt listed and read: a later attempt that lists a chunk
  // unchanged takes its verdict and selected lines from here, so it reads
  // again only what moved (the newest chunks, which merges rewrite most).
  const memory = new AttemptMemory();
  for (let attempt = 1; attempt <= MAX_READ_ATTEMPTS; attempt++) {
    memory.beginAttempt();
    const { result, read, moved } = await scanOnce(
      kv,
      projectId,
      options,
      memory,
    );
    if (moved) continue;
    const now = await getManyChunked(kv, read.map((r) => r.key));
    if (now.every((e, i) => e.versionstamp === read[i]!.versionstamp)) {
      return result;
    }
  }
  throw new InexactReadError();
}

/**
 * One attempt of {@linkcode scan}: its result, the chunk values it read
 * with their versionstamps, and whether a chunk it listed was gone.
 */
async function scanOnce(
  kv: Deno.Kv,
  projectId: string,
  options: ScanOptions,
  memory: AttemptMemory,
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
  }, memory);
  return { result, read, moved };
}

/** The id range [lo, hi) a scan reads: the options' range, narrowed to one id. */
function scanRange(options: ScanOptions): { lo: string; hi: string } {
  let lo = options.lo ?? "";
  let hi = options.hi ?? MAX_ID;
  const id = options.filter.id;
  if (id !== undefined) {
    if (id > lo) lo = id;
    if (id + "\0" < hi) hi = id + "\0";
  }
  return { lo, hi };
}

/**
 * Lines a scan examines before its time is checked within a chunk: each
 * call goes on by at least these.
 */
const MIN_LINES = 16;

/**
 * Whether a scan has spent its budget (it always reads one chunk); checked
 * before each chunk is read, and its time before each line past
 * {@linkcode MIN_LINES}.
 */
function budgetCheck(
  budget: ScanBudget | undefined,
  stats: ScanStats,
): () => boolean {
  const clock = budget?.clock ?? (() => performance.now());
  const deadline = budget?.ms === undefined ? Infinity : clock() + budget.ms;
  return () =>
    stats.chunksRead > 0 &&
    (stats.chunksRead >= (budget?.chunks ?? Infinity) || clock() >= deadline);
}

/**
 * Called before each line a scan examines: whether the budget's time ran
 * out, past {@linkcode MIN_LINES} (so that every call goes on), since one
 * chunk of large entries under a costly filter would otherwise run past it
 * by seconds; the event loop is given a turn when due.
 */
function lineGate(
  budget: ScanBudget | undefined,
  stats: ScanStats,
): () => Promise<boolean> {
  const late = budgetCheck({ ...budget, chunks: Infinity }, stats);
  const turn = turnTaker();
  let examined = 0;
  return async () => {
    if (++examined > MIN_LINES && late()) return true;
    await turn();
    return false;
  };
}

/** What {@linkcode readRun} needs of the scan. */
interface RunContext {
  filter: CompiledFilter;
  range: { lo: string; hi: string };
  desc: boolean;
  stats: ScanStats;
  seen: {
    onRead(key: Deno.KvKey, versionstamp: string): void;
    onGone(): void;
  };
  memory: AttemptMemory;
}

/**
 * The lines of a fetched chunk that may match, as a sorted run; undefined
 * when none may, or when the chunk was gone (expired, or merged into
 * another since it was listed), which `seen` is told.
 */
async function readRun(
  kv: Deno.Kv,
  projectId: string,
  chunk: ListedChunk,
  scan: RunContext,
): Promise<Run | undefined> {
  const { lastId } = chunk.summary;
  if (chunk.value === null) {
    scan.seen.onGone();
    return undefined;
  }
  // The summary is written and deleted in the commit that writes or deletes
  // the chunk's value (db/storage/write.ts), so it carries the value's
  // versionstamp: the check at the end reads it, a few hundred bytes,
  // instead of the value again.
  scan.seen.onRead(logSummaryKey(projectId, lastId), chunk.versionstamp!);
  scan.stats.chunksRead++;
  let selected = chunk.selected;
  if (selected === undefined) {
    const text = await readChunkText(
      kv,
      projectId,
      lastId,
      chunk.value,
      chunk.blocks,
    );
    const { lo, hi } = scan.range;
    const counted = { entriesScanned: 0 };
    const run = selectLines(text, scan.filter, lo, hi, scan.desc, counted);
    selected = {
      versionstamp: chunk.versionstamp!,
      ids: run?.ids ?? [],
      lines: run?.lines ?? [],
      scanned: counted.entriesScanned,
    };
    scan.memory.keepSelected(lastId, selected);
  }
  scan.stats.entriesScanned += selected.scanned;
  // Runs share the lines kept: a run only moves its position.
  const { ids, lines } = selected;
  return ids.length === 0 ? undefined : { ids, lines, pos: 0 };
}

async function scanBody(
  kv: Deno.Kv,
  projectId: string,
  options: ScanOptions,
  seen: RunContext["seen"],
  memory: AttemptMemory,
): Promise<ScanResult> {
  const { filter, limit } = options;
  const visit = options.visit?.() ?? ((r: LogRecord) => void records.push(r));
  const desc = options.order === "newest";
  const range = scanRange(options);
  const { lo, hi } = range;
  const stats: ScanStats = {
    chunksRead: 0,
    chunksSkipped: 0,
    entriesScanned: 0,
  };
  if (lo >= hi) return { records: [], more: false, stats };
  /** Whether `a` comes before `b` in scan order. */
  const first = (a: string, b: string) => desc ? a > b : a < b;
  const listed = { filter, range, desc, stats, seen, memory };
  const listing = new ChunkListing(kv, projectId, listed);
  const runs = new Heap<Run>((a, b) => first(a.ids[a.pos]!, b.ids[b.pos]!));
  const records: LogRecord[] = [];
  let last = "";
  const listNext = () => listing.listNext();
  const readChunk = async () => {
    const chunk = await listing.takeNext();
    const run = await readRun(kv, projectId, chunk, {
      filter,
      range,
      desc,
      stats,
      seen,
      memory,
    });
    if (run) runs.push(run);
  };

  const spent = budgetCheck(options.budget, stats);
  const stopsAt = lineGate(options.budget, stats);
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
    consider(listing.bound, listNext);
    consider(listing.nextBound, readChunk);
    const run = runs.peek();
    if (run && (bound === null || first(run.ids[run.pos]!, bound))) {
      const id = run.ids[run.pos]!;
      if (await stopsAt()) return { records, more: true, stats, resume: id };
      const line = run.lines[run.pos]!;
      if (++run.pos >= run.ids.length) runs.pop();
      else runs.fix();
      // The same entry in two runs (a chunk read before and after a merge):
      // handed out once, since entries are handed out in scan order.
      if (last !== "" && !first(last, id)) continue;
      last = id;
      const record = decodeRecordLine(line);
      if (filter.test(record)) visit(record);
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

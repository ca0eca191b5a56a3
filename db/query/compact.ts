/**
 * The compactor: merges a project's settled pages into compressed chunks
 * with summaries and Bloom filters (db/query/chunk.ts), so that stored
 * entries take a fraction of their JSON and queries skip what cannot match.
 *
 * Pages settle `settleMs` after their first entry was received (later pages
 * of the same time are rare: a batch retried or replayed). Settled pages
 * are taken in key order and cut into chunks that compress to about
 * `CHUNK_TARGET_BYTES`, span at most `CHUNK_SPAN_MS` and cost at most
 * {@linkcode PAGE_MUTATIONS} deletions; the last, partial run of pages
 * waits until nothing received later could still join it. A page arriving
 * after its time was compacted becomes a chunk of its own later: chunks may
 * overlap in time and readers merge them.
 *
 * Each chunk is one atomic commit: delete the pages, write the chunk, its
 * summary and Bloom filter, bump `log_compactions/<projectId>` — checked
 * against that counter and the project record as read at the start. Two
 * processes compacting the same project cannot both commit the same pages,
 * a project deleted meanwhile is not written to again, and readers see the
 * bump and read again (db/query/query.ts). Pages written before pages were
 * bytes have no counters: their entries are counted when they are compacted.
 *
 * @module
 */
import { idTime, timeBound } from "../../domain/ids.ts";
import {
  batchPartKey,
  logBloomKey,
  logChunkKey,
  logChunkPartKey,
  logCompactionKey,
  logKey,
  logPartKey,
  logsPrefix,
  logSummaryKey,
  logUnitId,
  projectKey,
} from "../keys.ts";
import { addLogCounts, deleteExpiredCounts } from "../log_counts.ts";
import {
  type BatchRef,
  decodeRecordLine,
  isLegacyPage,
  lineId,
  pageBatchRef,
  pagePartCount,
  readPageText,
  type StoredPage,
} from "../logs.ts";
import { decodeJson } from "../kv.ts";
import { listProjects, type Project } from "../projects.ts";
import { DAY_MS } from "../../domain/entry.ts";
import {
  buildChunkPausing,
  CHUNK_MAX_BYTES,
  CHUNK_SPAN_MS,
  CHUNK_TARGET_BYTES,
} from "./chunk.ts";

/** Lets the event loop run: timers, arriving requests, finished commits. */
const nextTurn = () => new Promise<void>((resolve) => setTimeout(resolve, 0));

/** Deletions (pages and their parts, and counters of old pages) per chunk. */
export const PAGE_MUTATIONS = 900;
/** Default age after which a page is compacted. */
export const DEFAULT_SETTLE_MS = 30_000;
/** Pages one call lists at most per project. */
const MAX_PAGES_LISTED = 50_000;
/** JSON bytes a chunk is cut at, whatever the compression. */
const MAX_RAW_BYTES = 4_000_000;

/** Options of {@linkcode compactProject}. */
export interface CompactOptions {
  /** Clock reading, Unix ms. */
  now: number;
  /** Age after which pages are compacted. @default {30000} */
  settleMs?: number;
  /** Stop after this many chunks. @default {Infinity} */
  maxChunks?: number;
  /** Asked before each chunk: stop when it says so (the process got busy). */
  shouldStop?: () => boolean;
  /**
   * Awaited between two blocks of a chunk being built, so that arriving
   * requests are not held for the whole chunk. @default one turn of the
   * event loop (`setTimeout` 0)
   */
  pause?: () => Promise<void>;
}

/** What a compaction did. */
export interface CompactResult {
  chunks: number;
  pages: number;
  entries: number;
  /** Compressed bytes of the chunks written. */
  bytes: number;
}

/** A page being compacted. */
interface SourcePage {
  firstId: string;
  parts: number;
  /** The batch whose bytes a page by reference reads, deleted with it. */
  ref: BatchRef | null;
  lines: string[];
  /** Receipt times and levels of an old page's entries, to count them. */
  uncounted: { receivedAt: number; level: string }[];
}

/** Pages that will make one chunk. */
class Group {
  pages: SourcePage[] = [];
  bytes = 0;
  mutations = 0;
  low = "";
  high = "";
  #counters = new Set<string>();

  /** Mutations `page` would add. */
  cost(page: SourcePage): number {
    let n = page.parts + (page.ref?.parts ?? 0);
    for (const { receivedAt, level } of page.uncounted) {
      for (const size of [60_000, 3_600_000]) {
        const id = `${size}:${Math.floor(receivedAt / size)}:${level}`;
        if (!this.#counters.has(id)) n++;
      }
    }
    return n;
  }

  /** Whether `page` fits within the span, size and mutation limits. */
  fits(page: SourcePage, rawLimit: number): boolean {
    if (this.pages.length === 0) return true;
    const low = lineId(page.lines[0]!);
    const high = lineId(page.lines.at(-1)!);
    const span = idTime(high > this.high ? high : this.high) -
      idTime(low < this.low ? low : this.low);
    return span <= CHUNK_SPAN_MS && this.bytes < rawLimit &&
      this.mutations + this.cost(page) <= PAGE_MUTATIONS;
  }

  add(page: SourcePage): void {
    this.mutations += this.cost(page);
    for (const { receivedAt, level } of page.uncounted) {
      for (const size of [60_000, 3_600_000]) {
        this.#counters.add(
          `${size}:${Math.floor(receivedAt / size)}:${level}`,
        );
      }
    }
    const low = lineId(page.lines[0]!);
    const high = lineId(page.lines.at(-1)!);
    if (this.pages.length === 0 || low < this.low) this.low = low;
    if (this.pages.length === 0 || high > this.high) this.high = high;
    this.pages.push(page);
    for (const line of page.lines) this.bytes += line.length + 1;
  }
}

/** Thrown inside a round when another writer changed the project. */
class ConflictError extends Error {}

/**
 * Compacts one project's settled pages. Safe to run in several processes.
 *
 * @example
 * ```ts
 * const { chunks } = await compactProject(kv, projectId, { now: Date.now() });
 * ```
 */
export async function compactProject(
  kv: Deno.Kv,
  projectId: string,
  options: CompactOptions,
): Promise<CompactResult> {
  const result: CompactResult = { chunks: 0, pages: 0, entries: 0, bytes: 0 };
  const [projectEntry, marker] = await kv.getMany<[unknown, Deno.KvU64]>([
    projectKey(projectId),
    logCompactionKey(projectId),
  ]);
  const project = decodeJson<Project>(projectEntry!.value);
  if (project === null) return result;
  const { now } = options;
  const retentionMs = project.retentionDays * DAY_MS;
  await deleteExpiredCounts(kv, projectId, now - retentionMs);
  const horizon = now - (options.settleMs ?? DEFAULT_SETTLE_MS);
  let versionstamp = marker!.versionstamp;
  let ratio = 0.12;

  const commit = async (pages: SourcePage[]): Promise<void> => {
    const all = pages.flatMap((page) => page.lines);
    if (pages.length > 1) all.sort((a, b) => (lineId(a) < lineId(b) ? -1 : 1));
    // Block by block, letting requests through in between.
    const chunk = await buildChunkPausing(all, options.pause ?? nextTurn);
    if (chunk.compressedBytes > CHUNK_MAX_BYTES && pages.length > 1) {
      const half = Math.ceil(pages.length / 2);
      await commit(pages.slice(0, half));
      await commit(pages.slice(half));
      return;
    }
    const raw = all.reduce((n, line) => n + line.length + 1, -1);
    ratio = Math.max(0.02, chunk.compressedBytes / raw);
    const { firstId, lastId } = chunk.summary;
    const expireIn = Math.max(1000, idTime(firstId) + retentionMs - now);
    const op = kv.atomic()
      .check(projectEntry!)
      .check({ key: logCompactionKey(projectId), versionstamp });
    for (const page of pages) {
      op.delete(logKey(projectId, page.firstId));
      for (let n = 1; n < page.parts; n++) {
        op.delete(logPartKey(projectId, page.firstId, n));
      }
      for (let n = 0; n < (page.ref?.parts ?? 0); n++) {
        op.delete(batchPartKey(page.ref!.batchId, n));
      }
      addLogCounts(op, projectId, page.uncounted);
    }
    op.set(logChunkKey(projectId, lastId), chunk.head, { expireIn });
    chunk.rest.forEach((part, i) =>
      op.set(logChunkPartKey(projectId, lastId, i + 1), part, { expireIn })
    );
    op.set(logSummaryKey(projectId, lastId), chunk.summaryValue, { expireIn });
    op.set(logBloomKey(projectId, lastId), chunk.bloomValue, { expireIn });
    op.sum(logCompactionKey(projectId), 1n);
    const committed = await op.commit();
    if (!committed.ok) throw new ConflictError();
    versionstamp = committed.versionstamp;
    result.chunks++;
    result.pages += pages.length;
    result.entries += all.length;
    result.bytes += chunk.compressedBytes;
  };

  const maxChunks = options.maxChunks ?? Infinity;
  const done = () => result.chunks >= maxChunks || !!options.shouldStop?.();
  let group = new Group();
  let listed = 0;
  try {
    const iter = kv.list<StoredPage>({
      start: logsPrefix(projectId),
      end: logKey(projectId, timeBound(horizon)),
    }, { batchSize: 500, limit: MAX_PAGES_LISTED });
    for await (const entry of iter) {
      listed++;
      const firstId = logUnitId(entry.key);
      let text: string;
      try {
        text = await readPageText(kv, projectId, firstId, entry.value);
      } catch (error) {
        // Another process compacted the page meanwhile: its round won.
        const now = await kv.get(logCompactionKey(projectId));
        if (now.versionstamp !== versionstamp) throw new ConflictError();
        throw error;
      }
      const lines = text === "" ? [] : text.split("\n");
      if (lines.length === 0) continue;
      const page: SourcePage = {
        firstId,
        parts: pagePartCount(entry.value),
        ref: pageBatchRef(entry.value),
        lines,
        uncounted: isLegacyPage(entry.value)
          ? lines.map((line) => decodeRecordLine(line))
          : [],
      };
      const rawLimit = Math.min(MAX_RAW_BYTES, CHUNK_TARGET_BYTES / ratio);
      if (!group.fits(page, rawLimit)) {
        if (done()) return result;
        await commit(group.pages);
        group = new Group();
      }
      group.add(page);
    }
    // The last run waits while later pages could still join it.
    const canGrow = idTime(group.low) + CHUNK_SPAN_MS > horizon;
    if (
      group.pages.length > 0 && !canGrow && listed < MAX_PAGES_LISTED &&
      !done()
    ) {
      await commit(group.pages);
    }
  } catch (error) {
    if (!(error instanceof ConflictError)) throw error;
  }
  return result;
}

/**
 * Compacts every project (see {@linkcode compactProject}).
 *
 * @example
 * ```ts
 * await compactAll(kv, { now: Date.now() });
 * ```
 */
export async function compactAll(
  kv: Deno.Kv,
  options: CompactOptions,
): Promise<CompactResult> {
  const total: CompactResult = { chunks: 0, pages: 0, entries: 0, bytes: 0 };
  for (const project of await listProjects(kv)) {
    if (options.shouldStop?.()) break;
    const done = await compactProject(kv, project.id, options);
    total.chunks += done.chunks;
    total.pages += done.pages;
    total.entries += done.entries;
    total.bytes += done.bytes;
  }
  return total;
}

/** Options of {@linkcode startCompactor}. */
export interface CompactorOptions {
  kv: Deno.Kv;
  /** Clock. @default {Date.now} */
  now?: () => number;
  /** Period of the rounds. @default {10000} */
  intervalMs?: number;
  /** Whether the process is busy with entries: rounds wait meanwhile. */
  isBusy?: () => boolean;
  /** Told of a failed round. */
  onError?: (error: unknown) => void;
}

/**
 * Runs {@linkcode compactAll} every `intervalMs`, skipping rounds while the
 * process is busy and stopping a round when it gets busy.
 *
 * @example
 * ```ts
 * const compactor = startCompactor({ kv, isBusy: () => worker.busy });
 * await compactor.stop();
 * ```
 */
export function startCompactor(
  options: CompactorOptions,
): { stop(): Promise<void> } {
  const now = options.now ?? Date.now;
  let running: Promise<unknown> | null = null;
  let stopped = false;
  const busy = () => stopped || !!options.isBusy?.();
  const timer = setInterval(() => {
    if (running || busy()) return;
    running = compactAll(options.kv, { now: now(), shouldStop: busy })
      .catch((error) => options.onError?.(error))
      .finally(() => {
        running = null;
      });
  }, options.intervalMs ?? 10_000);
  return {
    async stop() {
      stopped = true;
      clearInterval(timer);
      await running;
    },
  };
}

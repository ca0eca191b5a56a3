/**
 * Stored entries: chunks, written once in their final form. The consumer
 * stores the entries a batch accepted for a project as one chunk — JSON lines
 * (db/storage/lines.ts) deflated in blocks, with a summary (db/storage/chunk.ts)
 * — in the same commit that accepts them, so an entry is compressed and
 * searchable from the moment it is stored; its Bloom filters, one per block,
 * and its columns are built when the merger rewrites it. The
 * merger (db/storage/merge.ts) later combines small chunks into larger ones;
 * it changes how entries are grouped, never what a reader finds.
 *
 * This module owns the keys a chunk occupies and the writes of a chunk, for
 * both writers, and the list of everything stored for a project's entries,
 * which a project's deletion removes. docs/storage.md describes the whole
 * layout.
 *
 * @module
 */
import type { AtomicWriter } from "../atomic.ts";
import type { LogRecord } from "../../domain/entry.ts";
import { idTime } from "../../domain/ids.ts";
import {
  logBloomKey,
  logBloomsPrefix,
  logChunkKey,
  logChunkSliceKey,
  logChunkSlicesPrefix,
  logChunksPrefix,
  logCoarseBitsPrefix,
  logCoarseGroupsPrefix,
  logCoarseHashesPrefix,
  logCoarsePendingPrefix,
  logCoarseStateKey,
  logColumnsKey,
  logColumnSliceKey,
  logColumnSlicesPrefix,
  logColumnsPrefix,
  logCountsPrefix,
  logMergesKey,
  logSummariesPrefix,
  logSummaryKey,
  logUngroupedKey,
  logUngroupedPrefix,
} from "../keys.ts";
import { encodeRecordLine } from "./lines.ts";
import { addLogCounts } from "../log_counts.ts";
import {
  buildChunk,
  type BuiltChunk,
  CHUNK_SPAN_MS,
  type ChunkSummary,
} from "./chunk.ts";

/** Prefixes of everything stored for a project's entries. */
export function storedLogPrefixes(projectId: string): Deno.KvKey[] {
  return [
    logSummariesPrefix(projectId),
    logBloomsPrefix(projectId),
    logChunksPrefix(projectId),
    logChunkSlicesPrefix(projectId),
    logColumnsPrefix(projectId),
    logColumnSlicesPrefix(projectId),
    logCountsPrefix(projectId),
    logCoarseGroupsPrefix(projectId),
    logCoarseBitsPrefix(projectId),
    logCoarsePendingPrefix(projectId),
    logCoarseHashesPrefix(projectId),
    logUngroupedPrefix(projectId),
  ];
}

/** Single keys stored for a project's entries (beside the prefixes). */
export function storedLogKeys(projectId: string): Deno.KvKey[] {
  return [logMergesKey(projectId), logCoarseStateKey(projectId)];
}

/**
 * Time to live of a chunk whose first entry was received at `firstId`'s
 * time: the retention from that entry, at least a second.
 */
export function chunkExpireIn(
  firstId: string,
  retentionMs: number,
  now: number,
): number {
  return Math.max(1000, idTime(firstId) + retentionMs - now);
}

/** The `log_ungrouped/` value: the key alone says it. */
const UNGROUPED = new Uint8Array([1]);

/**
 * Adds to `op` the mark of a chunk in no coarse group, expiring with the
 * chunk (`expireIn`); returns the mutations added (1).
 */
export function setUngrouped(
  op: AtomicWriter,
  projectId: string,
  lastId: string,
  expireIn: number,
): number {
  op.set(logUngroupedKey(projectId, lastId), UNGROUPED, { expireIn });
  return 1;
}

/**
 * Adds to `op` the mutations that replace the chunks of `sources` by
 * `chunk`: each source deleted, but for the keys of one named by the same
 * last id, which `chunk` is written over; `chunk` set to expire after
 * `retentionMs` from its first entry. With `ungrouped: false` (a chunk
 * rewritten with entries removed, never added) a chunk a coarse group
 * names stays named by it.
 *
 * @example
 * ```ts
 * replaceChunks(op, projectId, group, buildChunk(lines), { retentionMs, now });
 * ```
 */
export function replaceChunks(
  op: AtomicWriter,
  projectId: string,
  sources: readonly ChunkSummary[],
  chunk: BuiltChunk,
  options: { retentionMs: number; now: number; ungrouped?: boolean },
): void {
  const { summary } = chunk;
  for (const s of sources) {
    deleteChunk(
      op,
      projectId,
      s,
      s.lastId === summary.lastId
        ? { slices: summary.slices, columns: summary.columns ?? 0 }
        : undefined,
    );
  }
  setChunk(op, projectId, chunk, {
    expireIn: chunkExpireIn(summary.firstId, options.retentionMs, options.now),
    ...(options.ungrouped === false ? { ungrouped: false } : {}),
  });
}

/**
 * Adds the mutations that write `chunk` (its value and further slices, its
 * summary, its Bloom filter, its columns and, unless `ungrouped` is false,
 * its `log_ungrouped/` key: a chunk written is in no coarse group until a
 * group names it again, db/storage/coarse_groups.ts) to `op`; returns how
 * many.
 *
 * @example
 * ```ts
 * setChunk(op, projectId, buildChunk(lines), { expireIn });
 * ```
 */
export function setChunk(
  op: AtomicWriter,
  projectId: string,
  chunk: BuiltChunk,
  options: { expireIn: number; ungrouped?: boolean },
): number {
  const { lastId } = chunk.summary;
  const { expireIn } = options;
  let n = 0;
  if (options.ungrouped !== false) {
    n += setUngrouped(op, projectId, lastId, expireIn);
  }
  op.set(logChunkKey(projectId, lastId), chunk.head, { expireIn });
  chunk.rest.forEach((slice, i) =>
    op.set(logChunkSliceKey(projectId, lastId, i + 1), slice, { expireIn })
  );
  op.set(logSummaryKey(projectId, lastId), chunk.summaryValue, { expireIn });
  op.set(logBloomKey(projectId, lastId), chunk.bloomValue, { expireIn });
  const { columns } = chunk;
  if (!columns) return n + 3 + chunk.rest.length;
  op.set(logColumnsKey(projectId, lastId), columns.head, { expireIn });
  columns.rest.forEach((slice, i) =>
    op.set(logColumnSliceKey(projectId, lastId, i + 1), slice, { expireIn })
  );
  return n + 4 + chunk.rest.length + columns.rest.length;
}

/**
 * The keys a stored chunk occupies, which {@linkcode deleteChunk} deletes
 * (without `keep`): value, summary, Bloom filter and ungrouped mark, the
 * further slices, and its columns' values.
 */
export function chunkKeyCount(
  summary: Pick<ChunkSummary, "slices" | "columns">,
): number {
  return 4 + summary.slices - 1 + (summary.columns ?? 0);
}

/**
 * Adds the mutations that delete the chunk of `summary` (value, slices,
 * summary, Bloom filter, columns and their slices, its `log_ungrouped/`
 * key) to `op`, leaving the keys
 * a chunk written in the same operation under the same last id occupies
 * (`keep` slices of it and `keep.columns` values of its columns); returns
 * how many.
 */
export function deleteChunk(
  op: AtomicWriter,
  projectId: string,
  summary: Pick<ChunkSummary, "lastId" | "slices" | "columns">,
  keep?: { slices: number; columns: number },
): number {
  const { lastId } = summary;
  let n = 0;
  if (!keep) {
    op.delete(logChunkKey(projectId, lastId));
    op.delete(logSummaryKey(projectId, lastId));
    op.delete(logBloomKey(projectId, lastId));
    op.delete(logUngroupedKey(projectId, lastId));
    n += 4;
  }
  for (let slice = keep?.slices ?? 1; slice < summary.slices; slice++) {
    op.delete(logChunkSliceKey(projectId, lastId, slice));
    n++;
  }
  const columns = summary.columns ?? 0;
  if (columns > 0 && (keep?.columns ?? 0) === 0) {
    op.delete(logColumnsKey(projectId, lastId));
    n++;
  }
  for (let slice = keep?.columns || 1; slice < columns; slice++) {
    op.delete(logColumnSliceKey(projectId, lastId, slice));
    n++;
  }
  return n;
}

/** Options of {@linkcode storeLogs}. */
export interface StoreLogsOptions {
  /** Commit time, Unix milliseconds. */
  now: number;
  /** The project's retention. */
  retentionMs: number;
  /** A record's line, when known already. @default {encodeRecordLine} */
  lineOf?: (record: LogRecord) => string;
  /**
   * Build the chunks' columns and index their tokens in their Bloom
   * filters now. The consumer leaves both to the merger, which builds them
   * for the chunks it writes, so that the first write stays light (a query
   * reads a fresh chunk's lines); a store made at once (tests, benchmarks)
   * may ask for them.
   * @default false
   */
  columns?: boolean;
}

/**
 * Adds to `op` the mutations that store a project's records of one batch
 * (sorted by id): one chunk of tier 0 (one per `CHUNK_SPAN_MS` of receipt
 * time, for a batch whose entries were received that far apart) and the
 * per-minute and per-hour counters by level that histograms read. Returns
 * how many mutations it added: 4 values per chunk (and further slices of a
 * large one) and at most 2 counters per entry, so a batch of
 * `MAX_BATCH_ENTRIES` (200) stays far under KV's 1,000.
 *
 * @example
 * ```ts
 * storeLogs(op, project.id, records, { now, retentionMs: 30 * 86_400_000 });
 * ```
 */
export function storeLogs(
  op: AtomicWriter,
  projectId: string,
  records: LogRecord[],
  options: StoreLogsOptions,
): number {
  const lineOf = options.lineOf ?? encodeRecordLine;
  let mutations = addLogCounts(op, projectId, records);
  for (let start = 0; start < records.length;) {
    const first = idTime(records[start]!.id);
    let end = start + 1;
    while (
      end < records.length && idTime(records[end]!.id) - first < CHUNK_SPAN_MS
    ) end++;
    const run = records.slice(start, end);
    // Columns and tokens wait for the merger unless asked for: a query
    // reads a fresh chunk's lines instead.
    const chunk = buildChunk(run.map(lineOf), {
      records: run,
      fast: true,
      tokens: options.columns ?? false,
      columns: options.columns ?? false,
    });
    const expireIn = chunkExpireIn(
      run[0]!.id,
      options.retentionMs,
      options.now,
    );
    mutations += setChunk(op, projectId, chunk, { expireIn });
    start = end;
  }
  return mutations;
}

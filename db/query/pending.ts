/**
 * The chunks a scan has listed and not yet read: listing their summaries
 * (or Bloom indexes) in scan order, keeping those that may match in the
 * order they are read, and fetching their values ahead (db/query/scan.ts).
 *
 * @module
 */
import { idTime, timeBound } from "../../domain/ids.ts";
import {
  logBloomsPrefix,
  logChunkKey,
  logSummariesPrefix,
  logUnitId,
} from "../keys.ts";
import { bloomHas } from "./bloom.ts";
import {
  CHUNK_SPAN_MS,
  type ChunkSummary,
  decodeChunkIndex,
  decodeSummary,
} from "./chunk.ts";
import type { CompiledFilter } from "./filter.ts";

/** Above every id. */
export const MAX_ID = "\uffff";

/** A chunk listed and not yet read. */
export interface PendingChunk {
  summary: ChunkSummary;
  /** The blocks that may hold a match; undefined: all of them. */
  blocks: number[] | undefined;
  value?: unknown;
  versionstamp?: string | null;
  fetched: boolean;
}

/**
 * Lists the summaries (or, where the filter has probes, the Bloom indexes)
 * of the chunks that may hold entries in [lo, hi), in scan order.
 */
export function listSummaries(
  kv: Deno.Kv,
  projectId: string,
  range: { lo: string; hi: string },
  desc: boolean,
  useBloom: boolean,
): Deno.KvListIterator<unknown> {
  const { lo, hi } = range;
  const prefix = useBloom
    ? logBloomsPrefix(projectId)
    : logSummariesPrefix(projectId);
  return kv.list({
    start: lo === "" ? prefix : [...prefix, lo],
    end: hi === MAX_ID
      ? [...prefix, MAX_ID]
      : [...prefix, timeBound(idTime(hi) + CHUNK_SPAN_MS + 1)],
  }, { reverse: desc, batchSize: useBloom ? 100 : 500 });
}

/**
 * The chunk a listed summary names, with the blocks that may hold a match,
 * or undefined where the chunk is out of range or cannot match (counted as
 * skipped).
 */
export function listedChunk(
  entry: Deno.KvEntry<unknown>,
  filter: CompiledFilter,
  range: { lo: string; hi: string },
  stats: { pagesSkipped: number },
): PendingChunk | undefined {
  const lastId = logUnitId(entry.key);
  let summary: ChunkSummary;
  // Blocks whose Bloom filter holds every probe; undefined: all blocks.
  let blocks: number[] | undefined;
  if (filter.probes.length > 0) {
    const index = decodeChunkIndex(entry.value, lastId);
    summary = index;
    blocks = [];
    index.blooms.forEach((bloom, i) => {
      if (filter.probes.every((probe) => bloomHas(bloom, probe))) {
        blocks!.push(i);
      }
    });
    if (blocks.length === index.blooms.length) blocks = undefined;
  } else summary = decodeSummary(entry.value, lastId);
  if (summary.firstId >= range.hi || summary.lastId < range.lo) return;
  if (!filter.summaryMayMatch(summary) || blocks?.length === 0) {
    stats.pagesSkipped++;
    return;
  }
  return { summary, fetched: false, blocks };
}

/**
 * Adds a listed chunk to those not yet read, kept in the order they are
 * read: newest first by last id (their listing order), oldest first by
 * first id.
 */
export function addPending(
  pending: PendingChunk[],
  chunk: PendingChunk,
  desc: boolean,
): void {
  if (desc) {
    pending.push(chunk);
    return;
  }
  let at = pending.length;
  while (at > 0 && chunk.summary.firstId < pending[at - 1]!.summary.firstId) {
    at--;
  }
  pending.splice(at, 0, chunk);
}

/** Fetches the values of the chunks of `batch` with one read. */
export async function fetchChunks(
  kv: Deno.Kv,
  projectId: string,
  batch: PendingChunk[],
): Promise<void> {
  const values = await kv.getMany(
    batch.map((c) => logChunkKey(projectId, c.summary.lastId)),
  );
  batch.forEach((c, i) => {
    c.fetched = true;
    c.value = values[i]!.value;
    c.versionstamp = values[i]!.versionstamp;
  });
}

/**
 * Everything stored for a project's entries, as one list: the prefixes a
 * project's deletion removes and the count of entries it reports. Chunks,
 * summaries, Bloom filters, counters and the merge marker all belong to the
 * project and go with it.
 *
 * @module
 */
import {
  legacyPagePrefixes,
  logBloomsPrefix,
  logChunkPartsPrefix,
  logChunksPrefix,
  logCompactionKey,
  logCountsPrefix,
  logSummariesPrefix,
  logUnitId,
} from "../keys.ts";
import { type ChunkSummary, decodeSummary } from "./chunk.ts";
import { consistent } from "./consistent.ts";

/** Prefixes of everything stored for a project's entries. */
export function storedLogPrefixes(projectId: string): Deno.KvKey[] {
  return [
    logSummariesPrefix(projectId),
    logBloomsPrefix(projectId),
    logChunksPrefix(projectId),
    logChunkPartsPrefix(projectId),
    logCountsPrefix(projectId),
    ...legacyPagePrefixes(projectId),
  ];
}

/** Single keys stored for a project's entries (beside the prefixes). */
export function storedLogKeys(projectId: string): Deno.KvKey[] {
  return [logCompactionKey(projectId)];
}

/**
 * Every chunk summary of a project, oldest first, read as one consistent
 * listing (a merge committing meanwhile makes it read again).
 *
 * @example
 * ```ts
 * const summaries = await listSummaries(kv, projectId);
 * ```
 */
export function listSummaries(
  kv: Deno.Kv,
  projectId: string,
): Promise<ChunkSummary[]> {
  return consistent(kv, projectId, async () => {
    const out: ChunkSummary[] = [];
    const iter = kv.list({ prefix: logSummariesPrefix(projectId) }, {
      batchSize: 1000,
    });
    for await (const entry of iter) {
      out.push(decodeSummary(entry.value, logUnitId(entry.key)));
    }
    return out;
  });
}

/**
 * Counts a project's stored entries from chunk summaries, without reading
 * any entry.
 *
 * @example
 * ```ts
 * await countStoredEntries(kv, projectId); // 1_000_000
 * ```
 */
export async function countStoredEntries(
  kv: Deno.Kv,
  projectId: string,
): Promise<number> {
  let n = 0;
  for (const summary of await listSummaries(kv, projectId)) n += summary.count;
  return n;
}

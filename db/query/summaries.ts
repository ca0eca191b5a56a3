/**
 * A project's chunk summaries, read as one consistent listing, and the count
 * of its stored entries they give without reading any entry. What a
 * project's deletion removes is listed beside the writes (db/storage/write.ts).
 *
 * @module
 */
import { logSummariesPrefix, logUnitId } from "../keys.ts";
import { type ChunkSummary, decodeSummary } from "../storage/chunk.ts";
import { consistent } from "./consistent.ts";

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

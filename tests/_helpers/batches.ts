/**
 * A pending batch's entries read back from its slices, as the consumer
 * reads them (opened: batches are sealed, queue/batch.ts), for tests that
 * handle batches themselves.
 *
 * @module
 */
import type { QueuedEntry } from "../../domain/entry.ts";
import { type BatchHeader, readBatchSlices } from "../../queue/batch.ts";

/** The entries of batch `id`, whose header says how many slices it has. */
export async function batchEntries(
  kv: Deno.Kv,
  id: string,
  header: Pick<BatchHeader, "slices">,
): Promise<QueuedEntry[]> {
  return await readBatchSlices(kv, id, header.slices) as QueuedEntry[];
}

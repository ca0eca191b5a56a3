/**
 * A pending batch's entries read back from its slices, as the consumer
 * reads them (opened: batches are sealed, queue/batch.ts), for tests that
 * handle batches themselves; and every key that still names a batch, for
 * tests that delete one.
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

/**
 * Every key of the whole database with a part equal to `batchId`, as
 * `prefix/part/…` text: what is left of a batch.
 *
 * @example
 * ```ts
 * assert.deepEqual(await keysNaming(kv, batchId), []);
 * ```
 */
export async function keysNaming(
  kv: Deno.Kv,
  batchId: string,
): Promise<string[]> {
  const found: string[] = [];
  for await (const entry of kv.list({ prefix: [] })) {
    if (entry.key.includes(batchId)) found.push(entry.key.join("/"));
  }
  return found;
}

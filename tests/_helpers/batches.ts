/**
 * A pending batch's entries read back from its slices, as the consumer
 * reads them (opened: batches are sealed, queue/batch.ts), for tests that
 * handle batches themselves; the pending batches as the producer hands
 * them over; and every key that still names a batch, for tests that delete
 * one.
 *
 * @module
 */
import { pendingBatchKey } from "../../db/keys.ts";
import type { QueuedEntry } from "../../domain/entry.ts";
import {
  type BatchHeader,
  decodeBatchHeader,
  type HandedBatch,
  readBatchSlices,
} from "../../queue/batch.ts";
import { type Harness, pendingBatchIds } from "./harness.ts";

/** The entries of batch `id`, whose header says how many slices it has. */
export async function batchEntries(
  kv: Deno.Kv,
  id: string,
  header: Pick<BatchHeader, "slices">,
): Promise<QueuedEntry[]> {
  return await readBatchSlices(kv, id, header.slices) as QueuedEntry[];
}

/**
 * The pending batches as the producer hands them over (after a flush),
 * oldest first.
 *
 * @example
 * ```ts
 * const batches = await handedBatches(h);
 * await h.pipeline.consumer.processGroup(batches);
 * ```
 */
export async function handedBatches(h: Harness): Promise<HandedBatch[]> {
  await h.pipeline.producer.flush();
  const out: HandedBatch[] = [];
  for (const id of await pendingBatchIds(h.kv)) {
    const pending = await h.kv.get(pendingBatchKey(id));
    const header = decodeBatchHeader(pending.value);
    const entries = await batchEntries(h.kv, id, header);
    out.push({
      id,
      versionstamp: pending.versionstamp!,
      slices: header.slices,
      entries,
      texts: entries.map((e) => JSON.stringify(e)),
    });
  }
  return out;
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

/**
 * A pending batch's entries read back from its slices, as the consumer
 * reads them, for tests that handle batches themselves.
 *
 * @module
 */
import { joinJson } from "../../db/blob.ts";
import { batchSliceKey } from "../../db/keys.ts";
import type { QueuedEntry } from "../../domain/entry.ts";
import type { BatchHeader } from "../../queue/batch.ts";

/** The entries of batch `id`, whose header says how many slices it has. */
export async function batchEntries(
  kv: Deno.Kv,
  id: string,
  header: Pick<BatchHeader, "slices">,
): Promise<QueuedEntry[]> {
  const head = (await kv.get<Uint8Array>(batchSliceKey(id, 0))).value!;
  return await joinJson<QueuedEntry[]>(
    kv,
    head,
    header.slices,
    (n) => batchSliceKey(id, n),
  );
}

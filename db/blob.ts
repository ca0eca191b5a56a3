/**
 * Values larger than Deno KV's 64 KiB limit, the one place that splits and
 * joins them: a head stored under the main key and further slices of at most
 * {@linkcode SLICE_BYTES} under keys of their own, read back with `getMany`.
 * Batches (queue/batch.ts), chunks of stored entries and their columns
 * (db/storage/chunk.ts, db/storage/columns.ts) and source maps use it; the
 * caller names the keys and records how many slices there are.
 *
 * @module
 */
import { getManyChunked } from "./kv.ts";

/** Bytes per stored slice, leaving room for the record around the head. */
export const SLICE_BYTES = 60_000;

const encoder = new TextEncoder();

/**
 * Cuts `bytes` (or the UTF-8 of a text) into a head and further slices of at
 * most `size` bytes. Slices are copies, not views: KV would store a view
 * with its whole buffer.
 *
 * @example
 * ```ts
 * const { head, rest } = splitBytes(bytes); // rest.length === 0 for small values
 * ```
 */
export function splitBytes(
  bytes: Uint8Array | string,
  size = SLICE_BYTES,
): { head: Uint8Array; rest: Uint8Array[] } {
  const all = typeof bytes === "string" ? encoder.encode(bytes) : bytes;
  if (all.length <= size) return { head: all, rest: [] };
  const rest: Uint8Array[] = [];
  for (let at = size; at < all.length; at += size) {
    rest.push(all.slice(at, at + size));
  }
  return { head: all.slice(0, size), rest };
}

/** Concatenates byte arrays. */
export function concatBytes(chunks: Uint8Array[]): Uint8Array {
  if (chunks.length === 1) return chunks[0]!;
  const whole = new Uint8Array(chunks.reduce((n, c) => n + c.length, 0));
  let at = 0;
  for (const chunk of chunks) {
    whole.set(chunk, at);
    at += chunk.length;
  }
  return whole;
}

/**
 * Reads the slices under `keys` (in order) and returns `head` followed by
 * them. Throws when a slice is missing.
 *
 * @example
 * ```ts
 * const bytes = await joinBytes(kv, head, [logChunkSliceKey(projectId, id, 1)]);
 * ```
 */
export async function joinBytes(
  kv: Deno.Kv,
  head: Uint8Array,
  keys: Deno.KvKey[],
): Promise<Uint8Array> {
  const chunks = [head];
  for (const entry of await getManyChunked<Uint8Array>(kv, keys)) {
    if (!(entry.value instanceof Uint8Array)) {
      throw new Error(`Cannot read "${entry.key.join("/")}": slice missing`);
    }
    chunks.push(entry.value);
  }
  return concatBytes(chunks);
}

/**
 * Reads the `count - 1` slices after `head` (slice `n` under `sliceKey(n)`)
 * and returns the whole value: `head` itself when it is the only slice.
 *
 * @example
 * ```ts
 * const body = await joinSlices(kv, head, 3, (n) => logChunkSliceKey(projectId, id, n));
 * ```
 */
export async function joinSlices(
  kv: Deno.Kv,
  head: Uint8Array,
  count: number,
  sliceKey: (n: number) => Deno.KvKey,
): Promise<Uint8Array> {
  if (count <= 1) return head;
  const keys = Array.from({ length: count - 1 }, (_, i) => sliceKey(i + 1));
  return await joinBytes(kv, head, keys);
}

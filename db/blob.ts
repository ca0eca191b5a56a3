/**
 * Byte values larger than one KV value: a head stored under the main key and
 * further parts under keys of their own, read back with `getMany` (at most
 * {@linkcode GET_MANY_MAX} keys per call). Pages and chunks of stored
 * entries use it; the caller names the keys and records how many parts there
 * are.
 *
 * @module
 */
import { PART_BYTES } from "./parts.ts";

/** Keys one `getMany` call takes at most. */
export const GET_MANY_MAX = 10;

/**
 * Cuts `bytes` into a head and further parts of at most `size` bytes. Parts
 * are copies, not views: KV would store a view with its whole buffer.
 *
 * @example
 * ```ts
 * const { head, rest } = splitBytes(bytes); // rest.length === 0 for small values
 * ```
 */
export function splitBytes(
  bytes: Uint8Array,
  size = PART_BYTES,
): { head: Uint8Array; rest: Uint8Array[] } {
  if (bytes.length <= size) return { head: bytes, rest: [] };
  const rest: Uint8Array[] = [];
  for (let at = size; at < bytes.length; at += size) {
    rest.push(bytes.slice(at, at + size));
  }
  return { head: bytes.slice(0, size), rest };
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
 * Reads the parts under `keys` (in order) and returns `head` followed by
 * them. Throws when a part is missing.
 *
 * @example
 * ```ts
 * const bytes = await joinBytes(kv, head, [logPartKey(projectId, id, 1)]);
 * ```
 */
export async function joinBytes(
  kv: Deno.Kv,
  head: Uint8Array,
  keys: Deno.KvKey[],
): Promise<Uint8Array> {
  const chunks = [head];
  for (let i = 0; i < keys.length; i += GET_MANY_MAX) {
    const entries = await kv.getMany<Uint8Array[]>(
      keys.slice(i, i + GET_MANY_MAX),
    );
    for (const entry of entries) {
      if (!(entry.value instanceof Uint8Array)) {
        throw new Error(`Cannot read "${entry.key.join("/")}": part missing`);
      }
      chunks.push(entry.value);
    }
  }
  return concatBytes(chunks);
}

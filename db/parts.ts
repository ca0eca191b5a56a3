/**
 * Values larger than Deno KV's 64 KiB limit: JSON bytes split into a head
 * (stored in the main record) and further parts under their own keys.
 * Batches and stored entries both use it, so a body at `MAX_BODY_BYTES`
 * always fits. A batch's bytes may also be stored apart from its header,
 * every part under its own key from 0 ({@linkcode readBatchApart}).
 *
 * @module
 */
import { batchPartKey } from "./keys.ts";
import { getManyChunked } from "./kv.ts";

/** Bytes per stored part, leaving room for the record around the head. */
export const PART_BYTES = 60_000;

/** A JSON document cut into parts of at most {@linkcode PART_BYTES}. */
export interface Parts {
  /** The first part, stored inline in the record. */
  head: Uint8Array;
  /** The parts after the head, stored under their own keys (numbered from 1). */
  rest: Uint8Array[];
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/**
 * Encodes a JSON text and cuts it into parts.
 *
 * @example
 * ```ts
 * const { head, rest } = splitParts(JSON.stringify(record));
 * ```
 */
export function splitParts(json: string): Parts {
  const bytes = encoder.encode(json);
  if (bytes.length <= PART_BYTES) return { head: bytes, rest: [] };
  // Copies, not views: KV serializes a view with its whole underlying buffer.
  const rest: Uint8Array[] = [];
  for (let at = PART_BYTES; at < bytes.length; at += PART_BYTES) {
    rest.push(bytes.slice(at, at + PART_BYTES));
  }
  return { head: bytes.slice(0, PART_BYTES), rest };
}

/**
 * Reads the parts after `head` (there are `count - 1` of them) and parses the
 * whole JSON document.
 */
export async function joinParts<T>(
  kv: Deno.Kv,
  head: Uint8Array,
  count: number,
  partKey: (n: number) => Deno.KvKey,
): Promise<T> {
  if (count <= 1) return JSON.parse(decoder.decode(head));
  const keys = Array.from({ length: count - 1 }, (_, i) => partKey(i + 1));
  const chunks = [head];
  for (const entry of await getManyChunked<Uint8Array>(kv, keys)) {
    if (!(entry.value instanceof Uint8Array)) {
      throw new Error(`Cannot read "${entry.key.join("/")}": part missing`);
    }
    chunks.push(entry.value);
  }
  const whole = new Uint8Array(chunks.reduce((n, c) => n + c.length, 0));
  let at = 0;
  for (const chunk of chunks) {
    whole.set(chunk, at);
    at += chunk.length;
  }
  return JSON.parse(decoder.decode(whole));
}

/**
 * Reads and parses the JSON of a batch stored apart from its header: `parts`
 * parts under `batch_parts/<batchId>/0` onwards (docs/design.md#group-commit).
 * Throws when its bytes are gone.
 *
 * @example
 * ```ts
 * const entries = await readBatchApart(kv, batchId, header.parts);
 * ```
 */
export async function readBatchApart(
  kv: Deno.Kv,
  batchId: string,
  parts: number,
): Promise<unknown> {
  const head = (await kv.get(batchPartKey(batchId, 0))).value;
  if (!(head instanceof Uint8Array)) {
    throw new Error(`Cannot read batch "${batchId}": its bytes are gone`);
  }
  return await joinParts(kv, head, parts, (n) => batchPartKey(batchId, n));
}

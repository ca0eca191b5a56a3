/**
 * Deno KV's limits as named constants, reading many keys under the
 * `getMany` limit, committing again a commit refused as locked
 * (docs/design.md#group-commit), and the value codec
 * (docs/design.md#value-encoding).
 *
 * Every value the service stores is bytes it encodes itself — UTF-8 JSON, or
 * a JSON header framed with a binary payload — or a `Deno.KvU64` counter.
 * Values serialized by the runtime are not readable by an older Deno (Deno
 * Deploy runs an older one than a developer's machine), bytes are. A value
 * in the runtime's own encoding was never written by a released version,
 * and is refused as unreadable.
 *
 * @module
 */

/** Keys one `kv.getMany` call takes at most. */
export const GET_MANY_MAX_KEYS = 10;
/** Mutations one atomic operation holds at most. */
export const ATOMIC_MAX_MUTATIONS = 1000;
/** Checks one atomic operation holds at most. */
export const ATOMIC_MAX_CHECKS = 10;
/** Bytes of one value at most, after encoding. */
export const VALUE_MAX_BYTES = 65_536;
/** Bytes of one atomic operation at most: its keys and values together. */
export const ATOMIC_MAX_BYTES = 819_200;
/** Bytes of the keys one atomic operation sets or changes, at most. */
export const ATOMIC_MAX_KEY_BYTES = 81_920;

/**
 * Waits before each new attempt of a commit refused as locked, in
 * milliseconds: at most 5 attempts more, after waits of 155 ms in all.
 */
export const LOCKED_RETRY_DELAYS_MS: readonly number[] = [5, 10, 20, 40, 80];

/**
 * Whether `error` says that SQLite refused a commit as locked: another
 * connection to the same file (an operator command, a second process) wrote
 * while this one read, or held its write lock past Deno KV's own wait (about
 * 5 s), and the commit wrote nothing. A `KvLockedError` (db/locked.ts), a
 * refusal that outlasted its retries, is one too.
 *
 * @example
 * ```ts
 * isLockedError(new TypeError("database is locked")); // true
 * ```
 */
export function isLockedError(error: unknown): boolean {
  return error instanceof Error &&
    (error.name === "KvLockedError" ||
      /database is locked/i.test(error.message));
}

/** Options of {@linkcode commitRetryingLocked}. */
export interface LockedRetryOptions {
  /** Waits `ms` milliseconds. @default a `setTimeout` */
  sleep?: (ms: number) => Promise<void>;
}

/** Waits `ms` milliseconds on a `setTimeout`: the default `sleep` of the retries. */
export function timeout(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/**
 * Calls `commit`, and calls it again after each of
 * {@linkcode LOCKED_RETRY_DELAYS_MS} while it throws an error that
 * {@linkcode isLockedError} recognizes: a commit refused that way wrote
 * nothing, so sending the same operation again is safe. Any other error, or
 * the last refusal, is thrown as it is.
 *
 * @example
 * ```ts
 * const op = kv.atomic().set(key, value);
 * const result = await commitRetryingLocked(() => op.commit());
 * ```
 */
export async function commitRetryingLocked<T>(
  commit: () => Promise<T>,
  options: LockedRetryOptions = {},
): Promise<T> {
  const sleep = options.sleep ?? timeout;
  for (let attempt = 0;; attempt++) {
    try {
      return await commit();
    } catch (error) {
      const wait = LOCKED_RETRY_DELAYS_MS[attempt];
      // A KvLockedError has been retried already, within its bound.
      if (
        wait === undefined || !isLockedError(error) ||
        (error as Error).name === "KvLockedError"
      ) throw error;
      await sleep(wait);
    }
  }
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/**
 * Bytes of `key` as KV encodes it, which its bounds count
 * ({@linkcode ATOMIC_MAX_KEY_BYTES}): a string or byte part takes its UTF-8
 * bytes, one more for each zero byte and two around them; a number 9 bytes;
 * a bigint at most 11 (counted so); a boolean 1.
 *
 * @example
 * ```ts
 * keyBytes(["projects", "p1"]); // 14
 * ```
 */
export function keyBytes(key: Deno.KvKey): number {
  let bytes = 0;
  for (const part of key) {
    if (typeof part === "string" || part instanceof Uint8Array) {
      const raw = typeof part === "string" ? encoder.encode(part) : part;
      bytes += 2 + raw.length;
      for (const byte of raw) if (byte === 0) bytes++;
    } else if (typeof part === "number") bytes += 9;
    else if (typeof part === "bigint") bytes += 11;
    else bytes += 1;
  }
  return bytes;
}

/** UTF-8 bytes of code point `cp` inside a JSON string, as `JSON.stringify` writes it. */
function jsonCodePointBytes(cp: number): number {
  if (cp < 0x20) return "\b\t\n\f\r".includes(String.fromCharCode(cp)) ? 2 : 6;
  if (cp === 0x22 || cp === 0x5c) return 2; // \" and \\
  if (cp < 0x80) return 1;
  if (cp < 0x800) return 2;
  if (cp >= 0xd800 && cp <= 0xdfff) return 6; // a lone surrogate: \udXXX
  return cp < 0x10000 ? 3 : 4;
}

/**
 * `text` cut at a code point boundary to at most `chars` UTF-16 units and
 * `bytes` bytes of its JSON string, quotes left out (a control character
 * takes 6 bytes there, `\u0001`, as a lone surrogate does): the stored form
 * of a text whose record must stay within a size.
 *
 * @example
 * ```ts
 * cutJsonText("\u0001".repeat(300), { chars: 300, bytes: 900 }).length; // 150
 * ```
 */
export function cutJsonText(
  text: string,
  limits: { chars: number; bytes: number },
): string {
  let bytes = 0;
  let i = 0;
  while (i < text.length) {
    const cp = text.codePointAt(i)!;
    const units = cp > 0xffff ? 2 : 1;
    const size = jsonCodePointBytes(cp);
    if (i + units > limits.chars || bytes + size > limits.bytes) break;
    bytes += size;
    i += units;
  }
  return i === text.length ? text : text.slice(0, i);
}

/**
 * Reads any number of keys, {@linkcode GET_MANY_MAX_KEYS} per call, in the
 * order given.
 *
 * @example
 * ```ts
 * const entries = await getManyChunked<Uint8Array>(kv, keys);
 * ```
 */
export async function getManyChunked<T>(
  kv: Deno.Kv,
  keys: Deno.KvKey[],
): Promise<Deno.KvEntryMaybe<T>[]> {
  const entries: Deno.KvEntryMaybe<T>[] = [];
  for (let i = 0; i < keys.length; i += GET_MANY_MAX_KEYS) {
    const chunk = keys.slice(i, i + GET_MANY_MAX_KEYS);
    entries.push(...await kv.getMany<T[]>(chunk));
  }
  return entries;
}

/**
 * Encodes a JSON value as UTF-8 bytes, the stored form of every record.
 *
 * @example
 * ```ts
 * op.set(projectKey(project.id), encodeJson(project));
 * ```
 */
export function encodeJson(value: unknown): Uint8Array {
  return encoder.encode(JSON.stringify(value));
}

/** Thrown for a stored value that is not in the service's own encoding. */
export class UnreadableValueError extends Error {
  override name = "UnreadableValueError";
}

/**
 * Decodes a value stored by {@linkcode encodeJson}; an absent value (`null`)
 * stays `null`, and a value in any other encoding is refused.
 *
 * @example
 * ```ts
 * const project = decodeJson<Project>((await kv.get(projectKey(id))).value);
 * ```
 */
export function decodeJson<T>(value: unknown): T | null {
  if (value === null || value === undefined) return null;
  if (value instanceof Uint8Array) return JSON.parse(decoder.decode(value));
  throw new UnreadableValueError(
    `Cannot read a stored value: expected the service's own bytes, got ${typeof value}`,
  );
}

/**
 * The values under `prefix`, decoded as {@linkcode decodeJson} does, in the
 * order `kv.list` gives them; an empty value is left out.
 *
 * @example
 * ```ts
 * const newest = await listJson<AuditEvent>(kv, auditKey(projectId), { reverse: true, limit: 50 });
 * ```
 */
export async function listJson<T>(
  kv: Deno.Kv,
  prefix: Deno.KvKey,
  options?: Deno.KvListOptions,
): Promise<T[]> {
  const values: T[] = [];
  for await (const entry of kv.list({ prefix }, options)) {
    const value = decodeJson<T>(entry.value);
    if (value !== null) values.push(value);
  }
  return values;
}

/** Bytes of the header length at the start of a framed value. */
const FRAME_LENGTH_BYTES = 4;

/**
 * Encodes a JSON header followed by a binary payload: 4 bytes (big-endian)
 * of header length, the header as UTF-8 JSON, then the payload.
 *
 * @example
 * ```ts
 * const value = encodeFramed({ count: 3 }, head);
 * const { header, payload } = decodeFramed<{ count: number }>(value);
 * ```
 */
export function encodeFramed(header: unknown, payload: Uint8Array): Uint8Array {
  const json = encodeJson(header);
  const out = new Uint8Array(FRAME_LENGTH_BYTES + json.length + payload.length);
  new DataView(out.buffer).setUint32(0, json.length);
  out.set(json, FRAME_LENGTH_BYTES);
  out.set(payload, FRAME_LENGTH_BYTES + json.length);
  return out;
}

/** A value decoded by {@linkcode decodeFramed}. */
export interface Framed<T> {
  header: T;
  payload: Uint8Array;
}

/**
 * Decodes a value stored by {@linkcode encodeFramed}. Throws a `RangeError`
 * when the bytes are not a framed value.
 */
export function decodeFramed<T>(value: Uint8Array): Framed<T> {
  if (value.length < FRAME_LENGTH_BYTES) {
    throw new RangeError("Cannot decode a framed value: too short");
  }
  const view = new DataView(value.buffer, value.byteOffset, value.byteLength);
  const end = FRAME_LENGTH_BYTES + view.getUint32(0);
  if (end > value.length) {
    throw new RangeError("Cannot decode a framed value: header cut short");
  }
  return {
    header: JSON.parse(decoder.decode(value.subarray(FRAME_LENGTH_BYTES, end))),
    payload: value.subarray(end),
  };
}

/**
 * Keeps a bounded family within `max` keys under `prefix` after a writer
 * added its own: a count made before a write lets parallel writers pass it
 * together, so the writer counts again after its commit and, past the
 * bound, deletes what it wrote (`keys`) and throws `refusal()` (those at
 * the bound in the same moment may all be refused; never more than `max`
 * stay).
 *
 * @example
 * ```ts
 * await keepWithin(kv, savedViewKey(projectId), MAX_VIEWS, [key], () => new Error("too many"));
 * ```
 */
export async function keepWithin(
  kv: Deno.Kv,
  prefix: Deno.KvKey,
  max: number,
  keys: Deno.KvKey[],
  refusal: () => Error,
): Promise<void> {
  let n = 0;
  for await (const _ of kv.list({ prefix }, { limit: max + 1 })) n++;
  if (n <= max) return;
  const op = kv.atomic();
  for (const key of keys) op.delete(key);
  await op.commit();
  throw refusal();
}

/**
 * The queued form of a batch of entries, as the producer writes it and the
 * consumer reads it back: a header under `pending_batches/<id>`, stored as
 * bytes (docs/design.md#value-encoding), and the JSON array of entries in
 * slices under `batch_slices/<id>/0` onwards (docs/design.md#group-commit).
 *
 * A batch is queued before its entries are authenticated and scrubbed (a
 * signature is checked on the bytes as sent), so its JSON may hold secrets
 * that scrubbing later removes. Deleting the batch does not wipe its bytes:
 * SQLite leaves them in free pages and the write-ahead log. So the JSON is
 * sealed here, with AES-GCM under a random key kept in KV, in one call per
 * batch ({@linkcode sealBatch}, {@linkcode openBatch}); what is left behind
 * is ciphertext (docs/privacy.md#queued-batches).
 *
 * @module
 */
import { joinBytes } from "../db/blob.ts";
import { batchSealKey, batchSliceKey } from "../db/keys.ts";
import { decodeFramed, encodeFramed } from "../db/kv.ts";
import type { QueuedEntry } from "../domain/entry.ts";

/** The record under `pending_batches/<id>` (and `dead_letters/<id>`). */
export interface BatchHeader {
  /** Creation time, Unix milliseconds. */
  createdAt: number;
  /** Number of entries. */
  count: number;
  /**
   * Number of slices of the JSON array of entries, under
   * `batch_slices/<batchId>/0` onwards: the header, rewritten at each failed
   * attempt, holds no entry.
   */
  slices: number;
  /** Failed processing attempts so far. */
  attempts: number;
  /** Earliest time of the next attempt after a failure. */
  retryAt?: number;
  /** The last failure's message. */
  error?: string;
  /**
   * Set by a failed attempt at a pending value that was not a header: that
   * value, kept whole on its way to the dead letters; a header that has it
   * is never processed (docs/design.md#retries-and-dead-letters).
   */
  unreadable?: Uint8Array;
}

/**
 * A batch handed by the producer to the consumer of the same process right
 * after its commit: the entries are already in memory, and the commit's
 * versionstamp is the pending key's, so nothing needs reading back.
 */
export interface HandedBatch {
  id: string;
  /** Versionstamp of the commit that wrote the pending key. */
  versionstamp: string;
  /** Number of slices its entries' JSON was written in. */
  slices: number;
  entries: QueuedEntry[];
  /** Each entry's JSON as committed, in the same order. */
  texts: string[];
}

/** Thrown for a batch whose stored form cannot be read. */
export class BatchFormatError extends Error {
  override name = "BatchFormatError";
}

/** The header fields stored in front of the unreadable value, if any. */
type StoredHeader = Omit<BatchHeader, "unreadable">;

const NO_BYTES = new Uint8Array(0);

/**
 * Encodes a batch header: its fields as a JSON header, the unreadable value
 * a dead letter keeps (none for a pending batch) as the payload.
 */
export function encodeBatchHeader(header: BatchHeader): Uint8Array {
  const { unreadable, ...fields } = header;
  return encodeFramed(fields, unreadable ?? NO_BYTES);
}

/**
 * Decodes a stored batch header. Throws {@linkcode BatchFormatError} when
 * the value is not one.
 */
export function decodeBatchHeader(value: unknown): BatchHeader {
  if (!(value instanceof Uint8Array)) {
    throw new BatchFormatError("Cannot read batch header: unknown form");
  }
  let stored;
  try {
    stored = decodeFramed<StoredHeader>(value);
  } catch (error) {
    throw new BatchFormatError("Cannot read batch header", { cause: error });
  }
  const { header, payload } = stored;
  if (!isHeaderFields(header)) {
    throw new BatchFormatError("Cannot read batch header: unknown form");
  }
  return payload.length > 0 ? { ...header, unreadable: payload } : header;
}

function isHeaderFields(value: unknown): value is StoredHeader {
  const h = value as StoredHeader | null;
  return typeof h === "object" && h !== null &&
    Number.isInteger(h.createdAt) && Number.isInteger(h.count) &&
    Number.isInteger(h.slices) && h.slices >= 1 &&
    Number.isInteger(h.attempts);
}

/** Type guard for a decoded batch: an array of plausible entries. */
export function isEntryList(value: unknown): value is QueuedEntry[] {
  return Array.isArray(value) &&
    value.every((entry) =>
      typeof entry === "object" && entry !== null &&
      typeof entry.id === "string" && typeof entry.projectId === "string" &&
      typeof entry.level === "string" && typeof entry.receivedAt === "number" &&
      typeof entry.data === "object" && entry.data !== null
    );
}

/** First byte of a sealed batch: then a 12-byte nonce and the ciphertext. */
const SEALED = 1;
const NONCE_BYTES = 12;
const KEY_BYTES = 32;

const encoder = new TextEncoder();
const decoder = new TextDecoder();
/** The sealing key of each database, read (or made) once per process. */
const sealKeys = new WeakMap<Deno.Kv, Promise<CryptoKey>>();

function sealKeyOf(kv: Deno.Kv): Promise<CryptoKey> {
  let key = sealKeys.get(kv);
  if (!key) {
    key = loadSealKey(kv);
    sealKeys.set(kv, key);
    key.catch(() => sealKeys.delete(kv));
  }
  return key;
}

async function loadSealKey(kv: Deno.Kv): Promise<CryptoKey> {
  for (;;) {
    const entry = await kv.get<Uint8Array<ArrayBuffer>>(batchSealKey());
    if (entry.value instanceof Uint8Array) {
      return await crypto.subtle.importKey(
        "raw",
        entry.value,
        "AES-GCM",
        false,
        [
          "encrypt",
          "decrypt",
        ],
      );
    }
    // Two processes starting at once: the first commit wins, both read it.
    await kv.atomic().check(entry)
      .set(batchSealKey(), crypto.getRandomValues(new Uint8Array(KEY_BYTES)))
      .commit();
  }
}

/**
 * Seals the JSON text of a batch for queueing: one AES-GCM encryption.
 *
 * @example
 * ```ts
 * const { head, rest } = splitBytes(await sealBatch(kv, `[${json}]`));
 * ```
 */
export async function sealBatch(
  kv: Deno.Kv,
  text: string,
): Promise<Uint8Array> {
  const nonce = crypto.getRandomValues(new Uint8Array(NONCE_BYTES));
  const sealed = await crypto.subtle.encrypt(
    { name: "AES-GCM", iv: nonce },
    await sealKeyOf(kv),
    encoder.encode(text),
  );
  const bytes = new Uint8Array(1 + NONCE_BYTES + sealed.byteLength);
  bytes[0] = SEALED;
  bytes.set(nonce, 1);
  bytes.set(new Uint8Array(sealed), 1 + NONCE_BYTES);
  return bytes;
}

/**
 * The JSON text of a batch from its stored bytes, sealed by
 * {@linkcode sealBatch}. Throws when they are not.
 */
export async function openBatch(
  kv: Deno.Kv,
  bytes: Uint8Array,
): Promise<string> {
  if (bytes[0] !== SEALED || bytes.length < 1 + NONCE_BYTES) {
    throw new BatchFormatError("Cannot open batch: unknown form");
  }
  // Bytes read from KV: never a shared buffer.
  const own = bytes as Uint8Array<ArrayBuffer>;
  const text = await crypto.subtle.decrypt(
    { name: "AES-GCM", iv: own.subarray(1, 1 + NONCE_BYTES) },
    await sealKeyOf(kv),
    own.subarray(1 + NONCE_BYTES),
  );
  return decoder.decode(text);
}

/**
 * Reads, opens and parses the JSON of a batch: `slices` slices under
 * `batch_slices/<batchId>/0` onwards (docs/design.md#group-commit). Throws
 * when its bytes are gone.
 *
 * @example
 * ```ts
 * const entries = await readBatchSlices(kv, batchId, header.slices);
 * ```
 */
export async function readBatchSlices(
  kv: Deno.Kv,
  batchId: string,
  slices: number,
): Promise<unknown> {
  const first = (await kv.get(batchSliceKey(batchId, 0))).value;
  if (!(first instanceof Uint8Array)) {
    throw new Error(`Cannot read batch "${batchId}": its bytes are gone`);
  }
  const keys = Array.from(
    { length: slices - 1 },
    (_, i) => batchSliceKey(batchId, i + 1),
  );
  return JSON.parse(await openBatch(kv, await joinBytes(kv, first, keys)));
}

/**
 * The queued form of a batch of entries, as the producer writes it and the
 * consumer reads it back: a header under `pending_batches/<id>`, stored as
 * bytes (docs/design.md#value-encoding), and the JSON array of entries in
 * slices under `batch_slices/<id>/0` onwards (docs/design.md#group-commit).
 *
 * @module
 */
import { joinJson } from "../db/blob.ts";
import { batchSliceKey } from "../db/keys.ts";
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

/**
 * Reads and parses the JSON of a batch: `slices` slices under
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
  return await joinJson(kv, first, slices, (n) => batchSliceKey(batchId, n));
}

/**
 * The queued form of a batch of entries, as the producer writes it and the
 * consumer reads it back. It is stored as bytes
 * (docs/design.md#value-encoding); the decoder also reads the
 * runtime-serialized values that earlier versions stored.
 *
 * @module
 */
import { joinJson } from "../db/blob.ts";
import { batchPartKey } from "../db/keys.ts";
import { decodeFramed, encodeFramed } from "../db/kv.ts";
import type { QueuedEntry } from "../domain/entry.ts";

/** The record under `pending_batches/<id>` (and `dead_letters/<id>`). */
export interface BatchHeader {
  /** Creation time, Unix milliseconds. */
  createdAt: number;
  /** Number of entries. */
  count: number;
  /**
   * First part of the JSON array of entries; empty when the batch is
   * {@linkcode BatchHeader.apart}.
   */
  head: Uint8Array;
  /**
   * The first part is stored apart, under `batch_parts/<batchId>/0`, as the
   * producer writes every batch: the header, rewritten at each failed
   * attempt, then holds no entry. Absent in batches of older versions.
   */
  apart?: boolean;
  /** Number of parts, head included. */
  parts: number;
  /** Failed processing attempts so far. */
  attempts: number;
  /** Earliest time of the next attempt after a failure. */
  retryAt?: number;
  /** The last failure's message. */
  error?: string;
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
  /** Number of parts the batch was written in, apart from its header. */
  parts: number;
  entries: QueuedEntry[];
  /** Each entry's JSON as committed, in the same order. */
  texts: string[];
}

/** Thrown for a batch whose stored form cannot be read. */
export class BatchFormatError extends Error {
  override name = "BatchFormatError";
}

/** The header fields stored in front of the head bytes. */
type StoredHeader = Omit<BatchHeader, "head">;

/**
 * Encodes a batch header: its fields as a JSON header, its head bytes as the
 * payload.
 */
export function encodeBatchHeader(header: BatchHeader): Uint8Array {
  const { head, ...fields } = header;
  return encodeFramed(fields, head);
}

/**
 * Decodes a stored batch header, from bytes or from the runtime-serialized
 * object of earlier versions. Throws {@linkcode BatchFormatError} when it is
 * neither.
 */
export function decodeBatchHeader(value: unknown): BatchHeader {
  try {
    if (value instanceof Uint8Array) {
      const { header, payload } = decodeFramed<StoredHeader>(value);
      if (isHeaderFields(header)) return { ...header, head: payload };
    } else if (
      isHeaderFields(value) && (value as BatchHeader).head instanceof Uint8Array
    ) {
      return value as BatchHeader;
    }
  } catch (error) {
    throw new BatchFormatError("Cannot read batch header", { cause: error });
  }
  throw new BatchFormatError("Cannot read batch header: unknown form");
}

function isHeaderFields(value: unknown): value is StoredHeader {
  const h = value as StoredHeader | null;
  return typeof h === "object" && h !== null &&
    Number.isInteger(h.createdAt) && Number.isInteger(h.count) &&
    Number.isInteger(h.parts) && h.parts >= 1 &&
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
  return await joinJson(kv, head, parts, (n) => batchPartKey(batchId, n));
}

/**
 * The queued form of an entry and of a batch of entries, as the producer
 * writes them and the consumer reads them back.
 *
 * @module
 */
import type { QueuedEntry } from "../domain/entry.ts";

/** The record under `pending_batches/<id>` (and `dead_letters/<id>`). */
export interface BatchHeader {
  /** Creation time, Unix milliseconds. */
  createdAt: number;
  /** Number of entries. */
  count: number;
  /** First part of the JSON array of entries. */
  head: Uint8Array;
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
  /** Number of parts the batch was written in. */
  parts: number;
  entries: QueuedEntry[];
}

/** The queue message: a wake-up naming batches, never the entries. */
export interface WakeMessage {
  batches: string[];
}

/** Type guard for {@linkcode WakeMessage} (queue payloads are untrusted). */
export function isWakeMessage(value: unknown): value is WakeMessage {
  return typeof value === "object" && value !== null &&
    Array.isArray((value as WakeMessage).batches) &&
    (value as WakeMessage).batches.every((id) => typeof id === "string");
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

/**
 * Dead letters: batches whose processing kept failing, moved aside by
 * `Consumer.recordFailure` after `MAX_ATTEMPTS` attempts (queue/consumer.ts). This module
 * lists them and replays them: a replay moves the header back to the pending
 * batches in one atomic operation (attempts reset, no retry time), leaving the
 * batch's parts where they are, so the sweeper of any running server picks it
 * up on its next pass. It never processes a batch itself.
 *
 * @module
 */
import {
  deadLetterKey,
  deadLettersPrefix,
  pendingBatchKey,
} from "../db/keys.ts";
import type { BatchHeader } from "./batch.ts";

/** A dead letter as listed: the batch id and its header. */
export interface DeadLetter {
  /** The batch id (time-sortable, like entry ids). */
  id: string;
  /** Creation time of the batch, Unix milliseconds. */
  createdAt: number;
  /** Entries in the batch. */
  count: number;
  /** Failed processing attempts. */
  attempts: number;
  /** The last failure's message. */
  error?: string;
  /** Parts of the batch, head included. */
  parts: number;
}

/** Thrown when a batch id names no dead letter. */
export class DeadLetterNotFoundError extends Error {
  override name = "DeadLetterNotFoundError";
  constructor(batchId: string) {
    super(`Cannot find dead letter "${batchId}"`);
  }
}

/** Thrown when a dead letter cannot be replayed because its batch id is pending. */
export class DeadLetterConflictError extends Error {
  override name = "DeadLetterConflictError";
  constructor(batchId: string) {
    super(
      `Cannot replay dead letter "${batchId}": a batch with that id is pending`,
    );
  }
}

function describe(id: string, header: BatchHeader): DeadLetter {
  return {
    id,
    createdAt: header.createdAt,
    count: header.count,
    attempts: header.attempts,
    ...(header.error === undefined ? {} : { error: header.error }),
    parts: header.parts,
  };
}

/**
 * Lists the dead letters, oldest first.
 *
 * @example
 * ```ts
 * for (const letter of await listDeadLetters(kv)) console.log(letter.id, letter.error);
 * ```
 */
export async function listDeadLetters(kv: Deno.Kv): Promise<DeadLetter[]> {
  const letters: DeadLetter[] = [];
  const iter = kv.list<BatchHeader>({ prefix: deadLettersPrefix() });
  for await (const entry of iter) {
    letters.push(describe(String(entry.key[1]), entry.value));
  }
  return letters;
}

/** Reads one dead letter, or `null` when there is none with that id. */
export async function getDeadLetter(
  kv: Deno.Kv,
  batchId: string,
): Promise<DeadLetter | null> {
  const entry = await kv.get<BatchHeader>(deadLetterKey(batchId));
  return entry.value === null ? null : describe(batchId, entry.value);
}

/**
 * Moves dead letter `batchId` back to the pending batches with its attempts
 * reset, atomically: the dead letter is deleted in the same commit, guarded
 * by its versionstamp, so two operators replaying at once replay it once.
 * Throws {@linkcode DeadLetterNotFoundError} when there is no such dead
 * letter, {@linkcode DeadLetterConflictError} when a batch of that id is
 * pending (it is never overwritten).
 *
 * @example
 * ```ts
 * await replayDeadLetter(kv, "0193f0c2a1b4000000017f3a9c21");
 * ```
 */
export async function replayDeadLetter(
  kv: Deno.Kv,
  batchId: string,
): Promise<DeadLetter> {
  for (;;) {
    const [entry, pending] = await kv.getMany<[BatchHeader, unknown]>([
      deadLetterKey(batchId),
      pendingBatchKey(batchId),
    ]);
    if (entry.value === null) throw new DeadLetterNotFoundError(batchId);
    if (pending.value !== null) {
      // Never overwrite a pending batch: it would be lost.
      throw new DeadLetterConflictError(batchId);
    }
    const { retryAt: _retryAt, error: _error, ...rest } = entry.value;
    const header: BatchHeader = { ...rest, attempts: 0 };
    const result = await kv.atomic()
      .check(entry)
      .check(pending)
      .delete(deadLetterKey(batchId))
      .set(pendingBatchKey(batchId), header)
      .commit();
    // On a conflict someone changed either key meanwhile: read them again.
    if (result.ok) return describe(batchId, entry.value);
  }
}

/**
 * Replays every dead letter; returns the ones replayed, oldest first.
 * (Each is replayed by {@linkcode replayDeadLetter}; one already replayed by
 * someone else meanwhile is skipped.)
 */
export async function replayAllDeadLetters(
  kv: Deno.Kv,
): Promise<DeadLetter[]> {
  const replayed: DeadLetter[] = [];
  for (const letter of await listDeadLetters(kv)) {
    try {
      replayed.push(await replayDeadLetter(kv, letter.id));
    } catch (error) {
      if (!(error instanceof DeadLetterNotFoundError)) throw error;
    }
  }
  return replayed;
}

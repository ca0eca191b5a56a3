/**
 * The retry and dead-letter policy (docs/design.md#retries-and-dead-letters):
 * a batch whose processing fails is retried after a backoff, and after
 * {@linkcode MAX_ATTEMPTS} failures it moves aside to the dead letters, never
 * lost silently. This module records failures, lists dead letters and
 * replays them: a replay moves the header back to the pending batches in one
 * atomic operation (attempts reset, no retry time), leaving the batch's slices
 * where they are, so the sweeper of any running server picks it up on its
 * next pass. It never processes a batch itself. An operator may instead
 * delete a dead letter, with its slices, in one atomic operation: its
 * entries were answered `200`, so the service never deletes one by itself;
 * it deletes only the slices that no batch names any more.
 *
 * @module
 */
import {
  allBatchSlicesPrefix,
  batchIdOf,
  batchIdOfSlice,
  batchProgressKey,
  batchSlicesPrefix,
  deadLetterKey,
  deadLettersPrefix,
  pendingBatchKey,
  quotaGrantsPrefix,
} from "../db/keys.ts";
import { encodeJson, getManyChunked, isLockedError } from "../db/kv.ts";
import { isDiskFullError } from "../db/disk.ts";
import { deletePrefix } from "../db/projects.ts";
import { isIdForm } from "../domain/ids.ts";
import {
  type BatchHeader,
  decodeBatchHeader,
  encodeBatchHeader,
} from "./batch.ts";

/** Failed attempts after which a batch becomes a dead letter. */
export const MAX_ATTEMPTS = 5;
/**
 * Slices and quota grants a dead letter's delete deletes at most in the
 * commit that deletes its header: a batch has a few slices and a grant
 * per project, of its 200 entries at most (queue/producer.ts).
 */
export const DELETED_WITH_HEADER = 500;
/** Slice keys one sweep for loose slices lists at most. */
export const LOOSE_SWEEP_KEYS = 1000;
/** Wait before attempt n+1 after n failures. */
const BACKOFF_MS = [1000, 5000, 30_000, 60_000];

/**
 * Records a failed attempt at batch `batchId`: it is retried after a
 * backoff, and after {@linkcode MAX_ATTEMPTS} it moves to the dead letters.
 * A database locked past its retries or a full disk counts no attempt. A
 * stored value that cannot be read at all is kept whole in the dead
 * letter, so it reaches the dead letters instead of being retried forever.
 *
 * @example
 * ```ts
 * await recordFailure(kv, batchId, error, Date.now());
 * ```
 */
export async function recordFailure(
  kv: Deno.Kv,
  batchId: string,
  error: unknown,
  now: number,
): Promise<"retry" | "dead_letter" | "absent"> {
  const pending = await kv.get(pendingBatchKey(batchId));
  if (pending.versionstamp === null) return "absent";
  let previous: BatchHeader;
  try {
    previous = decodeBatchHeader(pending.value);
  } catch {
    // Not a header (corrupt, or written by something else): the value is
    // kept whole, and its attempts count from 0 like any other.
    const raw = pending.value;
    previous = {
      createdAt: now,
      count: 0,
      unreadable: raw instanceof Uint8Array ? raw : encodeJson(raw),
      slices: 1,
      attempts: 0,
    };
  }
  // A database locked by another process or a full disk is no fault of the
  // batch: it waits and is tried again, however long that lasts, without
  // moving toward the dead letters.
  const passing = isLockedError(error) || isDiskFullError(error);
  const attempts = previous.attempts + (passing ? 0 : 1);
  const message = error instanceof Error ? error.message : String(error);
  if (attempts >= MAX_ATTEMPTS) {
    const { retryAt: _, ...rest } = previous;
    const dead: BatchHeader = { ...rest, attempts, error: message };
    const result = await kv.atomic().check(pending)
      .delete(pendingBatchKey(batchId))
      .set(deadLetterKey(batchId), encodeBatchHeader(dead))
      .commit();
    return result.ok ? "dead_letter" : "absent";
  }
  const header: BatchHeader = {
    ...previous,
    attempts,
    error: message,
    retryAt: now +
      BACKOFF_MS[Math.min(Math.max(attempts, 1), BACKOFF_MS.length) - 1]!,
  };
  await kv.atomic().check(pending)
    .set(pendingBatchKey(batchId), encodeBatchHeader(header)).commit();
  return "retry";
}

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
  /** Slices of the batch's entries. */
  slices: number;
}

/** Dead letters listed by id in an audit event's detail, at most. */
const IDS_IN_DETAIL = 20;

/**
 * The detail of an audit event about `letters`: how many, and their ids
 * (the first {@linkcode IDS_IN_DETAIL}).
 *
 * @example
 * ```ts
 * letterIds(letters); // "2: 0193f0c2a1b4000000017f3a9c21, 0193f0c2a1b4000000027f3a9c21"
 * ```
 */
export function letterIds(letters: DeadLetter[]): string {
  const ids = letters.slice(0, IDS_IN_DETAIL).map((l) => l.id).join(", ");
  const more = letters.length - IDS_IN_DETAIL;
  return `${letters.length}: ${ids}${more > 0 ? ` and ${more} more` : ""}`;
}

/** Thrown when a batch id names no dead letter. */
export class DeadLetterNotFoundError extends Error {
  override name = "DeadLetterNotFoundError";
  constructor(batchId: string) {
    super(`Cannot find dead letter "${batchId.slice(0, 100)}"`);
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
    slices: header.slices,
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
  for await (const entry of kv.list({ prefix: deadLettersPrefix() })) {
    letters.push(
      describe(batchIdOf(entry.key), decodeBatchHeader(entry.value)),
    );
  }
  return letters;
}

/** Reads one dead letter, or `null` when there is none with that id. */
export async function getDeadLetter(
  kv: Deno.Kv,
  batchId: string,
): Promise<DeadLetter | null> {
  // Not an id: names nothing, and is never made a key.
  if (!isIdForm(batchId)) return null;
  const entry = await kv.get(deadLetterKey(batchId));
  return entry.value === null
    ? null
    : describe(batchId, decodeBatchHeader(entry.value));
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
  if (!isIdForm(batchId)) throw new DeadLetterNotFoundError(batchId);
  for (;;) {
    const [entry, pending] = await kv.getMany<[unknown, unknown]>([
      deadLetterKey(batchId),
      pendingBatchKey(batchId),
    ]);
    if (entry.value === null) throw new DeadLetterNotFoundError(batchId);
    if (pending.value !== null) {
      // Never overwrite a pending batch: it would be lost.
      throw new DeadLetterConflictError(batchId);
    }
    const dead = decodeBatchHeader(entry.value);
    const { retryAt: _retryAt, error: _error, ...rest } = dead;
    const header: BatchHeader = { ...rest, attempts: 0 };
    const result = await kv.atomic()
      .check(entry)
      .check(pending)
      .delete(deadLetterKey(batchId))
      .set(pendingBatchKey(batchId), encodeBatchHeader(header))
      .commit();
    // On a conflict someone changed either key meanwhile: read them again.
    if (result.ok) return describe(batchId, dead);
  }
}

/**
 * Replays every dead letter; returns the ones replayed, oldest first.
 * (Each is replayed by {@linkcode replayDeadLetter}; one already replayed by
 * someone else meanwhile is skipped.) One whose batch id is pending is not
 * replayed and the others are: its id goes to `conflicts`, when given.
 */
export function replayAllDeadLetters(
  kv: Deno.Kv,
  conflicts: string[] = [],
): Promise<DeadLetter[]> {
  return everyDeadLetter(kv, replayDeadLetter, conflicts);
}

/**
 * `act` on every dead letter, oldest first; returns what it answered. One
 * that someone else replayed or deleted meanwhile is skipped; one `act`
 * refuses with {@linkcode DeadLetterConflictError} is passed over, its id
 * added to `conflicts`.
 */
async function everyDeadLetter(
  kv: Deno.Kv,
  act: (kv: Deno.Kv, batchId: string) => Promise<DeadLetter>,
  conflicts: string[] = [],
): Promise<DeadLetter[]> {
  const done: DeadLetter[] = [];
  for (const letter of await listDeadLetters(kv)) {
    try {
      done.push(await act(kv, letter.id));
    } catch (error) {
      if (error instanceof DeadLetterConflictError) {
        conflicts.push(letter.id);
      } else if (!(error instanceof DeadLetterNotFoundError)) throw error;
    }
  }
  return done;
}

/**
 * Deletes dead letter `batchId` and what its batch left, in one atomic
 * operation checked on the header's versionstamp: the header, the batch's
 * progress (when it spans many projects), its slices and quota grants. Its
 * entries are gone for good, and until that commit the dead letter is whole
 * (listed, replayable). Slices past {@linkcode DELETED_WITH_HEADER} (no
 * batch the producer writes has them) go after the commit, a chunk of keys
 * per atomic operation; what a crash leaves of them, the sweeper deletes
 * ({@linkcode sweepLooseBatchSlices}). Throws
 * {@linkcode DeadLetterNotFoundError} when there is no such dead letter:
 * one that a replay moved back to the pending batches first is not deleted,
 * and neither are its slices, which the pending batch needs.
 *
 * @example
 * ```ts
 * const deleted = await deleteDeadLetter(kv, "0193f0c2a1b4000000017f3a9c21");
 * console.log(deleted.count, "entries discarded");
 * ```
 */
export async function deleteDeadLetter(
  kv: Deno.Kv,
  batchId: string,
): Promise<DeadLetter> {
  if (!isIdForm(batchId)) throw new DeadLetterNotFoundError(batchId);
  for (;;) {
    const entry = await kv.get(deadLetterKey(batchId));
    if (entry.versionstamp === null) throw new DeadLetterNotFoundError(batchId);
    const letter = describe(batchId, decodeBatchHeader(entry.value));
    // Slices are written with the header and deleted only with it: while
    // the header is unchanged, these are the batch's.
    const left = await keysUnder(kv, [
      batchSlicesPrefix(batchId),
      quotaGrantsPrefix(batchId),
    ], DELETED_WITH_HEADER + 1);
    const op = kv.atomic()
      .check(entry)
      .delete(deadLetterKey(batchId))
      .delete(batchProgressKey(batchId));
    for (const key of left.slice(0, DELETED_WITH_HEADER)) op.delete(key);
    const result = await op.commit();
    // On a conflict the header changed meanwhile (replayed, or failed again
    // after a replay): read it again.
    if (!result.ok) continue;
    if (left.length > DELETED_WITH_HEADER) {
      // Neither pending nor a dead letter now: nothing reads these any more.
      await deletePrefix(kv, batchSlicesPrefix(batchId));
      await deletePrefix(kv, quotaGrantsPrefix(batchId));
    }
    return letter;
  }
}

/** The keys under `prefixes`, in order, `limit` at most. */
async function keysUnder(
  kv: Deno.Kv,
  prefixes: Deno.KvKey[],
  limit: number,
): Promise<Deno.KvKey[]> {
  const keys: Deno.KvKey[] = [];
  for (const prefix of prefixes) {
    if (keys.length >= limit) break;
    const iter = kv.list({ prefix }, { limit: limit - keys.length });
    for await (const entry of iter) keys.push(entry.key);
  }
  return keys;
}

/**
 * Deletes the slices and quota grants of the batches that are neither
 * pending nor a dead letter: what a dead letter's delete cut short left
 * after its header's commit. Such a batch can never be read again (a
 * batch is pending or a dead letter from the commit that writes its slices
 * to the one that deletes them, and its id is never used again). Lists at
 * most {@linkcode LOOSE_SWEEP_KEYS} slices from `cursor` (the one it
 * returned last; none: from the first); returns where the next sweep goes
 * on, `undefined` once the listing reached the end.
 *
 * @example
 * ```ts
 * let cursor = await sweepLooseBatchSlices(kv);
 * cursor = await sweepLooseBatchSlices(kv, cursor);
 * ```
 */
export async function sweepLooseBatchSlices(
  kv: Deno.Kv,
  cursor?: string,
): Promise<string | undefined> {
  const iter = kv.list({ prefix: allBatchSlicesPrefix() }, {
    limit: LOOSE_SWEEP_KEYS,
    ...(cursor === undefined ? {} : { cursor }),
  });
  const ids = new Set<string>();
  let listed = 0;
  for await (const entry of iter) {
    listed++;
    ids.add(batchIdOfSlice(entry.key));
  }
  const batches = [...ids];
  const headers = await getManyChunked(
    kv,
    batches.flatMap((id) => [pendingBatchKey(id), deadLetterKey(id)]),
  );
  for (const [i, id] of batches.entries()) {
    const named = headers[2 * i]!.versionstamp !== null ||
      headers[2 * i + 1]!.versionstamp !== null;
    if (named) continue;
    await deletePrefix(kv, batchSlicesPrefix(id));
    await deletePrefix(kv, quotaGrantsPrefix(id));
  }
  return listed < LOOSE_SWEEP_KEYS ? undefined : iter.cursor;
}

/**
 * Deletes every dead letter as {@linkcode deleteDeadLetter} does; returns the
 * ones deleted, oldest first. One replayed or deleted by someone else
 * meanwhile is skipped.
 *
 * @example
 * ```ts
 * const deleted = await deleteAllDeadLetters(kv);
 * console.log(`${deleted.length} dead letters deleted`);
 * ```
 */
export function deleteAllDeadLetters(kv: Deno.Kv): Promise<DeadLetter[]> {
  return everyDeadLetter(kv, deleteDeadLetter);
}

/**
 * A batch as the consumer reads it, and the rounds its results are
 * committed in: one commit for a batch of few projects, or, for a batch of
 * many, one commit per `ROUND_PROJECT_CHECKS` projects with the progress
 * recorded between them (docs/design.md#processing-exactly-once).
 *
 * @module
 */
import type { QueuedEntry } from "../domain/entry.ts";
import { RecordedAtomic } from "../db/atomic.ts";
import { batchSliceKey, pendingBatchKey, projectKey } from "../db/keys.ts";
import { ATOMIC_MAX_CHECKS, encodeJson } from "../db/kv.ts";
import type { GrantedBatch } from "../db/quota.ts";
import type { Reads } from "./claims.ts";

/**
 * Project records one result commit checks in a batch committed in rounds,
 * beside the pending key and the progress.
 */
const ROUND_PROJECT_CHECKS = ATOMIC_MAX_CHECKS - 2;

/** A key with the versionstamp a commit is guarded by. */
export interface Guard {
  key: Deno.KvKey;
  versionstamp: string | null;
}

/** What a batch committed in rounds has done so far. */
export interface Progress extends Guard {
  /** Projects whose results are committed. */
  done: Set<string>;
}

/** A pending batch ready to process. */
export interface BatchRead {
  /** Key and versionstamp the result commit is guarded by. */
  pending: { key: Deno.KvKey; versionstamp: string };
  /** Slices of its entries' JSON, under slice numbers 0 onwards. */
  slices: number;
  entries: QueuedEntry[];
  /** Each entry's JSON as committed, when handed over in memory. */
  texts?: string[];
  /**
   * Further batches whose entries are in `entries` too (a group of batches
   * handed over together): the result commit checks and deletes them
   * beside this one. Only a batch committed in one round has them.
   */
  others?: OtherBatch[];
}

/** A further batch of a group, beside the first one. */
export interface OtherBatch {
  id: string;
  pending: Guard;
  slices: number;
  /** The ids of its entries among `entries`. */
  ids: ReadonlySet<string>;
}

/**
 * The batches of `read` as the quota grants for them: each with its
 * pending key, so that no grant is made for a batch already committed, and
 * with its entries, so that each batch of a group gets a grant of its own
 * and finds it when processed alone (docs/privacy.md#quotas).
 */
export function grantedBatches(
  batchId: string,
  read: BatchRead,
): GrantedBatch[] {
  return [
    { id: batchId, guard: read.pending },
    ...(read.others ?? []).map((o) => ({
      id: o.id,
      guard: o.pending,
      ids: o.ids,
    })),
  ];
}

/** The projects one result commit covers; the last one ends the batch. */
export interface Round {
  projects: Set<string>;
  final: boolean;
}

/**
 * The projects of the next result commit: every existing one still to do,
 * or, for a batch committed in rounds, the next `ROUND_PROJECT_CHECKS`.
 */
export function planRound(
  ids: Set<string>,
  projects: Reads,
  progress: Progress | null,
): Round {
  const owners = [...ids].filter((id) =>
    projects.get(id)!.project !== null && (!progress || !progress.done.has(id))
  );
  const final = !progress || owners.length <= ROUND_PROJECT_CHECKS;
  return {
    projects: new Set(final ? owners : owners.slice(0, ROUND_PROJECT_CHECKS)),
    final,
  };
}

/**
 * A round's result commit, guarded by the pending batch, the round's
 * project records and the progress: the last one deletes the batch, the
 * others record the projects done.
 */
export function roundCommit(
  batchId: string,
  read: BatchRead,
  round: Round,
  projects: Reads,
  progress: Progress | null,
): RecordedAtomic {
  const op = new RecordedAtomic().check(read.pending);
  for (const other of read.others ?? []) op.check(other.pending);
  for (const id of round.projects) {
    op.check({
      key: projectKey(id),
      versionstamp: projects.get(id)!.versionstamp,
    });
  }
  if (progress) op.check(progress);
  if (round.final) {
    op.delete(pendingBatchKey(batchId));
    for (let n = 0; n < read.slices; n++) {
      op.delete(batchSliceKey(batchId, n));
    }
    if (progress) op.delete(progress.key);
    for (const other of read.others ?? []) {
      op.delete(pendingBatchKey(other.id));
      for (let n = 0; n < other.slices; n++) {
        op.delete(batchSliceKey(other.id, n));
      }
    }
  } else {
    op.set(progress!.key, encodeJson([...progress!.done, ...round.projects]));
  }
  return op;
}

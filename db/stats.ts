/**
 * A project's counters and its recent rejections: written by the consumer
 * inside its result commit, read through this module by the operator
 * commands, the dashboard and the tests, and by the metrics' totals
 * (db/totals.ts) directly (docs/design.md#rejection-reasons).
 *
 * Counters are `Deno.KvU64` sums, so concurrent commits add up without
 * conflicts. Recent rejections are a ring of {@linkcode RECENT_REJECTIONS}
 * slots per project, indexed by the running total of its rejections, so the
 * ring holds the latest ones and never grows. The content of a rejected
 * entry, when kept (db/rejected.ts), goes to the same slot of a second ring;
 * entries naming no project have a global ring of their own.
 *
 * @module
 */
import type { AtomicWriter } from "./atomic.ts";
import { DAY_MS, type RejectReason } from "../domain/entry.ts";
import {
  acceptedCountKey,
  counterNameOf,
  globalRejectedCountKey,
  globalRejectedCountsPrefix,
  globalRejectedEntryKey,
  globalRejectedTotalKey,
  rejectedCountKey,
  rejectedCountsPrefix,
  rejectedEntryKey,
  rejectedTotalKey,
  rejectionKey,
  rejectionsPrefix,
  replayedCountKey,
} from "./keys.ts";
import { encodeJson, getManyChunked, listJson } from "./kv.ts";
import { KEPT_TTL_MS } from "./rejected.ts";

/** Recent rejections kept per project. */
export const RECENT_REJECTIONS = 100;
/** How long a recent rejection is kept. */
export const REJECTION_TTL_MS = 30 * DAY_MS;
/** Longest origin kept with a rejection. */
const MAX_ORIGIN_CHARS = 256;

/** One entry of a project's recent rejections. */
export interface Rejection {
  entryId: string;
  /** Receipt time, Unix milliseconds. */
  at: number;
  reason: RejectReason;
  level: string;
  origin?: string;
  appid?: string;
}

/** What one result commit adds to the rejection counters and rings. */
export class StatsTally {
  /** Rejected entries by project and reason. */
  readonly rejected = new Map<string, Map<RejectReason, number>>();
  /** Rejected entries naming no existing project, by reason. */
  readonly unknownProject = new Map<RejectReason, number>();
  /** Rejections to remember, by project, in order. */
  readonly recent = new Map<string, Rejection[]>();
  /** Kept content of those rejections (db/rejected.ts), by project, in the same order. */
  readonly kept = new Map<string, (Uint8Array | undefined)[]>();
  /** Kept content of rejected entries naming no existing project, in order. */
  readonly unknownKept: Uint8Array[] = [];

  /**
   * Counts and remembers a rejection of an entry of an existing project,
   * with the entry's kept content if any.
   */
  reject(projectId: string, rejection: Rejection, kept?: Uint8Array): void {
    const reasons = this.rejected.get(projectId) ?? new Map();
    reasons.set(rejection.reason, (reasons.get(rejection.reason) ?? 0) + 1);
    this.rejected.set(projectId, reasons);
    const short = rejection.origin === undefined ? rejection : {
      ...rejection,
      origin: rejection.origin.slice(0, MAX_ORIGIN_CHARS),
    };
    const list = this.recent.get(projectId);
    if (list) list.push(short);
    else this.recent.set(projectId, [short]);
    const contents = this.kept.get(projectId);
    if (contents) contents.push(kept);
    else this.kept.set(projectId, [kept]);
  }

  /**
   * Counts a rejection of an entry whose project does not exist, with the
   * entry's kept content if any.
   */
  rejectUnknownProject(reason: RejectReason, kept?: Uint8Array): void {
    this.unknownProject.set(
      reason,
      (this.unknownProject.get(reason) ?? 0) + 1,
    );
    if (kept) this.unknownKept.push(kept);
  }
}

/**
 * Adds the mutations of `tally` to `op`. It reads the running totals of
 * rejections to place the recent ones (and the kept entries) in their ring;
 * two commits racing for the same slots can overwrite each other's recent
 * rejections, never the counters.
 *
 * @example
 * ```ts
 * const tally = new StatsTally();
 * tally.rejectUnknownProject("unknown_project");
 * await addStats(kv, op, tally);
 * ```
 */
export async function addStats(
  kv: Deno.Kv,
  op: AtomicWriter,
  tally: StatsTally,
): Promise<void> {
  for (const [reason, n] of tally.unknownProject) {
    op.sum(globalRejectedCountKey(reason), BigInt(n));
  }
  for (const [projectId, reasons] of tally.rejected) {
    for (const [reason, n] of reasons) {
      op.sum(rejectedCountKey(projectId, reason), BigInt(n));
    }
  }
  const ids = [...tally.recent.keys()];
  const unknown = tally.unknownKept;
  const totals = await getManyChunked<Deno.KvU64>(kv, [
    ...ids.map((id) => rejectedTotalKey(id)),
    ...(unknown.length > 0 ? [globalRejectedTotalKey()] : []),
  ]);
  const baseOf = (j: number) => Number(totals[j]?.value?.value ?? 0n);
  ids.forEach((projectId, j) => {
    const list = tally.recent.get(projectId)!;
    const contents = tally.kept.get(projectId) ?? [];
    const first = Math.max(0, list.length - RECENT_REJECTIONS);
    for (let k = first; k < list.length; k++) {
      const slot = (baseOf(j) + k) % RECENT_REJECTIONS;
      op.set(rejectionKey(projectId, slot), encodeJson(list[k]), {
        expireIn: REJECTION_TTL_MS,
      });
      const kept = contents[k];
      if (kept) {
        op.set(rejectedEntryKey(projectId, slot), kept, {
          expireIn: KEPT_TTL_MS,
        });
      }
    }
    op.sum(rejectedTotalKey(projectId), BigInt(list.length));
  });
  if (unknown.length > 0) {
    const base = baseOf(ids.length);
    const first = Math.max(0, unknown.length - RECENT_REJECTIONS);
    for (let k = first; k < unknown.length; k++) {
      op.set(
        globalRejectedEntryKey((base + k) % RECENT_REJECTIONS),
        unknown[k]!,
        { expireIn: KEPT_TTL_MS },
      );
    }
    op.sum(globalRejectedTotalKey(), BigInt(unknown.length));
  }
}

/** A project's counters. */
export interface ProjectStats {
  accepted: number;
  /** Rejected entries later stored by a replay (also counted in `accepted`). */
  replayed: number;
  rejected: Record<string, number>;
  /** Recent rejections, newest first. */
  recent: Rejection[];
}

/** Reads every counter under `prefix`, by the last part of its key. */
async function readCounters(
  kv: Deno.Kv,
  prefix: Deno.KvKey,
): Promise<Record<string, number>> {
  const counts: Record<string, number> = {};
  for await (const entry of kv.list<Deno.KvU64>({ prefix })) {
    counts[counterNameOf(entry.key)] = Number(entry.value.value);
  }
  return counts;
}

/**
 * Reads a project's counters and recent rejections (newest first).
 *
 * @example
 * ```ts
 * const { accepted, rejected } = await readStats(kv, projectId);
 * ```
 */
export async function readStats(
  kv: Deno.Kv,
  projectId: string,
): Promise<ProjectStats> {
  const [accepted, replayed] = await kv.getMany<[Deno.KvU64, Deno.KvU64]>([
    acceptedCountKey(projectId),
    replayedCountKey(projectId),
  ]);
  const recent = await listJson<Rejection>(kv, rejectionsPrefix(projectId));
  // The ring's slots say nothing of order: sort by time, newest first.
  recent.sort((a, b) =>
    b.at - a.at || (a.entryId < b.entryId ? 1 : a.entryId > b.entryId ? -1 : 0)
  );
  return {
    accepted: Number(accepted.value?.value ?? 0n),
    replayed: Number(replayed.value?.value ?? 0n),
    rejected: await readCounters(kv, rejectedCountsPrefix(projectId)),
    recent,
  };
}

/** Reads the counters of rejections of entries naming no existing project. */
export function readUnknownProjectRejections(
  kv: Deno.Kv,
): Promise<Record<string, number>> {
  return readCounters(kv, globalRejectedCountsPrefix());
}

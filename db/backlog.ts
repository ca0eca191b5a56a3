/**
 * What storage has not caught up with yet, for the operator: entries queued
 * but not yet stored (pending batches, every project's), and a project's
 * entries stored in chunks not yet merged into their final size, each with
 * the age of the oldest. `deno task stats` and the dashboard show it
 * (docs/storage.md#backlog).
 *
 * @module
 */
import { idTime } from "../domain/ids.ts";
import { batchIdOf, pendingBatchesPrefix } from "./keys.ts";
import { decodeFramed } from "./kv.ts";
import { backlogOf } from "./storage/tiers.ts";
import { listSummaries } from "./query/summaries.ts";

/** A part of the backlog. */
export interface BacklogPart {
  /** Units waiting: batches, or chunks. */
  units: number;
  entries: number;
  /** Age of the oldest entry waiting, in ms; null when none waits. */
  oldestAgeMs: number | null;
}

/** What {@linkcode readBacklog} returns. */
export interface StorageBacklog {
  /** Entries accepted and not yet stored, all projects together. */
  queued: BacklogPart;
  /** The project's entries in chunks as the consumer wrote them, not yet merged. */
  unmerged: BacklogPart;
  /** The project's chunks that merges may still combine (fresh and merged ones). */
  openChunks: number;
}

/** Pending batches one reading counts at most. */
const MAX_PENDING_LISTED = 100_000;

/**
 * Reads the backlog of storage as of `now`.
 *
 * @example
 * ```ts
 * const { queued, unmerged } = await readBacklog(kv, projectId, Date.now());
 * ```
 */
export async function readBacklog(
  kv: Deno.Kv,
  projectId: string,
  now: number,
): Promise<StorageBacklog> {
  const queued: BacklogPart = { units: 0, entries: 0, oldestAgeMs: null };
  const iter = kv.list({ prefix: pendingBatchesPrefix() }, {
    batchSize: 1000,
    limit: MAX_PENDING_LISTED,
  });
  for await (const entry of iter) {
    queued.units++;
    if (queued.oldestAgeMs === null) {
      queued.oldestAgeMs = Math.max(0, now - idTime(batchIdOf(entry.key)));
    }
    try {
      const { header } = decodeFramed<{ count?: unknown }>(
        entry.value as Uint8Array,
      );
      if (typeof header.count === "number") queued.entries += header.count;
    } catch { /* a value that is no header: counted as a batch only */ }
  }
  const backlog = backlogOf(await listSummaries(kv, projectId));
  return {
    queued,
    unmerged: {
      units: backlog.fresh,
      entries: backlog.freshEntries,
      oldestAgeMs: backlog.oldestFresh === null
        ? null
        : Math.max(0, now - backlog.oldestFresh),
    },
    openChunks: backlog.chunks,
  };
}

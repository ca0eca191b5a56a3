/**
 * Counters of stored entries by receipt minute, receipt hour and level,
 * summed into the commit that stores the entries (so they are exact: a
 * batch is committed once), read by histograms instead of the entries.
 *
 * KV applies no expiry to `sum` mutations, so the counters do not expire by
 * themselves: {@linkcode deleteExpiredCounts} (run by the merger) deletes
 * those older than the project's retention, and deleting a project deletes
 * them all.
 *
 * @module
 */
import type { AtomicWriter } from "./atomic.ts";
import {
  type CountResolution,
  decodeLogCountKey,
  logCountKey,
  logCountsPrefix,
} from "./keys.ts";

/** Length of a bucket of each resolution. */
export const COUNT_BUCKET_MS: Record<CountResolution, number> = {
  m: 60_000,
  h: 3_600_000,
};

/**
 * Adds the counter sums for `entries` to `op`: at most two per entry (its
 * minute and its hour), one per distinct bucket and level. Returns how many.
 *
 * @example
 * ```ts
 * addLogCounts(op, projectId, [{ receivedAt: Date.now(), level: "info" }]);
 * ```
 */
export function addLogCounts(
  op: AtomicWriter,
  projectId: string,
  entries: readonly { receivedAt: number; level: string }[],
): number {
  // level → bucket start → entries, per resolution (numbers as keys: no
  // string building per entry on the consumer's path).
  const sums: Record<CountResolution, Map<string, Map<number, number>>> = {
    m: new Map(),
    h: new Map(),
  };
  for (const { receivedAt, level } of entries) {
    for (const resolution of ["m", "h"] as const) {
      const size = COUNT_BUCKET_MS[resolution];
      const start = receivedAt - receivedAt % size;
      let byStart = sums[resolution].get(level);
      if (!byStart) sums[resolution].set(level, byStart = new Map());
      byStart.set(start, (byStart.get(start) ?? 0) + 1);
    }
  }
  let n = 0;
  for (const resolution of ["m", "h"] as const) {
    for (const [level, byStart] of sums[resolution]) {
      for (const [start, count] of byStart) {
        op.sum(logCountKey(projectId, resolution, start, level), BigInt(count));
        n++;
      }
    }
  }
  return n;
}

/** One bucket's count of one level. */
export interface LevelCount {
  start: number;
  level: string;
  count: number;
}

/**
 * Reads the counters of buckets starting in [`from`, `to`) at one
 * resolution.
 */
export async function readLogCounts(
  kv: Deno.Kv,
  projectId: string,
  resolution: CountResolution,
  from: number,
  to: number,
): Promise<LevelCount[]> {
  const out: LevelCount[] = [];
  if (to <= from) return out;
  const prefix = logCountsPrefix(projectId, resolution);
  const iter = kv.list<Deno.KvU64>({
    start: [...prefix, from],
    end: [...prefix, to],
  }, { batchSize: 1000 });
  for await (const entry of iter) {
    if (!(entry.value instanceof Deno.KvU64)) continue;
    out.push({
      ...decodeLogCountKey(entry.key),
      count: Number(entry.value.value),
    });
  }
  return out;
}

/**
 * Deletes a project's counters of buckets that ended before `before` (at
 * most 500 per call); returns how many it deleted.
 */
export async function deleteExpiredCounts(
  kv: Deno.Kv,
  projectId: string,
  before: number,
): Promise<number> {
  const op = kv.atomic();
  let n = 0;
  for (const resolution of ["m", "h"] as const) {
    const prefix = logCountsPrefix(projectId, resolution);
    const iter = kv.list({
      start: prefix,
      end: [...prefix, before - COUNT_BUCKET_MS[resolution] + 1],
    }, { limit: 250 });
    for await (const entry of iter) {
      op.delete(entry.key);
      n++;
    }
  }
  if (n > 0) await op.commit();
  return n;
}

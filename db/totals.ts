/**
 * The service's totals as kept in KV, for the metrics endpoint: every
 * project's counters, the rejections naming no project, the pending batches
 * and dead letters, and the alert outbox. Read-only; it reads what the
 * consumer and the alert loop write, so every instance reports the whole
 * service (docs/metrics.md).
 *
 * @module
 */
import {
  acceptedCountKey,
  alertOutboxKey,
  batchIdOf,
  counterNameOf,
  deadLettersPrefix,
  pendingBatchesPrefix,
  rejectedCountsPrefix,
} from "./keys.ts";
import { listProjects } from "./projects.ts";
import { readUnknownProjectRejections } from "./stats.ts";
import { readUsage, type UsageDay } from "./usage.ts";
import { idTime } from "../domain/ids.ts";

/** Records a queue gauge counts at most: a gauge at this value means "at least". */
export const TOTALS_LIST_LIMIT = 1000;

/** What {@linkcode readTotals} returns. */
export interface ServiceTotals {
  /** Accepted entries by project id. */
  accepted: Map<string, number>;
  /** Rejected entries by project id, then reason. */
  rejected: Map<string, Map<string, number>>;
  /** Rejected entries naming no existing project, by reason. */
  rejectedGlobal: Map<string, number>;
  /** Batches waiting to be processed (at most {@linkcode TOTALS_LIST_LIMIT}). */
  pendingBatches: number;
  /** Age of the oldest pending batch in milliseconds; 0 when none. */
  oldestPendingAgeMs: number;
  /** Batches moved aside after repeated failures (at most the limit). */
  deadLetters: number;
  /** Alert deliveries waiting or being sent (at most the limit). */
  alertOutbox: number;
  /** Today's usage (UTC) by project id, with its per-day quota if any. */
  usageToday: Map<string, { day: UsageDay; quotaPerDay?: number }>;
}

async function countKeys(
  kv: Deno.Kv,
  prefix: Deno.KvKey,
): Promise<{ count: number; first: Deno.KvKey | null }> {
  let count = 0;
  let first: Deno.KvKey | null = null;
  const iter = kv.list({ prefix }, {
    limit: TOTALS_LIST_LIMIT,
    batchSize: 200,
  });
  for await (const entry of iter) {
    first ??= entry.key;
    count++;
  }
  return { count, first };
}

/**
 * Reads the service's totals at `now`.
 *
 * @example
 * ```ts
 * const totals = await readTotals(kv, Date.now());
 * totals.accepted.get(projectId); // entries accepted so far
 * ```
 */
export async function readTotals(
  kv: Deno.Kv,
  now: number,
): Promise<ServiceTotals> {
  const accepted = new Map<string, number>();
  const rejected = new Map<string, Map<string, number>>();
  const usageToday: ServiceTotals["usageToday"] = new Map();
  // Three reads per project: the counters of deleted projects are left out.
  await Promise.all((await listProjects(kv)).map(async ({ id, quota }) => {
    const [day] = await readUsage(kv, id, { now, days: 1 });
    if (day) {
      usageToday.set(id, {
        day,
        ...(quota?.perDay === undefined ? {} : { quotaPerDay: quota.perDay }),
      });
    }
    const count = await kv.get<Deno.KvU64>(acceptedCountKey(id));
    accepted.set(id, Number(count.value?.value ?? 0n));
    const reasons = new Map<string, number>();
    const prefix = rejectedCountsPrefix(id);
    for await (const entry of kv.list<Deno.KvU64>({ prefix })) {
      reasons.set(counterNameOf(entry.key), Number(entry.value.value));
    }
    if (reasons.size > 0) rejected.set(id, reasons);
  }));
  const [global, pending, dead, outbox] = await Promise.all([
    readUnknownProjectRejections(kv),
    countKeys(kv, pendingBatchesPrefix()),
    countKeys(kv, deadLettersPrefix()),
    countKeys(kv, alertOutboxKey()),
  ]);
  return {
    accepted,
    rejected,
    rejectedGlobal: new Map(Object.entries(global)),
    pendingBatches: pending.count,
    oldestPendingAgeMs: pending.first === null
      ? 0
      : Math.max(0, now - idTime(batchIdOf(pending.first))),
    deadLetters: dead.count,
    alertOutbox: outbox.count,
    usageToday,
  };
}

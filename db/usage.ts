/**
 * Usage per project and UTC day (docs/privacy.md#usage): entries accepted
 * (authenticated), stored, dropped by reason (`over_quota`, `sampled`,
 * `rejected`), and the characters of the stored entries' JSON lines
 * (`bytes`: bytes for ASCII text). `Deno.KvU64` sums added to the
 * consumer's result commit, so they are exact; at most six counters a day.
 *
 * KV applies no expiry to sums: {@linkcode deleteOldUsage} (run by the
 * merger beside the retention) deletes the days past {@linkcode USAGE_DAYS},
 * and deleting a project deletes them all.
 *
 * @module
 */
import type { AtomicWriter } from "./atomic.ts";
import { DAY_MS } from "../domain/entry.ts";
import { decodeUsageKey, usageKey, usagePrefix } from "./keys.ts";
import { dayOf } from "./quota.ts";

/** Days of usage kept, today included. */
export const USAGE_DAYS = 90;

/** The counters of one day. */
export const USAGE_NAMES = [
  "accepted",
  "stored",
  "over_quota",
  "sampled",
  "rejected",
  "bytes",
] as const;

/** One of {@linkcode USAGE_NAMES}. */
export type UsageName = typeof USAGE_NAMES[number];

/** A project's usage on one day. */
export type UsageDay = { day: string } & Record<UsageName, number>;

/**
 * Adds a project's counts to `op` under the UTC day of `now`; zero counts
 * add nothing.
 *
 * @example
 * ```ts
 * addUsage(op, projectId, Date.now(), { accepted: 3, stored: 2, sampled: 1 });
 * ```
 */
export function addUsage(
  op: AtomicWriter,
  projectId: string,
  now: number,
  counts: Partial<Record<UsageName, number>>,
): void {
  const day = dayOf(now);
  for (const name of USAGE_NAMES) {
    const n = counts[name] ?? 0;
    if (n > 0) op.sum(usageKey(projectId, day, name), BigInt(n));
  }
}

/**
 * A project's usage by day, oldest first, over the last `days` days (days
 * without any count left out).
 */
export async function readUsage(
  kv: Deno.Kv,
  projectId: string,
  options: { now: number; days?: number },
): Promise<UsageDay[]> {
  const from = dayOf(options.now) - ((options.days ?? USAGE_DAYS) - 1) * DAY_MS;
  const byDay = new Map<number, UsageDay>();
  const iter = kv.list<Deno.KvU64>({
    start: usageKey(projectId, from, ""),
    end: [...usagePrefix(projectId), Number.MAX_SAFE_INTEGER],
  });
  for await (const entry of iter) {
    const { day, name } = decodeUsageKey(entry.key);
    if (!(USAGE_NAMES as readonly string[]).includes(name)) continue;
    let row = byDay.get(day);
    if (!row) {
      row = {
        day: new Date(day).toISOString().slice(0, 10),
        accepted: 0,
        stored: 0,
        over_quota: 0,
        sampled: 0,
        rejected: 0,
        bytes: 0,
      };
      byDay.set(day, row);
    }
    row[name as UsageName] = Number(entry.value.value);
  }
  return [...byDay.values()];
}

/** Deletes a project's usage days past {@linkcode USAGE_DAYS}; returns how many keys. */
export async function deleteOldUsage(
  kv: Deno.Kv,
  projectId: string,
  now: number,
): Promise<number> {
  const before = dayOf(now) - (USAGE_DAYS - 1) * DAY_MS;
  const keys: Deno.KvKey[] = [];
  const iter = kv.list({
    start: usagePrefix(projectId),
    end: usageKey(projectId, before, ""),
  }, { limit: 500 });
  for await (const entry of iter) keys.push(entry.key);
  if (keys.length === 0) return 0;
  const op = kv.atomic();
  for (const key of keys) op.delete(key);
  await op.commit();
  return keys.length;
}

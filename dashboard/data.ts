/**
 * What the pages show that is not entries: the projects with their last
 * 24 hours (entries from the histogram counters, rejections from the ring
 * of recent ones) and the time of their last entry, a project's counters and
 * recent rejections, the global count of entries naming no project.
 * Counters and rejections are read by the same reader as `deno task stats`.
 *
 * @module
 */
import { DAY_MS } from "../domain/entry.ts";
import {
  readStats,
  readUnknownProjectRejections,
  RECENT_REJECTIONS,
  type Rejection,
} from "../db/stats.ts";
import { histogram, queryLogs } from "../db/query/mod.ts";
import { listProjects } from "../db/projects.ts";
import type { ProjectRow, RecentCount } from "./pages/projects.tsx";

/** Receipt time of a project's newest stored entry, or `null`. */
export async function lastEntryAt(
  kv: Deno.Kv,
  projectId: string,
): Promise<number | null> {
  const page = await queryLogs(kv, projectId, { limit: 1 });
  return page.records[0]?.receivedAt ?? null;
}

/**
 * A project's entries received in the last 24 hours before `now`: exact,
 * from the hour and minute counters (and the entries of the two partial
 * minutes at the ends), whatever the number of entries.
 *
 * @example
 * ```ts
 * const n = await entriesLastDay(kv, projectId, Date.now());
 * ```
 */
export async function entriesLastDay(
  kv: Deno.Kv,
  projectId: string,
  now: number,
): Promise<number> {
  const chart = await histogram(kv, projectId, {
    since: now - DAY_MS,
    until: now + 1,
    buckets: 1,
  });
  let total = 0;
  for (const { counts } of chart.buckets) {
    for (const n of Object.values(counts)) total += n;
  }
  return total;
}

/**
 * The rejections of the last 24 hours among a project's recent ones, by
 * reason.
 *
 * @example
 * ```ts
 * lastDayByReason(stats.recent, Date.now()); // { bad_origin: 3 }
 * ```
 */
export function lastDayByReason(
  recent: Rejection[],
  now: number,
): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const r of recent) {
    if (r.at >= now - DAY_MS) counts[r.reason] = (counts[r.reason] ?? 0) + 1;
  }
  return counts;
}

/**
 * Counts the rejections of the last 24 hours among a project's recent ones
 * (the last {@linkcode RECENT_REJECTIONS}). There are no rejection counters
 * by time: when all of the recent ones are from the last day, the count is
 * a lower bound.
 *
 * @example
 * ```ts
 * recentCount(stats.recent, Date.now()); // { count: 3, atLeast: false }
 * ```
 */
export function recentCount(recent: Rejection[], now: number): RecentCount {
  const count = Object.values(lastDayByReason(recent, now))
    .reduce((n, c) => n + c, 0);
  return {
    count,
    atLeast: count >= RECENT_REJECTIONS && count === recent.length,
  };
}

/**
 * Every project with its last 24 hours, all-time counters and last entry,
 * by name.
 *
 * @example
 * ```ts
 * const rows = await projectRows(kv, Date.now());
 * ```
 */
export async function projectRows(
  kv: Deno.Kv,
  now: number,
): Promise<ProjectRow[]> {
  const projects = await listProjects(kv);
  const rows = await Promise.all(projects.map(async (project) => {
    const [stats, last, entries] = await Promise.all([
      readStats(kv, project.id),
      lastEntryAt(kv, project.id),
      entriesLastDay(kv, project.id, now),
    ]);
    return {
      id: project.id,
      name: project.name,
      entriesDay: entries,
      rejectedDay: recentCount(stats.recent, now),
      accepted: stats.accepted,
      rejected: Object.values(stats.rejected).reduce((n, c) => n + c, 0),
      lastEntryAt: last,
    };
  }));
  return rows.sort((a, b) =>
    a.name.localeCompare(b.name) || (a.id < b.id ? -1 : 1)
  );
}

/** Entries that named no existing project, all time. */
export async function unknownProjectCount(kv: Deno.Kv): Promise<number> {
  const counts = await readUnknownProjectRejections(kv);
  return Object.values(counts).reduce((n, c) => n + c, 0);
}

export { readStats };

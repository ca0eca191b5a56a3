/**
 * What the pages show that is not entries: the projects with their counters
 * and the time of their last entry, a project's counters and recent
 * rejections, the global count of entries naming no project. Counters and
 * rejections are read by the same reader as `deno task stats`.
 *
 * @module
 */
import { readStats } from "../db/stats.ts";
import { globalRejectedCountsPrefix } from "../db/keys.ts";
import { listLogs } from "../db/query/mod.ts";
import { listProjects } from "../db/projects.ts";
import type { ProjectRow } from "./pages/projects.tsx";

/** Receipt time of a project's newest stored entry, or `null`. */
export async function lastEntryAt(
  kv: Deno.Kv,
  projectId: string,
): Promise<number | null> {
  for await (
    const record of listLogs(kv, projectId, { reverse: true, limit: 1 })
  ) {
    return record.receivedAt;
  }
  return null;
}

/**
 * Every project with its counters and last entry, by name.
 *
 * @example
 * ```ts
 * const rows = await projectRows(kv);
 * ```
 */
export async function projectRows(kv: Deno.Kv): Promise<ProjectRow[]> {
  const projects = await listProjects(kv);
  const rows = await Promise.all(projects.map(async (project) => {
    const [stats, last] = await Promise.all([
      readStats(kv, project.id),
      lastEntryAt(kv, project.id),
    ]);
    return {
      id: project.id,
      name: project.name,
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
  let total = 0;
  for await (
    const entry of kv.list<Deno.KvU64>({ prefix: globalRejectedCountsPrefix() })
  ) {
    total += Number(entry.value.value);
  }
  return total;
}

export { readStats };

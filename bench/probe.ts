/**
 * The probes of the steady-state benchmark (bench/steady.ts): read from the
 * bench's own handle on the database file while the load runs, as the CLI
 * would.
 *
 * @module
 */
import { DatabaseSync } from "node:sqlite";
import { readBacklog } from "../db/backlog.ts";
import { parseQuery, queryLogs } from "../db/query/mod.ts";
import { readStats } from "../db/stats.ts";
import { serverMemory } from "./process.ts";
import type { ServerProcess } from "./server.ts";

/** One probe's readings. */
export interface Probe {
  /** Seconds since the start of the run. */
  t: number;
  phase: string;
  accepted: number;
  queuedEntries: number;
  openChunks: number;
  unmergedEntries: number;
  oldestUnmergedS: number | null;
  /** Query times, ms. */
  queries: Record<string, number>;
  liveBytesPerRaw: number;
  fileBytesPerRaw: number;
  rssMiB: number;
}

/** Bytes of the SQLite pages in use in the file at `path`. */
function pages(path: string): number {
  const db = new DatabaseSync(path, { readOnly: true });
  try {
    const one = (sql: string) =>
      Number(Object.values(db.prepare(sql).get() ?? {})[0] ?? 0);
    return (one("PRAGMA page_count") - one("PRAGMA freelist_count")) *
      one("PRAGMA page_size");
  } finally {
    db.close();
  }
}

/** What a probe reads from, and what it is to know. */
export interface ProbeContext {
  kv: Deno.Kv;
  kvPath: string;
  projectId: string;
  server: ServerProcess;
  /** The queries timed, by name. */
  queries: Record<string, string>;
  rawPerEntry: number;
  /** When the run began (`performance.now()`). */
  began: number;
}

/**
 * Reads the backlog, times the queries, and reads the sizes and the RSS; the
 * probe is of the phase `phase()` names once it has read all that.
 */
export async function probeOnce(
  context: ProbeContext,
  phase: () => string,
): Promise<Probe> {
  const { kv, projectId } = context;
  const now = Date.now();
  const [stats, backlog] = await Promise.all([
    readStats(kv, projectId),
    readBacklog(kv, projectId, now),
  ]);
  const times: Record<string, number> = {};
  for (const [name, q] of Object.entries(context.queries)) {
    const start = performance.now();
    await queryLogs(kv, projectId, { filter: parseQuery(q), limit: 100 });
    times[name] = Math.round(performance.now() - start);
  }
  const raw = Math.max(1, stats.accepted * context.rawPerEntry);
  const file = (await Deno.stat(context.kvPath)).size;
  const memory = await serverMemory(context.server.child.pid, "main.ts");
  return {
    t: Math.round((performance.now() - context.began) / 1000),
    phase: phase(),
    accepted: stats.accepted,
    queuedEntries: backlog.queued.entries,
    openChunks: backlog.openChunks,
    unmergedEntries: backlog.unmerged.entries,
    oldestUnmergedS: backlog.unmerged.oldestAgeMs === null
      ? null
      : Math.round(backlog.unmerged.oldestAgeMs / 100) / 10,
    queries: times,
    liveBytesPerRaw: Math.round(pages(context.kvPath) / raw * 1000) / 1000,
    fileBytesPerRaw: Math.round(file / raw * 1000) / 1000,
    rssMiB: Math.round((memory?.vmRssKiB ?? 0) / 102.4) / 10,
  };
}

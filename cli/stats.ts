/**
 * `deno task stats ID`: how many entries a project accepted, how many it
 * rejected and why, and its most recent rejections (reason, time, origin or
 * app id) — the place to find out why an entry did not appear. Reads the
 * counters and the ring of recent rejections the consumer writes
 * (db/stats.ts); `--global` shows the rejections of entries naming no
 * existing project, which are counted apart.
 *
 * @module
 */
import {
  type BacklogPart,
  readBacklog,
  type StorageBacklog,
} from "../db/backlog.ts";
import type { Project } from "../db/projects.ts";
import {
  type ProjectStats,
  readStats,
  readUnknownProjectRejections,
  type Rejection,
} from "../db/stats.ts";
import {
  booleanFlag,
  type CommandContext,
  type CommandSpec,
  projectArgument,
  runCommand,
  takePositionals,
  useColor,
} from "./command.ts";
import { printResult } from "./output.ts";
import { formatLevel, formatTable, formatTime, inert } from "./format.ts";
import { senderJson } from "../domain/entry.ts";

const USAGE = `Show a project's counters and its recent rejections.

Usage: deno task stats ID [--json]
       deno task stats --global [--json]

Entries are authenticated after they are queued, so a refused entry still got
"200 queued": its rejection is counted here, with the reason and the origin or
app id it came with. Reasons: unknown_project, bad_origin, unknown_appid,
bad_signature, stale_timestamp, replayed, no_credentials, unknown_level;
and for entries authenticated but not stored, over_quota and sampled
(deno task usage).

Options:
  --global    Rejections of entries naming a project that does not exist
  --json      Print {"accepted":N,"acceptedOnReplay":N,"rejected":{"<reason>":N},
              "recent":[...],"backlog":{"queued":{...},"unmerged":{...}}}

Backlog: "queued" counts entries accepted by every project and not yet
stored (pending batches); "unmerged" counts this project's entries stored in
small chunks not yet merged into larger ones. Both are searchable or about to
be; a backlog that keeps growing means storage is behind, and the endpoint
then answers 503 until it catches up.
  -h, --help  Show this help`;

const COMMAND: CommandSpec = {
  name: "stats",
  usage: USAGE,
  flags: { json: { type: "boolean" }, global: { type: "boolean" } },
};

function rejectionJson(r: Rejection): Record<string, unknown> {
  return {
    entryId: r.entryId,
    at: new Date(r.at).toISOString(),
    reason: r.reason,
    level: r.level,
    ...senderJson(r),
  };
}

function backlogJson(part: BacklogPart, unit: string): Record<string, unknown> {
  return {
    [unit]: part.units,
    entries: part.entries,
    oldestAgeSeconds: part.oldestAgeMs === null
      ? null
      : Math.round(part.oldestAgeMs / 100) / 10,
  };
}

function backlogText(part: BacklogPart): string {
  if (part.entries === 0 && part.units === 0) return "0";
  const age = part.oldestAgeMs === null
    ? ""
    : `, oldest ${(part.oldestAgeMs / 1000).toFixed(1)} s`;
  return `${part.entries}${age}`;
}

function counterRows(counts: Record<string, number>): string[][] {
  return Object.entries(counts).sort(([a], [b]) => a < b ? -1 : 1)
    .map(([reason, n]) => [`  ${reason}`, String(n)]);
}

/** The counters and recent rejections of `project`, as lines for people. */
function statsLines(
  ctx: CommandContext,
  project: Project,
  stats: ProjectStats,
  backlog: StorageBacklog,
): string[] {
  const total = Object.values(stats.rejected).reduce((a, b) => a + b, 0);
  const lines = [
    `Project "${inert(project.name)}" (${project.id})`,
    "",
    formatTable([
      ["Accepted", String(stats.accepted)],
      ...(stats.replayed > 0
        ? [["  of which replayed", String(stats.replayed)]]
        : []),
      ["Rejected", String(total)],
      ...counterRows(stats.rejected),
      ["Not yet stored (all projects)", backlogText(backlog.queued)],
      ["Not yet merged", backlogText(backlog.unmerged)],
    ]),
    "",
  ];
  if (stats.recent.length === 0) return [...lines, "No recent rejections"];
  const color = useColor(ctx);
  return [
    ...lines,
    `Recent rejections, newest first:`,
    "",
    formatTable([
      ["TIME", "REASON", "LEVEL", "ORIGIN / APP ID", "ENTRY"],
      ...stats.recent.map((r) => [
        formatTime(r.at),
        r.reason,
        formatLevel(r.level, color),
        inert(
          [r.origin, r.appid].filter((v) => v !== undefined).join(" "),
        ) || "-",
        r.entryId,
      ]),
    ]),
  ];
}

/**
 * `deno task stats ID …`.
 *
 * @example
 * ```ts
 * const code = await statsCommand({ ...ctx, args: [projectId, "--json"] });
 * ```
 */
export function statsCommand(ctx: CommandContext): Promise<number> {
  return runCommand(ctx, COMMAND, async (parsed) => {
    if (booleanFlag(parsed, "global")) {
      takePositionals("stats --global", parsed.positionals, []);
      const rejected = await readUnknownProjectRejections(ctx.kv);
      const total = Object.values(rejected).reduce((a, b) => a + b, 0);
      return printResult(ctx, parsed, {
        json: { rejected },
        text: formatTable([
          ["Rejected (no such project)", String(total)],
          ...counterRows(rejected),
        ]),
      });
    }
    const project = await projectArgument(ctx, "stats", parsed);
    const stats = await readStats(ctx.kv, project.id);
    const backlog = await readBacklog(ctx.kv, project.id, ctx.now());
    return printResult(ctx, parsed, {
      json: {
        accepted: stats.accepted,
        acceptedOnReplay: stats.replayed,
        rejected: stats.rejected,
        recent: stats.recent.map(rejectionJson),
        backlog: {
          queued: backlogJson(backlog.queued, "batches"),
          unmerged: backlogJson(backlog.unmerged, "chunks"),
        },
      },
      text: statsLines(ctx, project, stats, backlog),
    });
  });
}

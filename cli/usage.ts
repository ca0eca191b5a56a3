/**
 * `deno task usage [PROJECT] [--json]`: per project and UTC day, entries
 * accepted, stored, dropped by reason, bytes stored and the quota used
 * (docs/privacy.md#usage). Reads the usage counters (db/usage.ts).
 *
 * @module
 */
import { projectIdOf } from "./resolve.ts";
import { getProject, listProjects, type Project } from "../db/projects.ts";
import { readUsage, USAGE_DAYS, type UsageDay } from "../db/usage.ts";
import {
  booleanFlag,
  type CommandContext,
  type CommandSpec,
  countFlag,
  println,
  runCommand,
  takePositionals,
} from "./command.ts";
import { formatTable, inert } from "./format.ts";
import { printJsonLines } from "./output.ts";

const USAGE = `Show what projects sent and stored, by UTC day.

Usage: deno task usage [PROJECT] [--days N] [--json]

Without PROJECT: every project. Columns: entries accepted (authenticated),
stored, dropped over the quota, sampled in a spike, rejected (see deno task
stats), characters of the stored entries' JSON (bytes for ASCII text), and
the share of the per-day quota used. Days are kept ${USAGE_DAYS} days.

Options:
  --days N    The last N days, today included (default 7, at most ${USAGE_DAYS})
  --json      One JSON object per project and day: project, name, day,
              accepted, stored, dropped {over_quota, sampled, rejected},
              bytes, quotaPerDay, quotaUsed
  -h, --help  Show this help`;

const COMMAND: CommandSpec = {
  name: "usage",
  usage: USAGE,
  flags: { json: { type: "boolean" }, days: { type: "string" } },
};

/** One row of `usage --json`. */
export function usageJson(
  project: Project,
  day: UsageDay,
): Record<string, unknown> {
  const perDay = project.quota?.perDay;
  return {
    project: project.id,
    name: project.name,
    day: day.day,
    accepted: day.accepted,
    stored: day.stored,
    dropped: {
      over_quota: day.over_quota,
      sampled: day.sampled,
      rejected: day.rejected,
    },
    bytes: day.bytes,
    quotaPerDay: perDay ?? null,
    quotaUsed: perDay === undefined
      ? null
      : Math.round(Math.min(day.stored, perDay) / perDay * 1000) / 1000,
  };
}

/**
 * `deno task usage …`.
 *
 * @example
 * ```ts
 * await usageCommand({ ...ctx, args: [projectId, "--json"] });
 * ```
 */
export function usageCommand(ctx: CommandContext): Promise<number> {
  return runCommand(ctx, COMMAND, async (parsed) => {
    const [named] = takePositionals("usage", parsed.positionals, [
      "PROJECT?",
    ]);
    const days = countFlag(parsed, "days", { fallback: 7, max: USAGE_DAYS });
    const projects = named === undefined
      ? await listProjects(ctx.kv)
      : [(await getProject(ctx.kv, await projectIdOf(ctx.kv, named)))!];
    const rows: Record<string, unknown>[] = [];
    for (const project of projects) {
      const usage = await readUsage(ctx.kv, project.id, {
        now: ctx.now(),
        days,
      });
      for (const day of usage) rows.push(usageJson(project, day));
    }
    if (booleanFlag(parsed, "json")) {
      return printJsonLines(ctx, rows, (row) => row);
    }
    if (rows.length === 0) {
      println(ctx, "No usage counted in these days.");
      return 0;
    }
    const table = [[
      "PROJECT",
      "DAY",
      "ACCEPTED",
      "STORED",
      "OVER QUOTA",
      "SAMPLED",
      "REJECTED",
      "BYTES",
      "QUOTA USED",
    ]];
    for (const row of rows) {
      const dropped = row.dropped as Record<string, number>;
      const used = row.quotaUsed as number | null;
      table.push([
        inert(String(row.name)),
        String(row.day),
        String(row.accepted),
        String(row.stored),
        String(dropped.over_quota),
        String(dropped.sampled),
        String(dropped.rejected),
        String(row.bytes),
        used === null
          ? "-"
          : `${Math.round(used * 100)}% of ${row.quotaPerDay}`,
      ]);
    }
    println(ctx, formatTable(table));
    return 0;
  });
}

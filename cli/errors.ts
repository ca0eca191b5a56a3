/**
 * `deno task errors PROJECT`: a project's error groups, as the dashboard's
 * errors page shows them (db/error_groups.ts): per group its count, first
 * and last seen, the last 24 hours as a sparkline, whether it is new, its
 * title and top frame, and the query that lists its entries
 * (`deno task logs PROJECT --query '…'`).
 *
 * @module
 */
import {
  type ErrorGroup,
  groupCursor,
  GroupCursorError,
  listGroups,
  MAX_LIST_GROUPS,
} from "../db/error_groups.ts";
import {
  booleanFlag,
  type CommandContext,
  type CommandSpec,
  println,
  runCommand,
  stringFlag,
  takePositionals,
  UsageError,
  useColor,
} from "./command.ts";
import { formatLevel, formatTable, formatTime, inert } from "./format.ts";
import { resolveProject } from "./resolve.ts";
import { DAY_MS } from "../domain/entry.ts";

const USAGE = `Show a project's errors, grouped.

Usage: deno task errors PROJECT [--limit N] [--after CURSOR] [--json]

PROJECT is a project's id or name. Entries of level error and critical are
grouped by their title (numbers, ids, hex and quoted text set aside) and the
top frame of data.stack. Groups first seen in the last 24 hours are new.
List a group's entries with: deno task logs PROJECT --query 'fingerprint:HASH'

Options:
  --limit N   Groups shown at most, the most recently seen first (default 50,
              at most ${MAX_LIST_GROUPS})
  --after C   The groups seen before the one of cursor C: the next page (the
              cursor is printed under a full page, and in each JSON line)
  --json      Print one JSON object per group and line: id, fingerprint,
              title, topFrame, level, count, firstSeen, lastSeen, new,
              hourly, cursor, ...
  -h, --help  Show this help`;

const COMMAND: CommandSpec = {
  name: "errors",
  usage: USAGE,
  flags: {
    json: { type: "boolean" },
    limit: { type: "string" },
    after: { type: "string" },
  },
};

const BLOCKS = "▁▂▃▄▅▆▇█";

/**
 * Hourly counts as one line of block characters; a space for an empty hour.
 *
 * @example
 * ```ts
 * sparkline([0, 1, 4]); // " ▂█"
 * ```
 */
export function sparkline(counts: number[]): string {
  const max = Math.max(1, ...counts);
  return counts.map((n) =>
    n === 0 ? " " : BLOCKS[Math.min(7, Math.floor((n / max) * 7.999))]
  ).join("");
}

function groupJson(group: ErrorGroup): Record<string, unknown> {
  return {
    id: group.id,
    fingerprint: group.fingerprint,
    title: group.title,
    topFrame: group.topFrame,
    level: group.level,
    count: group.count,
    firstSeen: new Date(group.firstSeen).toISOString(),
    lastSeen: new Date(group.lastSeen).toISOString(),
    new: group.isNew,
    hourly: group.hourly,
    sampleId: group.sampleId,
    sampleTitle: group.sampleTitle,
    query: `fingerprint:${group.fingerprint}`,
    cursor: groupCursor(group),
  };
}

function limitOf(text: string): number {
  const limit = Number(text);
  if (!/^\d{1,6}$/.test(text) || limit < 1 || limit > MAX_LIST_GROUPS) {
    throw new UsageError(
      `Cannot read --limit "${text}": expected a whole number from 1 to ${MAX_LIST_GROUPS}`,
    );
  }
  return limit;
}

/**
 * `deno task errors PROJECT …`.
 *
 * @example
 * ```ts
 * const code = await errorsCommand({ ...ctx, args: ["web shop", "--json"] });
 * ```
 */
export function errorsCommand(ctx: CommandContext): Promise<number> {
  return runCommand(ctx, COMMAND, async (parsed) => {
    const [named] = takePositionals("errors", parsed.positionals, ["PROJECT"]);
    const limit = limitOf(stringFlag(parsed, "limit") ?? "50");
    const after = stringFlag(parsed, "after");
    const project = await resolveProject(ctx.kv, named);
    let groups: ErrorGroup[];
    try {
      groups = await listGroups(ctx.kv, project.id, ctx.now(), {
        limit,
        retentionMs: project.retentionDays * DAY_MS,
        ...(after === undefined ? {} : { after }),
      });
    } catch (error) {
      if (error instanceof GroupCursorError) {
        throw new UsageError(`Cannot read --after: ${error.message}`);
      }
      throw error;
    }
    if (booleanFlag(parsed, "json")) {
      for (const group of groups) {
        println(ctx, JSON.stringify(groupJson(group)));
      }
      return 0;
    }
    if (groups.length === 0) {
      println(
        ctx,
        after === undefined
          ? `No errors in project "${inert(project.name)}"`
          : `No groups seen earlier in project "${inert(project.name)}"`,
      );
      return 0;
    }
    const color = useColor(ctx);
    const rows = [[
      "COUNT",
      "LAST 24H",
      "FIRST SEEN",
      "LAST SEEN",
      "LEVEL",
      "ERROR",
      "FINGERPRINT",
    ]];
    for (const g of groups) {
      const title = (g.isNew ? "[new] " : "") + inert(g.title || "(no title)");
      rows.push([
        String(g.count),
        sparkline(g.hourly),
        formatTime(g.firstSeen),
        formatTime(g.lastSeen),
        formatLevel(g.level, color),
        g.topFrame === null ? title : `${title}  at ${inert(g.topFrame)}`,
        g.fingerprint,
      ]);
    }
    println(ctx, `Errors of project "${inert(project.name)}" (${project.id})`);
    println(ctx);
    println(ctx, formatTable(rows));
    println(ctx);
    println(
      ctx,
      "Times in UTC. Entries of a group: deno task logs PROJECT --query 'fingerprint:FINGERPRINT'",
    );
    if (groups.length === limit) {
      println(
        ctx,
        `Groups seen earlier: deno task errors PROJECT --after ${
          groupCursor(groups.at(-1)!)
        }`,
      );
    }
    return 0;
  });
}

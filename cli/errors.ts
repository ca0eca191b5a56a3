/**
 * `deno task errors PROJECT`: a project's error groups, as the dashboard's
 * errors page shows them (db/error_groups.ts): per group its count, users,
 * first and last seen, the last 24 hours as a sparkline, whether it is new,
 * its title and top frame, and the query that lists its entries
 * (`deno task logs PROJECT --query '…'`). `deno task errors PROJECT
 * FINGERPRINT`: one group in detail, as its page shows it (error_group.ts).
 *
 * @module
 */
import {
  type ErrorGroup,
  GroupCursorError,
  MAX_LIST_GROUPS,
} from "../db/error_group_reads.ts";
import {
  type GroupTriage,
  listTriagedGroups,
  STATUS_FILTERS,
  type StatusFilter,
  type TriagedGroup,
} from "../db/error_group_triage.ts";
import type { Project } from "../db/projects.ts";
import { TRIAGE_ACTIONS, triageCommand, triageJson } from "./errors_triage.ts";
import {
  groupTopFrame,
  SourceMapResolver,
  type TopFrame,
} from "../db/symbolicate.ts";
import {
  booleanFlag,
  type CommandContext,
  type CommandSpec,
  flags,
  oneOfFlag,
  println,
  runCommand,
  stringFlag,
  takePositionals,
  UsageError,
  useColor,
} from "./command.ts";
import {
  formatLevel,
  formatTable,
  formatTime,
  inert,
  sparkline,
} from "./format.ts";
import { jsonText } from "./inert.ts";

export { sparkline };
import { resolveProject } from "./resolve.ts";
import { DAY_MS } from "../domain/entry.ts";
import { type GroupUsers, readGroupUsers } from "../db/error_group_detail.ts";
import { printGroupDetail } from "./error_group.ts";

const USAGE = `Show a project's errors, grouped.

Usage: deno task errors PROJECT [--status S] [--limit N] [--after CURSOR] [--json]
       deno task errors PROJECT FINGERPRINT [--json]
       deno task errors resolve PROJECT FINGERPRINT [--in-release R]
       deno task errors ignore PROJECT FINGERPRINT [--until DATE | --until-count N]
       deno task errors reopen PROJECT FINGERPRINT
       deno task errors assign PROJECT FINGERPRINT EMAIL|none

PROJECT is a project's id or name. Entries of level error and critical are
grouped by their title (numbers, ids, hex and quoted text set aside) and the
top frame of data.stack. Groups first seen in the last 24 hours are new.
List a group's entries with: deno task logs PROJECT --query 'fingerprint:HASH'
With a FINGERPRINT, one group in detail: its count, users affected and the top
ones, environments, releases, entries per hour (24 h) and per day (14 days) and
its latest entry with its stack, counted from its entries of the last 14 days.

A group is unresolved, resolved (in a release R: only an entry of a release
after R makes it regressed; without one, any new entry), ignored (forever,
--until a date, or --until-count N more entries) or regressed; it may be
assigned to a dashboard account. Changes go to the project's audit log
(docs/errors.md).

Options:
  --status S  Only groups of status S: unresolved (with regressed ones),
              resolved, ignored, regressed or all (default all)
  --limit N   Groups shown at most, the most recently seen first (default 50,
              at most ${MAX_LIST_GROUPS})
  --after C   The groups seen before the one of cursor C: the next page (the
              cursor is printed under a full page, and in each JSON line)
  --json      Print one JSON object per group and line: id, fingerprint,
              title, count, users, firstSeen, lastSeen, status,
              firstRelease, lastRelease, frame, assignee, topFrame, level,
              new, hourly, cursor, ...; with a FINGERPRINT, one object
  --in-release R, --until DATE, --until-count N
              Of resolve and ignore, as above
  -h, --help  Show this help`;

const COMMAND: CommandSpec = {
  name: "errors",
  usage: USAGE,
  flags: {
    ...flags({
      string: [
        "limit",
        "after",
        "status",
        "in-release",
        "until",
        "until-count",
      ],
      boolean: ["json"],
    }),
  },
};

function groupJson(
  group: ErrorGroup,
  users: GroupUsers,
  triage: GroupTriage,
  frame: TopFrame | null,
): Record<string, unknown> {
  return {
    id: group.id,
    fingerprint: group.fingerprint,
    title: group.title,
    count: group.count,
    users: users.users.get(group.fingerprint) ?? 0,
    ...(users.searchedTo === undefined ? {} : { usersAtLeast: true }),
    firstSeen: new Date(group.firstSeen).toISOString(),
    lastSeen: new Date(group.lastSeen).toISOString(),
    ...triageJson(group, triage, frame),
    topFrame: group.topFrame,
    level: group.level,
    new: group.isNew,
    hourly: group.hourly,
    sampleId: group.sampleId,
    sampleTitle: group.sampleTitle,
    query: `fingerprint:${group.fingerprint}`,
    cursor: `${group.lastSeen}.${group.id}`,
  };
}

function statusOf(text: string | undefined): StatusFilter {
  return oneOfFlag("status", text ?? "all", STATUS_FILTERS);
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

/** The table of groups: a heading, then a row a group. */
function groupRows(
  groups: { group: ErrorGroup; triage: GroupTriage }[],
  users: GroupUsers,
  color: boolean,
): string[][] {
  const atLeast = users.searchedTo === undefined ? "" : "≥";
  const rows = [[
    "COUNT",
    "LAST 24H",
    "FIRST SEEN",
    "LAST SEEN",
    "USERS",
    "STATUS",
    "LEVEL",
    "ERROR",
    "FINGERPRINT",
  ]];
  for (const { group: g, triage } of groups) {
    const title = (g.isNew ? "[new] " : "") + inert(g.title || "(no title)");
    rows.push([
      String(g.count),
      sparkline(g.hourly),
      formatTime(g.firstSeen),
      formatTime(g.lastSeen),
      `${atLeast}${users.users.get(g.fingerprint) ?? 0}`,
      triage.status +
      (triage.assignee === null ? "" : ` (${inert(triage.assignee)})`),
      formatLevel(g.level, color),
      g.topFrame === null ? title : `${title}  at ${inert(g.topFrame)}`,
      g.fingerprint,
    ]);
  }
  return rows;
}

/**
 * `errors --json`: a line per group, its frame resolved through its
 * release's maps (one resolver for the listing: each map is read once).
 */
async function printJson(
  ctx: CommandContext,
  projectId: string,
  groups: { group: ErrorGroup; triage: GroupTriage }[],
  users: GroupUsers,
): Promise<number> {
  const resolver = new SourceMapResolver(ctx.kv, { indexTtlMs: 0 });
  for (const { group, triage } of groups) {
    const frame = await groupTopFrame(
      ctx.kv,
      projectId,
      group.sampleId,
      resolver,
    );
    println(ctx, jsonText(groupJson(group, users, triage, frame)));
  }
  return 0;
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
    if (TRIAGE_ACTIONS.includes(parsed.positionals[0] ?? "")) {
      return await triageCommand(ctx, parsed);
    }
    const [named, fingerprint] = takePositionals(
      "errors",
      parsed.positionals,
      ["PROJECT", "FINGERPRINT?"],
    );
    const limit = limitOf(stringFlag(parsed, "limit") ?? "50");
    const after = stringFlag(parsed, "after");
    const status = statusOf(stringFlag(parsed, "status"));
    const project = await resolveProject(ctx.kv, named);
    if (fingerprint !== undefined) {
      return await printGroupDetail(ctx, project, fingerprint, {
        json: booleanFlag(parsed, "json"),
      });
    }
    let listed;
    try {
      listed = await listTriagedGroups(ctx.kv, project.id, ctx.now(), {
        status,
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
    const groups = listed.groups;
    const users = await readGroupUsers(
      ctx.kv,
      project.id,
      groups.map((g) => g.group),
      {},
    );
    if (booleanFlag(parsed, "json")) {
      await printJson(ctx, project.id, groups, users);
      // No line holds a cursor: the way on goes to stderr.
      if (groups.length === 0 && listed.next !== null) {
        ctx.stderr(earlierHint(listed.next) + "\n");
      }
      return 0;
    }
    printList(ctx, project, listed, users, after !== undefined);
    return 0;
  });
}

/** How to list the groups seen before those of a listing. */
function earlierHint(next: string): string {
  return `Groups seen earlier: deno task errors PROJECT --after ${next}`;
}

/**
 * `errors PROJECT` for people: the table, or what an empty listing read,
 * and how to page on while groups seen earlier remain unread (a status
 * filter may find none among the {@linkcode MAX_LIST_GROUPS} read).
 */
function printList(
  ctx: CommandContext,
  project: Project,
  listed: { groups: TriagedGroup[]; next: string | null },
  users: GroupUsers,
  paged: boolean,
): void {
  const { groups, next } = listed;
  const name = inert(project.name);
  const read = MAX_LIST_GROUPS.toLocaleString("en-US");
  if (groups.length === 0) {
    println(
      ctx,
      next !== null
        ? paged
          ? `None among the next ${read} groups seen earlier in project "${name}"`
          : `None among the ${read} most recently seen groups of project "${name}"`
        : paged
        ? `No groups seen earlier in project "${name}"`
        : `No errors in project "${name}"`,
    );
  } else {
    const rows = groupRows(groups, users, useColor(ctx));
    println(ctx, `Errors of project "${name}" (${project.id})`);
    println(ctx);
    println(ctx, formatTable(rows));
    println(ctx);
    println(
      ctx,
      "Times in UTC. Entries of a group: deno task logs PROJECT --query 'fingerprint:FINGERPRINT'",
    );
  }
  if (next !== null) println(ctx, earlierHint(next));
}

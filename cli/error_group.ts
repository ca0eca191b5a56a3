/**
 * `deno task errors PROJECT FINGERPRINT [--json]`: one error group in
 * detail, as its dashboard page shows it (db/error_group_detail.ts): count,
 * users affected, first and last seen, entries per hour and per day, the
 * top users, environments, releases, and the latest entry with its stack.
 *
 * @module
 */
import {
  type GroupDetail,
  readGroupDetail,
  type ValueCount,
} from "../db/error_group_detail.ts";
import type { Project } from "../db/projects.ts";
import { type GroupTriage, readTriage } from "../db/error_group_triage.ts";
import { fingerprintArg, triageJson } from "./errors_triage.ts";
import { stackLines } from "../domain/fingerprint.ts";
import { DAY_MS, type ResolvedStack } from "../domain/entry.ts";
import { shownFrameLines, unresolvedReasons } from "../domain/symbolicate.ts";
import { shownStack, topOfFrames } from "../db/symbolicate.ts";
import { type CommandContext, println } from "./command.ts";
import { formatTable, formatTime, inert, sparkline } from "./format.ts";
import { jsonText } from "./inert.ts";

const HOUR_MS = 3_600_000;

function iso(ms: number): string {
  return new Date(ms).toISOString();
}

/** Counts with the start of their bucket, oldest first. */
function buckets(counts: number[], end: number, ms: number) {
  return counts.map((count, i) => ({
    time: iso(end - (counts.length - i) * ms),
    count,
  }));
}

function valueRows(path: string, rows: ValueCount[]) {
  return rows.map((row) => ({ [path]: row.value, count: row.count }));
}

/** The JSON object of a group in detail. */
export function detailJson(
  detail: GroupDetail,
  now: number,
  stack: ResolvedStack | null = null,
  triage?: GroupTriage,
): Record<string, unknown> {
  const { group, latest } = detail;
  const hourEnd = Math.floor(now / HOUR_MS) * HOUR_MS + HOUR_MS;
  const dayEnd = Math.floor(now / DAY_MS) * DAY_MS + DAY_MS;
  const byFirst = [...detail.releases].sort((a, b) =>
    a.firstSeen - b.firstSeen
  );
  const partial = detail.searchedTo !== undefined;
  return {
    fingerprint: detail.fingerprint,
    title: group?.title ?? null,
    topFrame: group?.topFrame ?? null,
    count: group?.count ?? null,
    users: detail.users,
    usersAtLeast: detail.usersCapped || partial,
    firstSeen: group === null ? null : iso(group.firstSeen),
    lastSeen: group === null ? null : iso(group.lastSeen),
    ...(group === null
      ? { status: null, frame: null, assignee: null }
      : triageJson(
        group,
        triage,
        stack === null ? null : topOfFrames(stack.frames),
      )),
    // Groups stored before their releases were kept: from the entries.
    firstRelease: group?.firstRelease ??
      byFirst.find((r) => r.value !== null)?.value ?? null,
    lastRelease: group?.lastRelease ??
      detail.releases.find((r) => r.value !== null)?.value ?? null,
    hourly: buckets(detail.hourly, hourEnd, HOUR_MS),
    daily: buckets(detail.daily, dayEnd, DAY_MS),
    topUsers: valueRows("context.userId", detail.topUsers),
    environments: valueRows("context.environment", detail.environments),
    releases: detail.releases.map((r) => ({
      "context.release": r.value,
      count: r.count,
      firstSeen: iso(r.firstSeen),
      lastSeen: iso(r.lastSeen),
    })),
    latest: latest === null ? null : {
      id: latest.id,
      receivedAt: iso(latest.receivedAt),
      level: latest.level,
      data: latest.data,
      context: latest.context,
    },
    entriesRead: detail.total,
    partial,
    ...(partial ? { searchedTo: iso(detail.searchedTo!) } : {}),
    query: `level>=error fingerprint:${detail.fingerprint}`,
  };
}

function valueTable(head: string, rows: ValueCount[]): string {
  return formatTable([
    [head, "ENTRIES"],
    ...rows.map((r) => [inert(r.value ?? "(none)"), String(r.count)]),
  ]);
}

/** The group in detail as text. */
function printDetail(
  ctx: CommandContext,
  detail: GroupDetail,
  stack: ResolvedStack | null,
  triage: GroupTriage | undefined,
): void {
  const { group, latest } = detail;
  const partial = detail.searchedTo !== undefined;
  const atLeast = detail.usersCapped || partial ? "≥ " : "";
  println(ctx, `Error ${detail.fingerprint}: ${inert(group?.title ?? "")}`);
  if (group?.topFrame) println(ctx, `  at ${inert(group.topFrame)}`);
  println(ctx);
  if (triage !== undefined) {
    const assignee = triage.assignee === null
      ? ""
      : `, assigned to ${inert(triage.assignee)}`;
    const inRelease = triage.triage?.state === "resolved" &&
        triage.triage.inRelease !== undefined
      ? ` (resolved in ${inert(triage.triage.inRelease)})`
      : "";
    println(ctx, `Status      ${triage.status}${inRelease}${assignee}`);
  }
  println(ctx, `Count       ${group?.count ?? "—"}`);
  println(ctx, `Users       ${atLeast}${detail.users}`);
  if (group !== null) {
    println(ctx, `First seen  ${formatTime(group.firstSeen)}`);
    println(ctx, `Last seen   ${formatTime(group.lastSeen)}`);
  }
  println(ctx, `Last 24h    |${sparkline(detail.hourly)}|`);
  println(ctx, `Last 14d    |${sparkline(detail.daily)}|`);
  if (partial) {
    println(
      ctx,
      `Partial: counted the entries since ${
        formatTime(detail.searchedTo!)
      } only (the time to read ran out)`,
    );
  }
  println(ctx);
  println(ctx, valueTable("TOP USERS", detail.topUsers));
  println(ctx);
  println(ctx, valueTable("ENVIRONMENT", detail.environments));
  println(ctx);
  println(
    ctx,
    formatTable([
      ["RELEASE", "ENTRIES", "FIRST SEEN", "LAST SEEN"],
      ...detail.releases.map((r) => [
        inert(r.value ?? "(none)"),
        String(r.count),
        formatTime(r.firstSeen),
        formatTime(r.lastSeen),
      ]),
    ]),
  );
  if (latest !== null) {
    println(ctx);
    println(
      ctx,
      `Latest entry ${latest.id} at ${formatTime(latest.receivedAt)}`,
    );
    printStack(ctx, latest.data.stack, stack);
  }
  println(ctx);
  println(
    ctx,
    `Times in UTC. Its entries: deno task logs PROJECT --query 'level>=error fingerprint:${detail.fingerprint}'`,
  );
}

/**
 * The latest entry's stack: resolved through source maps when a frame
 * resolved (docs/errors.md#source-maps), else as sent with why it was not.
 */
function printStack(
  ctx: CommandContext,
  sent: unknown,
  stack: ResolvedStack | null,
): void {
  const resolved = stack !== null && stack.frames.some((f) => f.resolved);
  if (resolved) {
    println(ctx, `  Original stack (release ${inert(stack.release)}):`);
  }
  const lines = resolved ? shownFrameLines(stack) : stackLines(sent);
  for (const line of lines.slice(0, 20)) println(ctx, `  ${inert(line)}`);
  const reasons = stack === null ? [] : unresolvedReasons(stack);
  if (reasons.length > 0) {
    println(ctx, `  Frames not resolved: ${inert(reasons.join("; "))}`);
  }
}

/**
 * Prints the group of `fingerprint` in detail; exit 1 when the project has
 * no such group with entries in the last 14 days.
 */
export async function printGroupDetail(
  ctx: CommandContext,
  project: Project,
  fingerprint: string,
  options: { json: boolean },
): Promise<number> {
  const fp = fingerprintArg(fingerprint);
  const now = ctx.now();
  const detail = await readGroupDetail(ctx.kv, project.id, fp, { now });
  if (
    detail.latest === null && detail.searchedTo === undefined
  ) {
    ctx.stderr(
      `No error group ${fp} with entries in the last 14 days in project "${
        inert(project.name)
      }"\n`,
    );
    return 1;
  }
  const triage = detail.group === null
    ? undefined
    : (await readTriage(ctx.kv, project.id, [detail.group], now))
      .get(detail.group.id);
  const stack = detail.latest &&
    await shownStack(ctx.kv, project.id, detail.latest);
  if (options.json) {
    println(ctx, jsonText(detailJson(detail, now, stack, triage)));
  } else printDetail(ctx, detail, stack, triage);
  return 0;
}

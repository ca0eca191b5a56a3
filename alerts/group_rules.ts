/**
 * Alert rules on error groups (docs/errors.md#alerts-on-error-groups): a
 * delivery for each group that is new (the delivery's entry is the group's
 * first), regressed (db/error_group_triage.ts: resolved, then an entry of a
 * later release, or any new entry without one) or escalating (entries in
 * the current hour over `factor` times the group's average hourly rate over
 * the 7 days before, at least {@linkcode MIN_ESCALATING} entries).
 *
 * Like a query rule it reads the entries stored since its cursor (here its
 * error entries) and commits its state with its deliveries; each delivery
 * goes through the same outbox, fairness and backoff (alerts/dispatch.ts).
 * At most {@linkcode MAX_GROUP_DELIVERIES} deliveries an evaluation: the
 * cursor stops at the entry after the last one, so the rest go next time;
 * likewise at its project's share of the tick (alerts/rotation.ts).
 *
 * @module
 */
import { chatText } from "./chat.ts";
import type { AlertRule, AlertState } from "../db/alerts.ts";
import { type FrameParts, groupFrame } from "../db/error_group_frame.ts";
import {
  entryTopFrame,
  SourceMapResolver,
  type TopFrame,
} from "../db/symbolicate.ts";
import { GROUP_DAYS, groupKeyOf } from "../db/error_groups.ts";
import { type ErrorGroup, readGroupsById } from "../db/error_group_reads.ts";
import {
  comesAfterResolve,
  type GroupTriage,
  readTriage,
} from "../db/error_group_triage.ts";
import type { Project } from "../db/projects.ts";
import { parseQuery } from "../db/query/mod.ts";
import { localReads, type Reads } from "../db/query/reads.ts";
import { releaseFirstSeen, releaseOf } from "../db/releases.ts";
import type { LogRecord } from "../domain/entry.ts";
import { recordJson } from "../domain/entry.ts";
import { entryTitle, fingerprintOf, groupIdOf } from "../domain/fingerprint.ts";
import { type Deadline, pageBudget, spent } from "./rotation.ts";

/** Deliveries one rule queues per evaluation at most. */
export const MAX_GROUP_DELIVERIES = 20;
/** Groups a rule remembers having alerted at most (the oldest go first). */
export const MAX_ALERTED = 1000;
/** The factor of `escalating` rules by default. */
export const DEFAULT_FACTOR = 10;
/** Fewest entries in the hour for a group to be escalating. */
export const MIN_ESCALATING = 10;
/** One escalating delivery per group per this long at most. */
export const ESCALATING_QUIET_MS = 24 * 3_600_000;
const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;
const PAGE = 1000;
const MAX_PAGES = 20;
const ERRORS = parseQuery("level>=error");

/** A delivery a group rule makes: its entry, group and what fired. */
export interface GroupEvent {
  record: LogRecord;
  group: ErrorGroup;
  triage: GroupTriage;
  /** Escalating: entries in the hour and the average per hour before. */
  rate?: { hour: number; average: number };
  /** The entry's top frame, resolved through its release's maps. */
  frame?: FrameParts | TopFrame | null;
}

/**
 * A group's entries in `now`'s hour, and its average per hour before it
 * over the last 7 days (or since it was first seen, when later).
 */
export function hourlyRate(
  group: ErrorGroup,
  now: number,
): { hour: number; average: number; hours: number } {
  const hour = group.hourly.at(-1) ?? 0;
  const hourStart = Math.floor(now / HOUR_MS) * HOUR_MS;
  const dayStart = Math.floor(now / DAY_MS) * DAY_MS;
  const week = group.daily.slice(GROUP_DAYS - 8).reduce((a, b) => a + b, 0);
  const span = Math.min(
    7 * 24 + (hourStart - dayStart) / HOUR_MS,
    Math.floor((hourStart - group.firstSeen) / HOUR_MS),
  );
  const hours = Math.max(0, span);
  return { hour, average: hours === 0 ? 0 : (week - hour) / hours, hours };
}

/** The text line of a group delivery, for chat tools that read only `text`. */
function eventText(project: Project, rule: AlertRule, e: GroupEvent): string {
  const what = rule.on === "new"
    ? "New error"
    : rule.on === "regressed"
    ? "Regressed error"
    : `Escalating error (${e.rate?.hour} in this hour, ${
      e.rate?.average.toFixed(1)
    } an hour before)`;
  const release = releaseOf(e.record);
  return chatText(
    `[${project.name}] ${what}: ${e.group.title}${
      release === null ? "" : ` (release ${release})`
    }`,
  );
}

/**
 * The JSON body of a group delivery: the triggering entry's title, top
 * frame and release, the group, and the link to the group's page.
 */
export function groupDeliveryBody(options: {
  id: string;
  project: Project;
  rule: AlertRule;
  event: GroupEvent;
  now: number;
  /** The dashboard's URL, for the link. @default none: a path */
  dashboardUrl?: string;
}): string {
  const { id, project, rule, event: e, now } = options;
  const path = `/projects/${
    encodeURIComponent(project.id)
  }/errors/${e.group.fingerprint}`;
  return JSON.stringify({
    text: eventText(project, rule, e),
    deliveryId: id,
    createdAt: new Date(now).toISOString(),
    project: { id: project.id, name: project.name },
    rule: {
      id: rule.id,
      on: rule.on,
      ...(rule.on === "escalating" ? { factor: rule.factor } : {}),
    },
    title: entryTitle(e.record.data),
    frame: e.frame ?? groupFrame(e.group),
    release: releaseOf(e.record),
    link: `${(options.dashboardUrl ?? "").replace(/\/+$/, "")}${path}`,
    group: {
      fingerprint: e.group.fingerprint,
      title: e.group.title,
      status: e.triage.status,
      count: e.group.count,
      firstSeen: new Date(e.group.firstSeen).toISOString(),
      lastSeen: new Date(e.group.lastSeen).toISOString(),
    },
    ...(e.rate ? { rate: e.rate } : {}),
    count: 1,
    entries: [recordJson(e.record)],
  });
}

/** Keeps the last {@linkcode MAX_ALERTED} marks. */
function bounded(alerted: Record<string, number>): Record<string, number> {
  const entries = Object.entries(alerted);
  return entries.length <= MAX_ALERTED
    ? alerted
    : Object.fromEntries(entries.slice(entries.length - MAX_ALERTED));
}

/** Reads groups and their triage once per evaluation. */
class GroupCache {
  #groups = new Map<
    string,
    { group: ErrorGroup; triage: GroupTriage } | null
  >();
  #key: Uint8Array | null = null;
  #firstSeen: Map<string, number> | null = null;
  constructor(
    private kv: Deno.Kv,
    private projectId: string,
    private now: number,
  ) {}

  async of(record: LogRecord) {
    this.#key ??= await groupKeyOf(this.kv, this.projectId);
    const id = groupIdOf(this.#key, fingerprintOf(record));
    if (!this.#groups.has(id)) {
      const [group] = await readGroupsById(
        this.kv,
        this.projectId,
        [id],
        this.now,
      );
      this.#groups.set(
        id,
        group === undefined ? null : {
          group,
          triage: (await readTriage(this.kv, this.projectId, [group], this.now))
            .get(id)!,
        },
      );
    }
    return this.#groups.get(id)!;
  }

  async firstSeen(): Promise<Map<string, number>> {
    return this.#firstSeen ??= await releaseFirstSeen(this.kv, this.projectId);
  }
}

/** Whether `record` fires `rule` for its group; sets the mark that stops a repeat. */
async function fires(
  rule: AlertRule,
  record: LogRecord,
  found: { group: ErrorGroup; triage: GroupTriage },
  alerted: Record<string, number>,
  cache: GroupCache,
  now: number,
): Promise<GroupEvent | null> {
  const { group, triage } = found;
  if (rule.on === "new") {
    return group.firstId === record.id ? { record, group, triage } : null;
  }
  if (rule.on === "regressed") {
    const t = triage.triage;
    if (triage.status !== "regressed" || t === null) return null;
    if (alerted[group.id] === t.at || record.receivedAt < t.at) return null;
    const release = releaseOf(record);
    if (t.inRelease !== undefined) {
      if (release === null) return null;
      if (!comesAfterResolve(release, t, await cache.firstSeen())) return null;
    }
    alerted[group.id] = t.at;
    return { record, group, triage };
  }
  const rate = hourlyRate(group, now);
  const last = alerted[group.id];
  if (last !== undefined && now - last < ESCALATING_QUIET_MS) return null;
  if (rate.hours === 0 || rate.hour < MIN_ESCALATING) return null;
  if (rate.hour <= (rule.factor ?? DEFAULT_FACTOR) * rate.average) return null;
  alerted[group.id] = now;
  return {
    record,
    group,
    triage,
    rate: { hour: rate.hour, average: rate.average },
  };
}

/**
 * Reads the error entries stored since `state`'s cursor and returns the
 * events of `rule` (at most {@linkcode MAX_GROUP_DELIVERIES}) and the state
 * after them. Past `deadline` no page is read and no further entry looked
 * at (the first of each always is): the cursor stays at the last one.
 */
export async function evaluateGroupRule(
  kv: Deno.Kv,
  rule: AlertRule,
  state: AlertState,
  now: number,
  reads: Reads = localReads(kv),
  deadline?: Deadline,
): Promise<{ state: AlertState; events: GroupEvent[] }> {
  const cache = new GroupCache(kv, rule.projectId, now);
  const alerted = { ...state.alerted };
  const events: GroupEvent[] = [];
  const resolver = new SourceMapResolver(kv);
  let cursor = state.cursor;
  pages: for (let page = 0; page < MAX_PAGES; page++) {
    if (page > 0 && spent(deadline)) break;
    const { records, lastId } = await reads.tailLogs(rule.projectId, {
      afterId: cursor,
      filter: ERRORS,
      now,
      limit: PAGE,
      ...pageBudget(deadline),
    });
    for (const [at, record] of records.entries()) {
      if (events.length >= MAX_GROUP_DELIVERIES) break pages;
      if (at > 0 && spent(deadline)) break pages;
      cursor = record.id;
      const found = await cache.of(record);
      if (found === null) continue;
      const event = await fires(rule, record, found, alerted, cache, now);
      if (event === null) continue;
      event.frame = await entryTopFrame(kv, rule.projectId, record, resolver);
      events.push(event);
    }
    if (lastId !== null) cursor = lastId;
    if (records.length < PAGE) break;
  }
  return {
    state: { ...state, cursor, alerted: bounded(alerted) },
    events,
  };
}

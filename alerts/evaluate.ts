/**
 * Evaluating alert rules: for each rule, read the entries stored since its
 * cursor through the public query API (`tailLogs`), count the matches, and
 * when the rule fires put one delivery in the outbox (docs/alerts.md). A
 * tick's time is shared among projects, which take turns
 * (alerts/rotation.ts).
 *
 * It runs beside the ingest path, never in it: a loop reads what the
 * consumer has stored. A rule's
 * new state and its delivery are committed in one atomic operation checked
 * on the versionstamps of the rule and the state it read; an instance that
 * loses the race commits nothing, so two instances never queue the same
 * delivery twice.
 *
 * @module
 */
import {
  type AlertRule,
  type AlertState,
  decodeAlertState,
  deleteAlertRule,
  type Delivery,
  listAlertRules,
  putDelivery,
} from "../db/alerts.ts";
import { alertRuleKey, alertStateKey } from "../db/keys.ts";
import { encodeJson, VALUE_MAX_BYTES } from "../db/kv.ts";
import { getProject, type Project } from "../db/projects.ts";
import { parseQuery } from "../db/query/mod.ts";
import { localReads, type Reads } from "../db/query/reads.ts";
import { recordJson } from "../domain/entry.ts";
import { createId } from "../domain/ids.ts";
import { formatAlertDuration, ruleTrigger } from "./rules.ts";
import { evaluateGroupRule, groupDeliveryBody } from "./group_rules.ts";
import { dropPastBound } from "./deliver.ts";
import { chatText } from "./chat.ts";
import {
  createTurns,
  type Deadline,
  inTurn,
  pageBudget,
  projectDeadline,
  spent,
  TICK_BUDGET_MS,
  type Turns,
} from "./rotation.ts";

/** Entries sent with a delivery at most. */
export const SAMPLE_ENTRIES = 5;
/** Entries one rule reads per call of the query API. */
const PAGE = 1000;
/**
 * Pages one rule reads per evaluation (fewer when its project's share of
 * the tick runs out); the rest waits for the next one.
 */
const MAX_PAGES = 20;
/**
 * Time the first match of a delivery waits for others, so that a burst
 * arriving within it goes out as one delivery.
 */
export const GROUP_MS = 2000;
/** Buckets a threshold window is counted in. */
const WINDOW_BUCKETS = 30;
/** Bytes the samples of a state or a delivery take at most. */
const SAMPLE_BUDGET_BYTES = VALUE_MAX_BYTES - 8192;

/** Options of {@linkcode evaluateRules}. */
export interface EvaluateOptions {
  kv: Deno.Kv;
  /** Clock. @default {Date.now} */
  now?: () => number;
  /**
   * Milliseconds of a monotonic clock, for the time a tick spends.
   * @default {performance.now}
   */
  clock?: () => number;
  /**
   * Where the turns of projects and rules stand; kept between ticks, so
   * that each tick starts after the last project and rule the previous
   * one reached. @default from the start
   */
  turns?: Turns;
  /** Told of a rule whose evaluation failed; the others go on. */
  onError?: (rule: AlertRule, error: unknown) => void;
  /**
   * The dashboard's URL, for the links of group deliveries
   * (`DASHBOARD_URL`). @default none: the link is the page's path
   */
  dashboardUrl?: string;
  /**
   * Where the rules' entries are read: the query thread's reads, so that
   * rules on a busy project do not hold the endpoint's thread.
   * @default localReads(kv)
   */
  reads?: Reads;
}

/** Size of one counting bucket of a threshold window. */
function bucketMs(windowMs: number): number {
  return Math.max(1000, Math.ceil(windowMs / WINDOW_BUCKETS / 1000) * 1000);
}

/** Keeps the first samples that fit in the byte budget. */
function fitSamples(
  samples: Record<string, unknown>[],
): Record<string, unknown>[] {
  const out: Record<string, unknown>[] = [];
  let bytes = 0;
  for (const sample of samples.slice(0, SAMPLE_ENTRIES)) {
    bytes += JSON.stringify(sample).length * 3;
    if (bytes > SAMPLE_BUDGET_BYTES) break;
    out.push(sample);
  }
  return out;
}

/** The text line of a delivery, for chat tools that read only `text`. */
function deliveryText(
  project: Project,
  rule: AlertRule,
  count: number,
): string {
  const matches = `${count} ${count === 1 ? "entry" : "entries"}`;
  const scope = rule.threshold === undefined
    ? `${matches} matched`
    : `${matches} matched within ${
      formatAlertDuration(rule.windowMs ?? 0)
    } (threshold: more than ${rule.threshold})`;
  return chatText(`[${project.name}] Alert "${rule.query}": ${scope}`);
}

/**
 * The JSON body of a delivery. `text` is what Slack-compatible receivers
 * show; the rest is for programs.
 */
export function deliveryBody(
  options: {
    id: string;
    project: Project;
    rule: AlertRule;
    count: number;
    entries: Record<string, unknown>[];
    now: number;
  },
): string {
  const { id, project, rule, count, entries, now } = options;
  return JSON.stringify({
    text: deliveryText(project, rule, count),
    deliveryId: id,
    createdAt: new Date(now).toISOString(),
    project: { id: project.id, name: project.name },
    rule: { id: rule.id, query: rule.query, ...ruleTrigger(rule) },
    count,
    entries,
  });
}

/** The state after new matches, and the delivery they make due (if any). */
function advance(
  rule: AlertRule,
  state: AlertState,
  found: { cursor: string; count: number; samples: Record<string, unknown>[] },
  times: number[],
  now: number,
): { state: AlertState; count: number | null } {
  const next: AlertState = {
    cursor: found.cursor,
    buckets: state.buckets,
    pendingCount: state.pendingCount + found.count,
    firstPendingAt: state.pendingCount > 0
      ? state.firstPendingAt ?? null
      : found.count > 0
      ? times[0] ?? null
      : null,
    samples: fitSamples([...state.samples, ...found.samples]),
    lastDeliveryAt: state.lastDeliveryAt,
  };
  let windowCount = 0;
  if (rule.threshold !== undefined && rule.windowMs !== undefined) {
    const from = now - rule.windowMs;
    // A threshold reports the entries of its window, not older ones.
    next.samples = fitSamples(
      [...state.samples, ...found.samples].filter((s) =>
        Date.parse(String(s.receivedAt)) > from
      ),
    );
    const size = bucketMs(rule.windowMs);
    const counts = new Map(state.buckets);
    for (const t of times) {
      const start = Math.floor(t / size) * size;
      counts.set(start, (counts.get(start) ?? 0) + 1);
    }
    next.buckets = [...counts].filter(([start]) => start + size > from)
      .sort((a, b) => a[0] - b[0]);
    windowCount = next.buckets.reduce((sum, [, n]) => sum + n, 0);
  }
  const due = state.lastDeliveryAt === null ||
    now - state.lastDeliveryAt >= rule.everyMs;
  const grouped = next.firstPendingAt === null ||
    next.firstPendingAt === undefined ||
    now - next.firstPendingAt >= GROUP_MS;
  const fires = next.pendingCount > 0 && due && grouped &&
    (rule.threshold === undefined || windowCount > rule.threshold);
  if (!fires) return { state: next, count: null };
  const count = rule.threshold === undefined ? next.pendingCount : windowCount;
  return { state: next, count };
}

/**
 * Evaluates a rule on error groups (alerts/group_rules.ts): its state and
 * its deliveries, one per event, in one operation checked on the rule and
 * the state read (`entries`).
 */
async function queueGroupDeliveries(
  kv: Deno.Kv,
  options: {
    rule: AlertRule;
    state: AlertState;
    project: Project;
    /** The rule and the state as read. */
    entries: [Deno.KvEntryMaybe<unknown>, Deno.KvEntryMaybe<unknown>];
    now: number;
    dashboardUrl?: string;
    reads?: Reads;
    deadline?: Deadline;
  },
): Promise<Delivery[]> {
  const { rule, state, project, now } = options;
  const [ruleEntry, stateEntry] = options.entries;
  const { state: next, events } = await evaluateGroupRule(
    kv,
    rule,
    state,
    now,
    options.reads,
    options.deadline,
  );
  if (next.cursor === state.cursor && events.length === 0) return [];
  const op = kv.atomic().check(ruleEntry).check(stateEntry);
  const deliveries = events.map((event) => {
    const id = createId(now);
    const delivery: Delivery = {
      id,
      projectId: rule.projectId,
      ruleId: rule.id,
      body: groupDeliveryBody({
        id,
        project,
        rule,
        event,
        now,
        ...(options.dashboardUrl ? { dashboardUrl: options.dashboardUrl } : {}),
      }),
      count: 1,
      attempts: 0,
      createdAt: now,
    };
    putDelivery(op, delivery, now);
    return delivery;
  });
  if (deliveries.length > 0) next.lastDeliveryAt = now;
  op.set(alertStateKey(rule.projectId, rule.id), encodeJson(next));
  if (!(await op.commit()).ok) return [];
  if (deliveries.length > 0) {
    await dropPastBound(kv, rule.projectId, rule.id, now);
  }
  return deliveries;
}

/**
 * A rule as read with its state and project, `null` when it is gone (its
 * project deleted: then the rule goes with it).
 */
async function readRule(kv: Deno.Kv, rule: AlertRule): Promise<
  {
    project: Project;
    state: AlertState;
    entries: [Deno.KvEntryMaybe<unknown>, Deno.KvEntryMaybe<unknown>];
  } | null
> {
  const [ruleEntry, stateEntry] = await kv.getMany([
    alertRuleKey(rule.projectId, rule.id),
    alertStateKey(rule.projectId, rule.id),
  ]);
  if (ruleEntry.versionstamp === null) return null;
  const project = await getProject(kv, rule.projectId);
  if (project === null) {
    await deleteAlertRule(kv, rule.projectId, rule.id);
    return null;
  }
  const state = decodeAlertState(rule, stateEntry.value);
  return { project, state, entries: [ruleEntry, stateEntry] };
}

/** What a query rule read since its cursor. */
interface Found {
  cursor: string;
  count: number;
  samples: Record<string, unknown>[];
  /** The matches' receipt times. */
  times: number[];
}

/**
 * Reads the matches of `rule` after `cursor`, page by page, until a short
 * page, {@linkcode MAX_PAGES}, or `deadline` (each page read with what is
 * left of it; the first one always).
 */
async function readMatches(
  reads: Reads,
  rule: AlertRule,
  cursor: string,
  now: number,
  deadline?: Deadline,
): Promise<Found> {
  const filter = parseQuery(rule.query);
  const found: Found = { cursor, count: 0, samples: [], times: [] };
  for (let page = 0; page < MAX_PAGES; page++) {
    if (page > 0 && spent(deadline)) break;
    const { records, lastId } = await reads.tailLogs(rule.projectId, {
      afterId: found.cursor,
      filter,
      now,
      limit: PAGE,
      ...pageBudget(deadline),
    });
    found.count += records.length;
    for (const record of records) {
      found.times.push(record.receivedAt);
      if (found.samples.length < SAMPLE_ENTRIES) {
        found.samples.push(recordJson(record));
      }
    }
    if (lastId !== null) found.cursor = lastId;
    if (records.length < PAGE) break;
  }
  return found;
}

/** Options of {@linkcode evaluateRule}. */
export interface EvaluateRuleOptions {
  /** See {@linkcode EvaluateOptions.dashboardUrl}. */
  dashboardUrl?: string;
  /** See {@linkcode EvaluateOptions.reads}. */
  reads?: Reads;
  /**
   * No page read starts past it (the first always does), and the last one
   * read is given what is left of it. @default none: up to `MAX_PAGES`
   */
  deadline?: Deadline;
}

/**
 * Evaluates one rule at `now`; returns the deliveries it queued: none
 * (nothing due, or another instance committed first), one of a query rule,
 * or one per event of a rule on error groups.
 */
export async function evaluateRule(
  kv: Deno.Kv,
  rule: AlertRule,
  now: number,
  options: EvaluateRuleOptions = {},
): Promise<Delivery[]> {
  const read = await readRule(kv, rule);
  if (read === null) return [];
  if (rule.on !== undefined) {
    return await queueGroupDeliveries(kv, { ...read, rule, now, ...options });
  }
  const { project, state, entries: [ruleEntry, stateEntry] } = read;
  const reads = options.reads ?? localReads(kv);
  const found = await readMatches(
    reads,
    rule,
    state.cursor,
    now,
    options.deadline,
  );
  const { state: next, count: fired } = advance(
    rule,
    state,
    found,
    found.times,
    now,
  );
  if (next.cursor === state.cursor && fired === null && found.count === 0) {
    return [];
  }
  let delivery: Delivery | null = null;
  const op = kv.atomic().check(ruleEntry).check(stateEntry);
  if (fired !== null) {
    const id = createId(now);
    delivery = {
      id,
      projectId: rule.projectId,
      ruleId: rule.id,
      body: deliveryBody({
        id,
        project,
        rule,
        count: fired,
        entries: next.samples,
        now,
      }),
      count: fired,
      attempts: 0,
      createdAt: now,
    };
    next.pendingCount = 0;
    next.firstPendingAt = null;
    next.samples = [];
    next.lastDeliveryAt = now;
    putDelivery(op, delivery, now);
  }
  op.set(alertStateKey(rule.projectId, rule.id), encodeJson(next));
  if (!(await op.commit()).ok || delivery === null) return [];
  await dropPastBound(kv, rule.projectId, rule.id, now);
  return [delivery];
}

/**
 * Evaluates the rules of every project once, within a budget of
 * {@linkcode TICK_BUDGET_MS} shared among the projects, which take turns
 * (alerts/rotation.ts); returns the deliveries queued. A rule that fails is
 * reported and skipped.
 */
export async function evaluateRules(
  options: EvaluateOptions,
): Promise<Delivery[]> {
  const { kv } = options;
  const now = (options.now ?? Date.now)();
  const clock = options.clock ?? (() => performance.now());
  const turns = options.turns ?? createTurns();
  const tickEnd = clock() + TICK_BUDGET_MS;
  const projects = inTurn(await listAlertRules(kv), turns);
  const queued: Delivery[] = [];
  for (const [index, rules] of projects.entries()) {
    if (index > 0 && clock() >= tickEnd) break;
    const deadline = projectDeadline(tickEnd, index, projects.length, clock);
    turns.project = rules[0]!.projectId;
    for (const [at, rule] of rules.entries()) {
      if (at > 0 && spent(deadline)) break;
      turns.rules.set(rule.projectId, rule.id);
      try {
        queued.push(
          ...await evaluateRule(kv, rule, now, {
            ...(options.dashboardUrl
              ? { dashboardUrl: options.dashboardUrl }
              : {}),
            ...(options.reads ? { reads: options.reads } : {}),
            deadline,
          }),
        );
      } catch (error) {
        options.onError?.(rule, error);
      }
    }
  }
  return queued;
}

/**
 * How a tick shares its time among projects (docs/alerts.md#how-rules-are-evaluated):
 * one project's rules must not delay every other project's alerts.
 *
 * - A tick evaluates rules for at most {@linkcode TICK_BUDGET_MS}. Each
 *   project it reaches gets an equal part of what is left of it (at least
 *   {@linkcode MIN_PROJECT_SHARE_MS}); past its share, the project's other
 *   rules wait for its next turn.
 * - Projects take turns: a tick starts with the project after the last one
 *   the previous tick reached, and a project's turn with the rule after the
 *   last one it evaluated. So every rule is evaluated within a bounded
 *   number of ticks, whatever the other projects hold.
 * - A rule stops reading pages at its project's share (the last page read
 *   with what is left of it as its budget); it commits the cursor where it
 *   stopped and goes on from there at its next evaluation.
 *
 * Where the turns stand is each server's own view, kept in memory.
 *
 * @module
 */
import type { AlertRule } from "../db/alerts.ts";
import { QUERY_BUDGET_MS, type TailOptions } from "../db/query/mod.ts";

/**
 * Time one tick spends evaluating rules, ms (past it by a project's least
 * share and one rule's last read and commit at most).
 */
export const TICK_BUDGET_MS = 1000;
/**
 * A project's share of a tick at least, ms: with many projects busy, fewer
 * are reached each tick, each for long enough to read.
 */
export const MIN_PROJECT_SHARE_MS = 100;

/** Where the next tick's evaluation starts; kept by the loop between ticks. */
export interface Turns {
  /** The last project a tick reached: the next tick starts after it. */
  project: string | null;
  /** Per project, the last rule it evaluated: its next turn starts after it. */
  rules: Map<string, string>;
}

/** A time limit on a monotonic clock. */
export interface Deadline {
  /** A reading of `clock` past which no more work starts. */
  at: number;
  clock: () => number;
}

/** Turns from the start: the first project, each one's first rule. */
export function createTurns(): Turns {
  return { project: null, rules: new Map() };
}

/** `items` (sorted by `key`) from the first one whose key is past `last`. */
function after<T>(items: T[], key: (item: T) => string, last?: string | null) {
  if (last === null || last === undefined) return items;
  const at = items.findIndex((item) => key(item) > last);
  return at <= 0 ? items : [...items.slice(at), ...items.slice(0, at)];
}

/**
 * Every rule (as listed: by project, then by id) grouped by project, in the
 * order this tick takes them. Forgets the turns of projects without rules.
 */
export function inTurn(rules: AlertRule[], turns: Turns): AlertRule[][] {
  const byProject = new Map<string, AlertRule[]>();
  for (const rule of rules) {
    const own = byProject.get(rule.projectId);
    if (own) own.push(rule);
    else byProject.set(rule.projectId, [rule]);
  }
  for (const projectId of turns.rules.keys()) {
    if (!byProject.has(projectId)) turns.rules.delete(projectId);
  }
  const projects = after(
    [...byProject.keys()].sort(),
    (id) => id,
    turns.project,
  );
  return projects.map((projectId) =>
    after(byProject.get(projectId)!, (r) => r.id, turns.rules.get(projectId))
  );
}

/**
 * The share of the project at `index` of `count` reached this tick, as a
 * deadline: an equal part of what is left until `tickEnd`, at least
 * {@linkcode MIN_PROJECT_SHARE_MS}.
 */
export function projectDeadline(
  tickEnd: number,
  index: number,
  count: number,
  clock: () => number,
): Deadline {
  const start = clock();
  const share = Math.max(
    MIN_PROJECT_SHARE_MS,
    (tickEnd - start) / (count - index),
  );
  return { at: start + share, clock };
}

/** Whether the time of `deadline` is spent (never without one). */
export function spent(deadline: Deadline | undefined): boolean {
  return deadline !== undefined && deadline.clock() >= deadline.at;
}

/**
 * The budget of one page read before `deadline`: what is left of it, at
 * most the query API's own; without a deadline, the query API's default.
 */
export function pageBudget(
  deadline: Deadline | undefined,
): Pick<TailOptions, "budget"> {
  if (deadline === undefined) return {};
  const left = Math.max(0, deadline.at - deadline.clock());
  return {
    budget: { ms: Math.min(QUERY_BUDGET_MS, left), clock: deadline.clock },
  };
}

/**
 * Retention by filter (docs/privacy.md#retention-rules): rules such as
 * `level<=info 3` (days) beside a project's retention. An entry is kept as
 * long as the longest rule that matches it says, or the project's
 * retention when none matches. `<` and `>` compare the standard levels
 * (info < warning < error < critical); a custom level matches `=` only.
 *
 * The merger applies them as it applies the retention, chunk by chunk: a
 * chunk goes once every level it holds is past its time, and a chunk whose
 * entries of some levels are past theirs is written again without them
 * (db/storage/prune.ts). Chunks are written to expire after the longest
 * retention of all, rules included.
 *
 * @module
 */
import { DAY_MS, STANDARD_LEVELS } from "../domain/entry.ts";
import {
  type Project,
  updateProject,
  validateRetentionDays,
} from "./projects.ts";
import { InvalidValueError, validateLevel } from "./validation.ts";
import type { RetentionRule } from "../domain/quota.ts";

export type { RetentionRule };

/** Rules a project holds at most. */
export const MAX_RETENTION_RULES = 20;

const FILTER = /^level\s*(<=|>=|<|>|=)\s*([a-z][a-z0-9_-]*)$/;

/**
 * Parses `level<=info` and checks `days`; throws
 * {@linkcode InvalidValueError} with what is expected.
 *
 * @example
 * ```ts
 * parseRetentionRule("level<=info", 3); // { filter: "level<=info", op: "<=", level: "info", days: 3 }
 * ```
 */
export function parseRetentionRule(
  filter: string,
  days: number,
): RetentionRule {
  const match = FILTER.exec(filter.trim());
  if (!match) {
    throw new InvalidValueError(
      `Cannot read the filter "${filter}": expected "level" then <, <=, =, >= or > and a level, such as "level<=info"`,
    );
  }
  const op = match[1] as RetentionRule["op"];
  const level = match[2]!;
  const standard = (STANDARD_LEVELS as readonly string[]).includes(level);
  if (!standard) validateLevel(level);
  if (op !== "=" && !standard) {
    throw new InvalidValueError(
      `Cannot compare with level "${level}": only info, warning, error and critical are ordered; use "level=${level}"`,
    );
  }
  validateRetentionDays(days);
  return { filter: `level${op}${level}`, op, level, days };
}

/** Whether `rule` matches entries of `level`. */
export function ruleMatches(rule: RetentionRule, level: string): boolean {
  if (rule.op === "=") return level === rule.level;
  const order = STANDARD_LEVELS as readonly string[];
  const a = order.indexOf(level);
  const b = order.indexOf(rule.level);
  if (a < 0 || b < 0) return false;
  return rule.op === "<"
    ? a < b
    : rule.op === "<="
    ? a <= b
    : rule.op === ">="
    ? a >= b
    : a > b;
}

/** How long entries of `level` are kept, in ms. */
export function levelRetentionMs(project: Project, level: string): number {
  let days = -1;
  for (const rule of project.retentionRules ?? []) {
    if (ruleMatches(rule, level)) days = Math.max(days, rule.days);
  }
  return (days < 0 ? project.retentionDays : days) * DAY_MS;
}

/** How long a chunk holding entries of `levels` is kept, in ms. */
export function chunkRetentionMs(
  project: Project,
  levels: Iterable<string>,
): number {
  if (!project.retentionRules?.length) return project.retentionDays * DAY_MS;
  let ms = 0;
  for (const level of levels) {
    ms = Math.max(ms, levelRetentionMs(project, level));
  }
  return ms;
}

/** The longest any entry of the project is kept, in ms. */
export function longestRetentionMs(project: Project): number {
  let days = project.retentionDays;
  for (const rule of project.retentionRules ?? []) {
    days = Math.max(days, rule.days);
  }
  return days * DAY_MS;
}

/**
 * Adds a rule, or replaces the one with the same filter.
 *
 * @example
 * ```ts
 * await addRetentionRule(kv, projectId, "level<=info", 3);
 * ```
 */
export async function addRetentionRule(
  kv: Deno.Kv,
  projectId: string,
  filter: string,
  days: number,
): Promise<Project> {
  const rule = parseRetentionRule(filter, days);
  return await updateProject(kv, projectId, (project) => {
    const rules = (project.retentionRules ?? []).filter((r) =>
      r.filter !== rule.filter
    );
    if (rules.length >= MAX_RETENTION_RULES) {
      throw new InvalidValueError(
        `Cannot add rule "${rule.filter}": a project holds at most ${MAX_RETENTION_RULES} retention rules; remove one first`,
      );
    }
    project.retentionRules = [...rules, rule];
    return project;
  });
}

/** Removes the rule with that filter. */
export async function removeRetentionRule(
  kv: Deno.Kv,
  projectId: string,
  filter: string,
): Promise<Project> {
  const wanted = filter.replaceAll(/\s+/g, "");
  return await updateProject(kv, projectId, (project) => {
    const rules = project.retentionRules ?? [];
    if (!rules.some((r) => r.filter === wanted)) {
      throw new InvalidValueError(
        `Cannot remove rule "${filter}": the project has no such retention rule`,
      );
    }
    const left = rules.filter((r) => r.filter !== wanted);
    if (left.length > 0) project.retentionRules = left;
    else delete project.retentionRules;
    return project;
  });
}

/**
 * Adding an alert rule: every value is checked here, once, for the CLI and
 * the dashboard alike — the query parses, the webhook is an http(s) URL on a
 * permitted host, the durations and the threshold are in range — and the
 * rule gets a random id and signing secret (docs/alerts.md).
 *
 * @module
 */
import {
  type AlertRule,
  type GroupTrigger,
  listAlertRules,
  putNewAlertRule,
} from "../db/alerts.ts";
import { DEFAULT_FACTOR } from "./group_rules.ts";
import { getProject, ProjectNotFoundError } from "../db/projects.ts";
import { parseQuery, QuerySyntaxError } from "../db/query/mod.ts";
import { InvalidValueError } from "../db/validation.ts";
import { alertRuleKey, alertStateKey } from "../db/keys.ts";
import { keepWithin } from "../db/kv.ts";
import { checkWebhookUrl } from "./targets.ts";
import { DURATION_UNIT_MS } from "../domain/duration.ts";

/** Time between deliveries of a rule without a threshold, by default. */
export const DEFAULT_EVERY_MS = 60_000;
/** Window of a threshold given without one. */
export const DEFAULT_WINDOW_MS = 5 * 60_000;
/** Shortest threshold window. */
export const MIN_WINDOW_MS = 10_000;
/** Longest window or time between deliveries. */
export const MAX_DURATION_MS = 7 * 86_400_000;
/** Longest query of a rule. */
const MAX_QUERY_CHARS = 1000;
/** Rules one project holds at most: each is evaluated every few seconds. */
export const MAX_RULES_PER_PROJECT = 50;
/** Largest threshold. */
const MAX_THRESHOLD = 1_000_000_000;
/** What rules on error groups fire on. */
export const GROUP_TRIGGERS: readonly GroupTrigger[] = [
  "new",
  "regressed",
  "escalating",
];
/** Bounds of an escalating rule's factor. */
export const MIN_FACTOR = 2;
export const MAX_FACTOR = 1000;
/** The query of rules on error groups: the entries they read. */
const GROUP_QUERY = "level>=error";

/** Thrown when a rule id names no rule of the project. */
export class AlertRuleNotFoundError extends Error {
  override name = "AlertRuleNotFoundError";
  constructor(projectId: string, ruleId: string) {
    super(`Cannot find alert rule "${ruleId}" of project "${projectId}"`);
  }
}

/** What an operator gives to add a rule. */
export interface AlertRuleInput {
  projectId: string;
  /** The entries to alert on; not with `on`. */
  query: string;
  /** A rule on error groups instead (alerts/group_rules.ts). @default none */
  on?: string;
  /** Of `escalating`. @default {DEFAULT_FACTOR} */
  factor?: number;
  webhook: string;
  /** Fire only above this many matches within `windowMs`. */
  threshold?: number;
  /** @default {DEFAULT_WINDOW_MS} with a threshold */
  windowMs?: number;
  /** @default the window with a threshold, else {DEFAULT_EVERY_MS} */
  everyMs?: number;
}

/** Options of {@linkcode addAlertRule}. */
export interface AddAlertRuleOptions {
  /** `ALERT_PRIVATE_TARGETS=allow`: loopback and private webhooks permitted. */
  allowPrivate: boolean;
  /** Clock. @default {Date.now} */
  now?: () => number;
}

/**
 * Reads a duration of whole seconds, minutes, hours or days (`30s`, `5m`,
 * `1h30m`, `0`); `undefined` when `text` is not one.
 *
 * @example
 * ```ts
 * parseAlertDuration("5m"); // 300000
 * ```
 */
export function parseAlertDuration(text: string): number | undefined {
  if (text === "0") return 0;
  if (!/^(?:\d{1,6}[smhd])+$/.test(text)) return undefined;
  let total = 0;
  for (const [, n, unit] of text.matchAll(/(\d+)([smhd])/g)) {
    total += Number(n) * DURATION_UNIT_MS[unit!]!;
  }
  return total;
}

/**
 * Writes a duration the way {@linkcode parseAlertDuration} reads it.
 *
 * @example
 * ```ts
 * formatAlertDuration(5400000); // "1h30m"
 * ```
 */
export function formatAlertDuration(ms: number): string {
  if (ms === 0) return "0";
  let left = Math.round(ms / 1000) * 1000;
  let text = "";
  for (const unit of ["d", "h", "m", "s"]) {
    const size = DURATION_UNIT_MS[unit]!;
    if (left >= size) {
      text += `${Math.floor(left / size)}${unit}`;
      left %= size;
    }
  }
  return text || "0";
}

/**
 * When a rule fires, as its deliveries and `alert list --json` tell it: the
 * threshold and its window when it has one, and the pace of deliveries.
 *
 * @example
 * ```ts
 * ruleTrigger(rule); // { threshold: 10, window: "5m", every: "5m" }
 * ```
 */
export function ruleTrigger(
  rule: AlertRule,
): {
  on?: GroupTrigger;
  factor?: number;
  threshold?: number;
  window?: string;
  every: string;
} {
  if (rule.on !== undefined) {
    return {
      on: rule.on,
      ...(rule.on === "escalating" ? { factor: rule.factor } : {}),
      every: formatAlertDuration(rule.everyMs),
    };
  }
  return {
    ...(rule.threshold === undefined ? {} : {
      threshold: rule.threshold,
      window: formatAlertDuration(rule.windowMs ?? 0),
    }),
    every: formatAlertDuration(rule.everyMs),
  };
}

function randomHex(bytes: number): string {
  return Array.from(
    crypto.getRandomValues(new Uint8Array(bytes)),
    (b) => b.toString(16).padStart(2, "0"),
  ).join("");
}

function checkDuration(name: string, ms: number, min: number): number {
  if (!Number.isInteger(ms) || ms < min || ms > MAX_DURATION_MS) {
    throw new InvalidValueError(
      `Cannot use ${name} "${formatAlertDuration(ms)}": expected from ${
        formatAlertDuration(min)
      } to 7d`,
    );
  }
  return ms;
}

/**
 * Checks `input` and stores the rule; the returned rule carries its signing
 * secret, which is shown this once. Throws {@linkcode ProjectNotFoundError}
 * or an {@linkcode InvalidValueError} naming the value at fault.
 *
 * @example
 * ```ts
 * const rule = await addAlertRule(kv, {
 *   projectId, query: "level:critical", webhook: "https://hooks.example.com/x",
 * }, { allowPrivate: false });
 * ```
 */
export async function addAlertRule(
  kv: Deno.Kv,
  input: AlertRuleInput,
  options: AddAlertRuleOptions,
): Promise<AlertRule> {
  const project = await getProject(kv, input.projectId);
  if (project === null) throw new ProjectNotFoundError(input.projectId);
  if ((await listAlertRules(kv, project.id)).length >= MAX_RULES_PER_PROJECT) {
    throw tooManyRules(project.id);
  }
  if (input.on !== undefined) {
    return await addGroupRule(kv, input, project.id, options);
  }
  const query = input.query.trim();
  if (query.length > MAX_QUERY_CHARS) {
    throw new InvalidValueError(
      `Cannot use a query over ${MAX_QUERY_CHARS} characters`,
    );
  }
  try {
    parseQuery(query);
  } catch (error) {
    if (!(error instanceof QuerySyntaxError)) throw error;
    throw new InvalidValueError(
      `Cannot use query "${query}": ${error.message}`,
    );
  }
  if (input.factor !== undefined) {
    throw new InvalidValueError(
      `Cannot use a factor with a query rule: only rules --on escalating have one`,
    );
  }
  const webhook = checkWebhookUrl(input.webhook.trim(), options);
  const threshold = input.threshold;
  if (
    threshold !== undefined &&
    (!Number.isInteger(threshold) || threshold < 0 ||
      threshold > MAX_THRESHOLD)
  ) {
    throw new InvalidValueError(
      `Cannot use threshold "${threshold}": expected a whole number of matches from 0`,
    );
  }
  if (threshold === undefined && input.windowMs !== undefined) {
    throw new InvalidValueError(
      `Cannot use a window without a threshold: give both (more than N matches within the window)`,
    );
  }
  const windowMs = threshold === undefined ? undefined : checkDuration(
    "window",
    input.windowMs ?? DEFAULT_WINDOW_MS,
    MIN_WINDOW_MS,
  );
  const everyMs = checkDuration(
    "every",
    input.everyMs ?? windowMs ?? DEFAULT_EVERY_MS,
    0,
  );
  return await storeRule(kv, {
    projectId: project.id,
    query,
    ...(threshold === undefined ? {} : { threshold, windowMs }),
    everyMs,
    webhook,
  }, options);
}

/** The refusal of a rule past {@linkcode MAX_RULES_PER_PROJECT}. */
function tooManyRules(projectId: string): InvalidValueError {
  return new InvalidValueError(
    `Cannot add a rule: project "${projectId}" has ${MAX_RULES_PER_PROJECT} already; remove one first`,
  );
}

/**
 * Stores a new rule under a fresh id and secret; past the cap (rules added
 * at the same moment), takes it back and refuses.
 */
async function storeRule(
  kv: Deno.Kv,
  fields: Omit<AlertRule, "id" | "secret" | "createdAt">,
  options: AddAlertRuleOptions,
): Promise<AlertRule> {
  for (;;) {
    const rule: AlertRule = {
      id: randomHex(8),
      ...fields,
      secret: `whsec_${randomHex(32)}`,
      createdAt: (options.now ?? Date.now)(),
    };
    if (!await putNewAlertRule(kv, rule)) continue;
    const { projectId } = rule;
    await keepWithin(
      kv,
      alertRuleKey(projectId),
      MAX_RULES_PER_PROJECT,
      [alertRuleKey(projectId, rule.id), alertStateKey(projectId, rule.id)],
      () => tooManyRules(projectId),
    );
    return rule;
  }
}

/**
 * A rule on error groups: `new`, `regressed` or `escalating` (with its
 * factor), one delivery per group event, no query nor threshold.
 */
async function addGroupRule(
  kv: Deno.Kv,
  input: AlertRuleInput,
  projectId: string,
  options: AddAlertRuleOptions,
): Promise<AlertRule> {
  const on = input.on as GroupTrigger;
  if (!GROUP_TRIGGERS.includes(on)) {
    throw new InvalidValueError(
      `Cannot alert on "${
        String(input.on).slice(0, 40)
      }": expected new, regressed or escalating`,
    );
  }
  if (
    input.query.trim() !== "" || input.threshold !== undefined ||
    input.windowMs !== undefined || input.everyMs !== undefined
  ) {
    throw new InvalidValueError(
      "Cannot use a query, a threshold, a window or an interval with a rule on error groups: it fires once per group event; give --on alone",
    );
  }
  const factor = input.factor ?? DEFAULT_FACTOR;
  if (on !== "escalating" && input.factor !== undefined) {
    throw new InvalidValueError(
      `Cannot use a factor with "${on}": only escalating rules have one`,
    );
  }
  if (!Number.isFinite(factor) || factor < MIN_FACTOR || factor > MAX_FACTOR) {
    throw new InvalidValueError(
      `Cannot use factor "${factor}": expected from ${MIN_FACTOR} to ${MAX_FACTOR}`,
    );
  }
  return await storeRule(kv, {
    projectId,
    query: GROUP_QUERY,
    on,
    ...(on === "escalating" ? { factor } : {}),
    everyMs: 0,
    webhook: checkWebhookUrl(input.webhook.trim(), options),
  }, options);
}

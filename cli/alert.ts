/**
 * `deno task alert …`: adding, listing and removing a project's alert rules
 * and reading a rule's delivery history (docs/alerts.md). Built on
 * alerts/rules.ts and db/alerts.ts; this module only parses arguments and
 * prints. A rule's signing secret is printed by `add` only.
 *
 * @module
 */
import { projectIdOf } from "./resolve.ts";
import { recordCliChange } from "./audit.ts";
import {
  type AlertRule,
  deleteAlertRule,
  type DeliveryAttempt,
  getAlertRule,
  listAlertRules,
  readAlertHistory,
} from "../db/alerts.ts";
import {
  addAlertRule,
  AlertRuleNotFoundError,
  formatAlertDuration,
  GROUP_TRIGGERS,
  MAX_FACTOR,
  MIN_FACTOR,
  parseAlertDuration,
  ruleTrigger,
} from "../alerts/rules.ts";
import {
  choiceFlag,
  type CommandContext,
  flags,
  type Parsed,
  println,
  requiredFlag,
  stringFlag,
  UsageError,
} from "./command.ts";
import { printList, printResult } from "./output.ts";
import {
  dispatch,
  JSON_FLAG,
  projectList,
  subcommand,
  type Subcommands,
} from "./subcommands.ts";
import { formatTable, formatTime, inert } from "./format.ts";
import { DEFAULT_FACTOR, MIN_ESCALATING } from "../alerts/group_rules.ts";

const USAGE: Record<string, string> = {
  "": `Alert rules: a query, an optional threshold and a webhook.

Usage:
  deno task alert add PROJECT --query Q --webhook URL [--threshold N --window 5m]
                      [--every 5m] [--json]
  deno task alert add PROJECT --on new|regressed|escalating --webhook URL
                      [--factor N] [--json]
  deno task alert list PROJECT [--json]
  deno task alert remove PROJECT RULE_ID
  deno task alert history PROJECT RULE_ID [--json]

See docs/alerts.md for the delivery format and how to verify its signature.`,
  add: `Add an alert rule to a project.

Usage: deno task alert add PROJECT --query Q --webhook URL
                           [--threshold N --window 5m] [--every 5m] [--json]
       deno task alert add PROJECT --on new|regressed|escalating --webhook URL
                           [--factor N] [--json]

A delivery is POSTed to the webhook when new entries match the query (the
explorer's syntax, e.g. "level:critical" or "payment declined"). With
--threshold, only when more than N entries match within --window (default 5m).
At most one delivery per --every (default 1m, or the window with a
threshold); what matches meanwhile is counted in the next one.

The rule's signing secret is printed this once: receivers verify the
X-Logs-Signature header with it. Webhooks on loopback or private addresses
are refused unless ALERT_PRIVATE_TARGETS=allow.

With --on, a rule on error groups instead: one delivery per group that is
new (its first entry), regressed (resolved, then seen again in a later
release, or at all when resolved without one), or escalating (more entries
in the current hour than --factor times its average hourly rate over the 7
days before, default ${DEFAULT_FACTOR}, and at least ${MIN_ESCALATING}; once a day per group).
Each delivery carries the entry's title, top frame and release, and a link
to the group's page (docs/errors.md#alerts-on-error-groups).

Options:
  --query Q        Entries to alert on (required without --on)
  --on T           new, regressed or escalating: a rule on error groups
  --factor N       Of escalating: N times the average (${MIN_FACTOR} to ${MAX_FACTOR})
  --webhook URL    http or https URL to POST to (required)
  --threshold N    Fire only above N matches within the window
  --window D       The threshold's window: 30s, 5m, 1h (default 5m)
  --every D        At most one delivery per this long
  --json           Print the rule as one JSON object, secret included
  -h, --help       Show this help`,
  list: `List a project's alert rules.

Usage: deno task alert list PROJECT [--json]`,
  remove: `Remove an alert rule and its history.

Usage: deno task alert remove PROJECT RULE_ID`,
  history: `Show a rule's last 50 delivery attempts, newest first.

Usage: deno task alert history PROJECT RULE_ID [--json]`,
};

function ruleJson(
  rule: AlertRule,
  withSecret = false,
): Record<string, unknown> {
  return {
    id: rule.id,
    projectId: rule.projectId,
    query: rule.query,
    ...ruleTrigger(rule),
    webhook: rule.webhook,
    createdAt: new Date(rule.createdAt).toISOString(),
    ...(withSecret ? { secret: rule.secret } : {}),
  };
}

function attemptJson(a: DeliveryAttempt): Record<string, unknown> {
  return { ...a, at: new Date(a.at).toISOString() };
}

function durationFlag(parsed: Parsed, name: string): number | undefined {
  const text = stringFlag(parsed, name);
  if (text === undefined) return undefined;
  const ms = parseAlertDuration(text);
  if (ms === undefined) {
    throw new UsageError(
      `Cannot read --${name} "${text}": expected a duration such as "30s", "5m" or "1h"`,
    );
  }
  return ms;
}

function describeScope(rule: AlertRule): string {
  if (rule.on === "escalating") return `escalating group (× ${rule.factor})`;
  if (rule.on !== undefined) return `${rule.on} group`;
  return rule.threshold === undefined
    ? "every match"
    : `> ${rule.threshold} in ${formatAlertDuration(rule.windowMs ?? 0)}`;
}

const SUBCOMMANDS: Subcommands = {
  add: subcommand({
    positionals: ["PROJECT"],
    options: flags({
      string: [
        "query",
        "webhook",
        "threshold",
        "window",
        "every",
        "on",
        "factor",
      ],
      boolean: ["json"],
    }),
    async run(ctx, parsed, [named]) {
      const projectId = await projectIdOf(ctx.kv, named);
      const on = choiceFlag(parsed, "on", GROUP_TRIGGERS);
      const factorText = stringFlag(parsed, "factor");
      if (
        factorText !== undefined && !/^\d{1,6}(\.\d{1,3})?$/.test(factorText)
      ) {
        throw new UsageError(
          `Cannot read --factor "${factorText}": expected a number such as 10`,
        );
      }
      const query = on === undefined
        ? requiredFlag(parsed, "alert add", "query", "Q")
        : stringFlag(parsed, "query") ?? "";
      const webhook = requiredFlag(parsed, "alert add", "webhook", "URL");
      const thresholdText = stringFlag(parsed, "threshold");
      if (thresholdText !== undefined && !/^\d{1,10}$/.test(thresholdText)) {
        throw new UsageError(
          `Cannot read --threshold "${thresholdText}": expected a whole number`,
        );
      }
      const windowMs = durationFlag(parsed, "window");
      const everyMs = durationFlag(parsed, "every");
      const rule = await addAlertRule(ctx.kv, {
        projectId,
        query,
        webhook,
        ...(thresholdText === undefined
          ? {}
          : { threshold: Number(thresholdText) }),
        ...(windowMs === undefined ? {} : { windowMs }),
        ...(everyMs === undefined ? {} : { everyMs }),
        ...(on === undefined ? {} : { on }),
        ...(factorText === undefined ? {} : { factor: Number(factorText) }),
      }, { allowPrivate: ctx.allowPrivateTargets ?? false, now: ctx.now });
      await recordCliChange(ctx, {
        projectId,
        action: "alert.add",
        detail: `${rule.id}: ${on === undefined ? query : `on ${on}`} -> ${
          new URL(webhook).host
        }`,
      });
      return printResult(ctx, parsed, {
        json: ruleJson(rule, true),
        text: [
          `Added alert rule ${rule.id}`,
          formatTable([
            ["Query", inert(rule.query)],
            ["Fires on", describeScope(rule)],
            ["At most every", formatAlertDuration(rule.everyMs)],
            ["Webhook", inert(rule.webhook)],
            ["Secret", rule.secret],
          ]),
          "",
          "The secret signs each delivery (X-Logs-Signature); it is not shown again.",
        ],
      });
    },
  }),
  list: projectList(listAlertRules, () => ({
    toJson: (r) => ruleJson(r),
    empty: "No alert rules",
    header: ["ID", "QUERY", "FIRES ON", "EVERY", "WEBHOOK"],
    row: (r) => [
      r.id,
      inert(r.query),
      describeScope(r),
      formatAlertDuration(r.everyMs),
      inert(r.webhook),
    ],
  })),
  remove: subcommand({
    positionals: ["PROJECT", "RULE_ID"],
    options: {},
    async run(ctx, _parsed, [named, ruleId]) {
      const projectId = await projectIdOf(ctx.kv, named);
      if (!await deleteAlertRule(ctx.kv, projectId, ruleId)) {
        throw new AlertRuleNotFoundError(projectId, ruleId);
      }
      await recordCliChange(ctx, {
        projectId,
        action: "alert.remove",
        detail: ruleId,
      });
      println(ctx, `Removed alert rule ${ruleId}`);
      return 0;
    },
  }),
  history: subcommand({
    positionals: ["PROJECT", "RULE_ID"],
    options: JSON_FLAG,
    async run(ctx, parsed, [named, ruleId]) {
      const projectId = await projectIdOf(ctx.kv, named);
      if (await getAlertRule(ctx.kv, projectId, ruleId) === null) {
        throw new AlertRuleNotFoundError(projectId, ruleId);
      }
      const history = await readAlertHistory(ctx.kv, projectId, ruleId);
      return printList(ctx, parsed, history, {
        toJson: attemptJson,
        empty: "No deliveries yet",
        header: ["TIME", "ATTEMPT", "COUNT", "RESULT", "OUTCOME"],
        row: (a) => [
          formatTime(a.at),
          String(a.attempt),
          String(a.count),
          a.status === undefined ? inert(a.error ?? "-") : String(a.status),
          a.outcome,
        ],
      });
    },
  }),
};

/**
 * `deno task alert …`.
 *
 * @example
 * ```ts
 * const code = await alertCommand({ ...ctx, args: ["list", projectId, "--json"] });
 * ```
 */
export function alertCommand(ctx: CommandContext): Promise<number> {
  return dispatch(ctx, {
    command: "alert",
    usage: USAGE,
    subcommands: SUBCOMMANDS,
    failures: [AlertRuleNotFoundError],
  });
}

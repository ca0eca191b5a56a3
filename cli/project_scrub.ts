/**
 * `deno task project scrub PROJECT …`: a project's scrubbing rules
 * (docs/privacy.md) — listing them, adding a key, a detector or a pattern
 * with its action, removing one, and a dry run of a rule over the project's
 * recent entries before it is saved. Built on db/scrub.ts; every change goes
 * to the project's audit log.
 *
 * @module
 */
import {
  getProject,
  type Project,
  ProjectNotFoundError,
} from "../db/projects.ts";
import {
  addScrubRule,
  describeRule,
  type DryRun,
  dryRunRule,
  removeScrubRule,
  ruleAuditDetail,
  type ScrubRuleInput,
  scrubRules,
} from "../db/scrub.ts";
import {
  DEFAULT_SECRET_KEYS,
  SCRUB_ACTIONS,
  type ScrubRule,
} from "../domain/scrub.ts";
import { DETECTORS } from "../domain/detectors.ts";
import {
  booleanFlag,
  choiceFlag,
  type CommandContext,
  flags,
  type Parsed,
  stringFlag,
  UsageError,
} from "./command.ts";
import { printResult } from "./output.ts";
import { type Subcommand, subcommand } from "./subcommands.ts";
import { formatTable, inert } from "./format.ts";
import { recordCliChange } from "./audit.ts";

/** Help of `project scrub`. */
export const SCRUB_USAGE =
  `Show and change what is scrubbed from a project's entries before they are stored.

Usage: deno task project scrub ID [--list]
       deno task project scrub ID --key NAME [--action remove|mask|hash] [--dry-run]
       deno task project scrub ID --detector email|ip|token|iban|card [--action …] [--dry-run]
       deno task project scrub ID --pattern REGEX [--action …] [--dry-run]
       deno task project scrub ID --remove RULE
       deno task project scrub ID --dry-run

Always on: values under keys naming secrets (${
    DEFAULT_SECRET_KEYS.join(", ")
  }) and Luhn-valid card numbers become "[Filtered]".

Options:
  --key NAME         Also scrub values under keys naming NAME (any case,
                     any depth, "user_email" matches "userEmail")
  --detector NAME    Scrub what a detector finds inside any string: email,
                     ip (IPv4 and IPv6), token (bearer and JWT), iban, card
                     (sets the action of the card default)
  --pattern REGEX    Scrub matches of a regular expression (at most 200
                     characters, one unbounded quantifier, no nested
                     quantifier, backreference or lookaround)
  --action ACTION    remove (default: "[Filtered]"), mask (keep the last 4
                     characters) or hash (keyed per project: one value
                     always hashes alike, so it still groups and counts)
  --remove RULE      Remove a rule, by its id (see --list) or what it names
  --dry-run          Save nothing: show what the rules (with the one given)
                     would change in the project's 1,000 latest entries
  --list             List the rules (what runs without options)
  --json             Print one JSON object
  -h, --help         Show this help`;

const OPTIONS = flags({
  string: ["key", "detector", "pattern", "action", "remove"],
  boolean: ["json", "dry-run", "list"],
});

function ruleJson(rule: ScrubRule): Record<string, unknown> {
  return { ...rule };
}

function rulesText(rules: ScrubRule[]): string {
  const rows = [["RULE", "SCRUBS", "ACTION"]];
  rows.push(["(default)", "keys naming secrets", "remove"]);
  const card = rules.find((r) => r.id === "detector:card");
  if (!card) rows.push(["(default)", "card numbers", "remove"]);
  for (const rule of rules) {
    const what = rule.kind === "key"
      ? `key "${inert(rule.key)}"`
      : rule.kind === "detector"
      ? `detector ${rule.detector}`
      : `pattern /${inert(rule.pattern)}/`;
    rows.push([rule.id, what, rule.action]);
  }
  return formatTable(rows);
}

function dryRunText(run: DryRun): string[] {
  const lines = [
    `Of the latest ${run.read} entries, ${run.changed} would change.`,
  ];
  if (run.changes.length > 0) lines.push("");
  for (const c of run.changes) {
    lines.push(
      `${c.entryId}  ${inert(c.path)}: ${inert(c.before)} → ${inert(c.after)}`,
    );
  }
  return lines;
}

/** What `project scrub` was asked to do. */
interface ScrubRequest {
  input?: ScrubRuleInput;
  remove?: string;
  dryRun: boolean;
}

/** Reads and checks the flags of `project scrub`. */
function scrubRequest(parsed: Parsed): ScrubRequest {
  const action = choiceFlag(parsed, "action", SCRUB_ACTIONS);
  const key = stringFlag(parsed, "key");
  const detector = choiceFlag(parsed, "detector", DETECTORS);
  const pattern = stringFlag(parsed, "pattern");
  const remove = stringFlag(parsed, "remove");
  const list = booleanFlag(parsed, "list");
  const dryRun = booleanFlag(parsed, "dry-run");
  const rule = [key, detector, pattern].filter((v) => v !== undefined).length;
  if (rule + (remove === undefined ? 0 : 1) + (list ? 1 : 0) > 1) {
    throw new UsageError(
      `Cannot run "project scrub": give one of --key, --detector, --pattern, --remove or --list`,
    );
  }
  if (action !== undefined && rule === 0) {
    throw new UsageError(
      `Cannot use --action alone: it goes with --key, --detector or --pattern`,
    );
  }
  if (dryRun && (remove !== undefined || list)) {
    throw new UsageError(
      `Cannot use --dry-run with --remove or --list: it goes with a rule, or alone`,
    );
  }
  const acted = action ? { action } : {};
  const input: ScrubRuleInput | undefined = key !== undefined
    ? { kind: "key", key, ...acted }
    : detector !== undefined
    ? { kind: "detector", detector, ...acted }
    : pattern !== undefined
    ? { kind: "pattern", pattern, ...acted }
    : undefined;
  return {
    ...(input ? { input } : {}),
    ...(remove === undefined ? {} : { remove }),
    dryRun,
  };
}

/** Prints a project's rules after `headline`; returns 0. */
function printRules(
  ctx: CommandContext,
  parsed: Parsed,
  project: Project,
  headline: string[],
): number {
  const rules = scrubRules(project);
  return printResult(ctx, parsed, {
    json: {
      projectId: project.id,
      defaults: { keys: DEFAULT_SECRET_KEYS, card: "remove" },
      rules: rules.map(ruleJson),
    },
    text: [...headline, rulesText(rules)],
  });
}

/** `--dry-run`: the saved rules, with `input` when given, over recent entries. */
async function dryRun(
  ctx: CommandContext,
  parsed: Parsed,
  project: Project,
  input: ScrubRuleInput | undefined,
): Promise<number> {
  const { rule, run } = await dryRunRule(ctx.kv, project, input);
  return printResult(ctx, parsed, {
    json: {
      projectId: project.id,
      ...(rule ? { rule: ruleJson(rule) } : {}),
      ...run,
    },
    text: [
      rule
        ? `Dry run of ${describeRule(rule)} (not saved):`
        : "Dry run of the saved rules:",
      ...dryRunText(run),
    ],
  });
}

/** `project scrub ID …`. */
export const scrubSubcommand: Subcommand = subcommand({
  positionals: ["ID"],
  options: OPTIONS,
  async run(ctx, parsed, [id]) {
    const request = scrubRequest(parsed);
    const project = await getProject(ctx.kv, id);
    if (project === null) throw new ProjectNotFoundError(id);
    if (request.dryRun) {
      return await dryRun(ctx, parsed, project, request.input);
    }
    const change = request.input !== undefined
      ? {
        action: "scrub.add",
        ...await addScrubRule(ctx.kv, id, request.input),
      }
      : request.remove !== undefined
      ? {
        action: "scrub.remove",
        ...await removeScrubRule(ctx.kv, id, request.remove),
      }
      : undefined;
    if (change === undefined) return printRules(ctx, parsed, project, []);
    await recordCliChange(ctx, {
      projectId: id,
      action: change.action,
      detail: ruleAuditDetail(change.rule),
    });
    const done = change.action === "scrub.add"
      ? `Saved rule "${change.rule.id}" (${inert(describeRule(change.rule))})`
      : `Removed rule "${change.rule.id}"`;
    return printRules(ctx, parsed, change.project, [done, ""]);
  },
});

/**
 * `deno task project retention-rules PROJECT …`: retention by filter
 * (docs/privacy.md#retention-rules), beside `project retention`. Built on
 * db/retention_rules.ts; every change goes to the project's audit log.
 *
 * @module
 */
import {
  getProject,
  type Project,
  ProjectNotFoundError,
} from "../db/projects.ts";
import {
  addRetentionRule,
  MAX_RETENTION_RULES,
  removeRetentionRule,
} from "../db/retention_rules.ts";
import { flags, type Parsed, stringFlag, UsageError } from "./command.ts";
import { formatTable } from "./format.ts";
import { printResult } from "./output.ts";
import { type Subcommand, subcommand } from "./subcommands.ts";
import { recordCliChange } from "./audit.ts";

/** Help of `project retention-rules`. */
export const RETENTION_RULES_USAGE =
  `Show and change how long entries are kept by their level.

Usage: deno task project retention-rules ID [--json]
       deno task project retention-rules ID --add FILTER --days N
       deno task project retention-rules ID --remove FILTER

A FILTER is "level" then <, <=, =, >= or > and a level: "level<=info".
info < warning < error < critical; a custom level matches "=" only. An
entry is kept as long as the longest rule matching it says, or the
project's retention when none matches; the merger deletes entries once the
whole chunk they are stored in is past their time. At most ${MAX_RETENTION_RULES} rules.

Options:
  --add FILTER    Add a rule (replacing one with the same filter)
  --days N        Days its entries are kept (1 to 3650)
  --remove FILTER Remove the rule with that filter
  --json          Print {"projectId":…,"retentionDays":N,"rules":[{"filter","days"}]}
  -h, --help      Show this help`;

function parseDays(parsed: Parsed): number {
  const text = stringFlag(parsed, "days");
  if (text === undefined) {
    throw new UsageError(`Cannot add a rule without --days`);
  }
  if (!/^\d{1,5}$/.test(text)) {
    throw new UsageError(
      `Cannot read --days "${text}": expected a whole number from 1 to 3650`,
    );
  }
  return Number(text);
}

function printRules(
  ctx: Parameters<Subcommand["run"]>[0],
  parsed: Parsed,
  project: Project,
  headline: string[],
): number {
  const rules = project.retentionRules ?? [];
  const rows = [["FILTER", "KEPT"]];
  for (const r of rules) rows.push([r.filter, `${r.days} days`]);
  rows.push(["(any other)", `${project.retentionDays} days`]);
  return printResult(ctx, parsed, {
    json: {
      projectId: project.id,
      retentionDays: project.retentionDays,
      rules: rules.map((r) => ({ filter: r.filter, days: r.days })),
    },
    text: [...headline, formatTable(rows)],
  });
}

/** `project retention-rules ID …`. */
export const retentionRulesSubcommand: Subcommand = subcommand({
  positionals: ["ID"],
  options: flags({ string: ["add", "days", "remove"], boolean: ["json"] }),
  async run(ctx, parsed, [id]) {
    const add = stringFlag(parsed, "add");
    const remove = stringFlag(parsed, "remove");
    if (add !== undefined && remove !== undefined) {
      throw new UsageError(`Cannot use --add with --remove: give one`);
    }
    if (add === undefined && stringFlag(parsed, "days") !== undefined) {
      throw new UsageError(`Cannot use --days alone: it goes with --add`);
    }
    if (add !== undefined) {
      const project = await addRetentionRule(
        ctx.kv,
        id,
        add,
        parseDays(parsed),
      );
      const rule = project.retentionRules!.at(-1)!;
      await recordCliChange(ctx, {
        projectId: id,
        action: "settings.retention_rule.add",
        detail: `${rule.filter} ${rule.days}`,
      });
      return printRules(ctx, parsed, project, [
        `Entries matching ${rule.filter} are kept ${rule.days} days`,
        "",
      ]);
    }
    if (remove !== undefined) {
      const project = await removeRetentionRule(ctx.kv, id, remove);
      await recordCliChange(ctx, {
        projectId: id,
        action: "settings.retention_rule.remove",
        detail: remove,
      });
      return printRules(ctx, parsed, project, [`Removed rule ${remove}`, ""]);
    }
    const project = await getProject(ctx.kv, id);
    if (project === null) throw new ProjectNotFoundError(id);
    return printRules(ctx, parsed, project, []);
  },
});

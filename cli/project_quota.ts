/**
 * `deno task project quota PROJECT …` and `deno task project spike
 * PROJECT …`: a project's quota (entries stored per day and per minute)
 * and spike protection (docs/privacy.md#quotas). Built on db/quota.ts;
 * every change goes to the project's audit log.
 *
 * @module
 */
import {
  getProject,
  type Project,
  ProjectNotFoundError,
} from "../db/projects.ts";
import { changeQuota, setQuota, setSpikeProtection } from "../db/quota.ts";
import {
  booleanFlag,
  type CommandContext,
  flags,
  type Parsed,
  stringFlag,
  UsageError,
} from "./command.ts";
import { printResult } from "./output.ts";
import { type Subcommand, subcommand } from "./subcommands.ts";
import { recordCliChange } from "./audit.ts";

/** Help of `project quota`. */
export const QUOTA_USAGE = `Show or set how many entries a project stores.

Usage: deno task project quota ID [--per-day N|off] [--per-minute M|off] [--json]
       deno task project quota ID --off

Past a quota, entries are counted as over_quota and not stored; the sender
still gets "200 queued". The first entry of an error group never seen
before is stored even over the quota, and error groups count every entry.
Days are UTC days. Quotas hold across every process sharing the database.

Options:
  --per-day N     Entries stored per day at most (1 to 1,000,000,000);
                  off removes this bound. A bound not given is kept
  --per-minute M  Entries stored per minute at most (1 to 10,000,000);
                  off removes this bound
  --off           Remove both bounds
  --json          Print {"projectId":…,"quota":{"perDay":N,"perMinute":M}|null}
  -h, --help      Show this help`;

/** Help of `project spike`. */
export const SPIKE_USAGE = `Show or set a project's spike protection.

Usage: deno task project spike ID [--multiple X --keep K] [--json]
       deno task project spike ID --off

While the project's rate (entries a minute, as an hourly rate) passes X
times its hourly average of the 7 days before today (at least 600 an hour),
1 in K info and warning entries is stored; the others are counted as
sampled. Errors and other levels are never sampled.

Options:
  --multiple X  A spike is a rate past X times the average (2 to 1,000)
  --keep K      In a spike, store 1 in K info and warning entries (2 to 1,000)
  --off         Turn spike protection off
  --json        Print {"projectId":…,"spike":{"multiple":X,"keep":K}|null}
  -h, --help    Show this help`;

function wholeFlag(parsed: Parsed, name: string): number | undefined {
  const text = stringFlag(parsed, name);
  if (text === undefined) return undefined;
  if (!/^\d{1,12}$/.test(text.replaceAll("_", ""))) {
    throw new UsageError(
      `Cannot read --${name} "${text}": expected a whole number`,
    );
  }
  return Number(text.replaceAll("_", ""));
}

/** A bound's flag: a whole number, `off` (`null`: remove it), or not given. */
function boundFlag(parsed: Parsed, name: string): number | null | undefined {
  return stringFlag(parsed, name) === "off" ? null : wholeFlag(parsed, name);
}

function numberFlag(parsed: Parsed, name: string): number | undefined {
  const text = stringFlag(parsed, name);
  if (text === undefined) return undefined;
  if (!/^\d{1,6}(\.\d{1,3})?$/.test(text)) {
    throw new UsageError(`Cannot read --${name} "${text}": expected a number`);
  }
  return Number(text);
}

async function projectOf(kv: Deno.Kv, id: string): Promise<Project> {
  const project = await getProject(kv, id);
  if (project === null) throw new ProjectNotFoundError(id);
  return project;
}

function quotaText(project: Project): string {
  const q = project.quota;
  if (!q) return `Project "${project.id}" has no quota.`;
  const parts = [
    q.perDay === undefined ? null : `${q.perDay} entries a day`,
    q.perMinute === undefined ? null : `${q.perMinute} entries a minute`,
  ].filter((p) => p !== null);
  return `Project "${project.id}" stores at most ${parts.join(" and ")}.`;
}

function spikeText(project: Project): string {
  const s = project.spike;
  return s
    ? `Project "${project.id}" keeps 1 in ${s.keep} info and warning entries past ${s.multiple} times its hourly average.`
    : `Project "${project.id}" has no spike protection.`;
}

/**
 * Saves a change (when `save` is given) to the audit log as `action`, then
 * prints the project's `field` (`quota` or `spike`) as JSON or as `text`.
 */
async function saveAndShow(
  ctx: CommandContext,
  parsed: Parsed,
  id: string,
  change: {
    save: (() => Promise<Project>) | null;
    field: "quota" | "spike";
    text: (project: Project) => string;
  },
): Promise<number> {
  let project = await projectOf(ctx.kv, id);
  if (change.save) {
    project = await change.save();
    const value = project[change.field];
    await recordCliChange(ctx, {
      projectId: id,
      action: `settings.${change.field}`,
      detail: value === undefined ? "off" : JSON.stringify(value),
    });
  }
  return printResult(ctx, parsed, {
    json: {
      projectId: project.id,
      [change.field]: project[change.field] ?? null,
    },
    text: [change.text(project)],
  });
}

/** `project quota ID …`. */
export const quotaSubcommand: Subcommand = subcommand({
  positionals: ["ID"],
  options: flags({
    string: ["per-day", "per-minute"],
    boolean: ["json", "off"],
  }),
  async run(ctx, parsed, [id]) {
    const perDay = boundFlag(parsed, "per-day");
    const perMinute = boundFlag(parsed, "per-minute");
    const off = booleanFlag(parsed, "off");
    const given = perDay !== undefined || perMinute !== undefined;
    if (off && given) {
      throw new UsageError(
        `Cannot use --off with --per-day or --per-minute: give one or the other`,
      );
    }
    return await saveAndShow(ctx, parsed, id, {
      save: off
        ? () => setQuota(ctx.kv, id, null)
        : given
        ? () => changeQuota(ctx.kv, id, { perDay, perMinute })
        : null,
      field: "quota",
      text: quotaText,
    });
  },
});

/** `project spike ID …`. */
export const spikeSubcommand: Subcommand = subcommand({
  positionals: ["ID"],
  options: flags({ string: ["multiple", "keep"], boolean: ["json", "off"] }),
  async run(ctx, parsed, [id]) {
    const multiple = numberFlag(parsed, "multiple");
    const keep = wholeFlag(parsed, "keep");
    const off = booleanFlag(parsed, "off");
    const given = [multiple, keep].filter((v) => v !== undefined).length;
    if (off ? given > 0 : given === 1) {
      throw new UsageError(
        off
          ? `Cannot use --off with --multiple or --keep: give one or the other`
          : `Cannot set spike protection: give both --multiple and --keep`,
      );
    }
    return await saveAndShow(ctx, parsed, id, {
      save: off || given === 2
        ? () =>
          setSpikeProtection(
            ctx.kv,
            id,
            off ? null : { multiple: multiple!, keep: keep! },
          )
        : null,
      field: "spike",
      text: spikeText,
    });
  },
});

/**
 * `deno task project …`: creating projects and changing their allow-list,
 * custom levels, retention, secret and scrubbing rules (cli/project_scrub.ts),
 * listing and showing them, deleting them with their logs. Built on
 * db/projects.ts; this module only parses arguments, holds the help texts
 * and prints a project (as JSON, the secret only when asked, or as an
 * aligned table). Secrets are printed by `create` and `rotate-secret` only,
 * never by `list` or `show`.
 *
 * @module
 */
import { deleteProject, deletionOf } from "../db/deletion.ts";
import {
  addLevel,
  allowValue,
  createProject,
  disallowValue,
  getProject,
  listProjects,
  type Project,
  ProjectNotFoundError,
  removeLevel,
  rotateSecret,
  setRetention,
} from "../db/projects.ts";
import { InvalidValueError } from "../db/validation.ts";
import { STANDARD_LEVELS } from "../domain/entry.ts";
import {
  booleanFlag,
  type CommandContext,
  EXIT_FAILURE,
  type Parsed,
  requiredFlag,
  stringFlag,
  stringFlags,
  UsageError,
  useColor,
} from "./command.ts";
import { printResult } from "./output.ts";
import {
  dispatch,
  JSON_FLAG,
  serviceList,
  type Subcommand,
  subcommand,
  type Subcommands,
} from "./subcommands.ts";
import {
  formatLevel,
  formatTable,
  formatTime,
  inert,
  parseDuration,
} from "./format.ts";
import { recordCliChange } from "./audit.ts";
import { SCRUB_USAGE, scrubSubcommand } from "./project_scrub.ts";
import {
  QUOTA_USAGE,
  quotaSubcommand,
  SPIKE_USAGE,
  spikeSubcommand,
} from "./project_quota.ts";
import {
  RETENTION_RULES_USAGE,
  retentionRulesSubcommand,
} from "./project_retention.ts";
import { resolveProject } from "./resolve.ts";

/** Help of `project` (key "") and of each subcommand. */
const USAGE: Record<string, string> = {
  "": `Manage projects.

Usage: deno task project <command> [options]

Commands:
  create --name NAME [--allow VALUE]...  Create a project; prints its secret
  list                                   List the projects
  show ID                                Show one project (no secret)
  allow ID VALUE                         Add an origin or app id to the allow-list
  disallow ID VALUE                      Remove one from the allow-list
  rotate-secret ID [--grace 24h]         Replace the secret; prints the new one
  levels ID [add|remove NAME]            Show, add or remove custom levels
  retention ID DAYS                      Keep new entries DAYS days
  retention-rules ID [--add F --days N]  Keep entries by level: "level<=info"
  scrub ID [--key|--detector|--pattern …] Show or change what is scrubbed
  quota ID [--per-day N] [--per-minute M] [--off]
                                         Entries stored per day and minute
  spike ID [--multiple X --keep K] [--off]
                                         Sampling in a spike
  delete ID [--yes]                      Delete the project and its logs

ID is a project's id or its name (a name several projects share is refused).
Every command takes --json (machine output) and --help.`,
  scrub: SCRUB_USAGE,
  "retention-rules": RETENTION_RULES_USAGE,
  quota: QUOTA_USAGE,
  spike: SPIKE_USAGE,
  create: `Create a project and print it, secret included.

Usage: deno task project create --name NAME [--allow VALUE]... [--json]

Options:
  --name NAME     Name shown to operators (1 to 200 characters)
  --allow VALUE   Browser origin ("https://app.example.com", no path, no
                  trailing slash) or app id in reverse domain notation
                  ("com.example.app.ios"); repeatable. "*" and "null" are refused
  --json          Print one JSON object: projectId, name, secret, settings, ...
  -h, --help      Show this help`,
  list: `List the projects (secrets are not shown).

Usage: deno task project list [--json]

Options:
  --json      Print a JSON array of projects
  -h, --help  Show this help`,
  show: `Show one project (its secret is not shown).

Usage: deno task project show ID [--json]

Options:
  --json      Print one JSON object
  -h, --help  Show this help`,
  allow: `Add a browser origin or an app id to a project's allow-list.

Usage: deno task project allow ID VALUE [--json]

VALUE is an origin "scheme://host[:port]" (no path, no trailing slash) or an
app id in reverse domain notation ("com.example.app.ios"). Wildcards ("*") and
"null" are refused. The change applies within 5 seconds.

Options:
  --json      Print the project as one JSON object
  -h, --help  Show this help`,
  disallow: `Remove a browser origin or an app id from a project's allow-list.

Usage: deno task project disallow ID VALUE [--json]

Options:
  --json      Print the project as one JSON object
  -h, --help  Show this help`,
  "rotate-secret": `Give a project a new secret and print it.

Usage: deno task project rotate-secret ID [--grace 24h] [--json]

The previous secret keeps verifying signatures during the grace period, so
servers can be redeployed with the new one.

Options:
  --grace DURATION  How long the previous secret still verifies, such as
                    "24h", "90m" or "0" (at once), at most 365d
                    (default: 24h)
  --json            Print projectId, secret and previousSecretExpiresAt
  -h, --help        Show this help`,
  levels: `Show, add or remove a project's custom levels.

Usage: deno task project levels ID [--json]
       deno task project levels ID add NAME [--json]
       deno task project levels ID remove NAME [--json]

The standard levels info, warning, error and critical are always accepted.
An entry with another level is stored only if the project declares it.
NAME matches ^[a-z][a-z0-9_-]{0,31}$.

Options:
  --json      Print the project as one JSON object
  -h, --help  Show this help`,
  retention: `Set how many days a project's entries are kept.

Usage: deno task project retention ID DAYS [--json]

DAYS is a whole number from 1 to 3650. A shorter retention also ends stored
entries past it at the next merge round; a longer one keeps entries stored from
now on longer (stored ones keep the time they were given).

Options:
  --json      Print the project as one JSON object
  -h, --help  Show this help`,
  delete: `Delete a project with its logs, counters and recent rejections.

Usage: deno task project delete ID [--yes] [--json]

Options:
  -y, --yes   Do not ask for confirmation
  --json      Print {"projectId", "deleted", "logs"}
  -h, --help  Show this help`,
};

/** Longest `--grace` of `rotate-secret`: a year. */
const MAX_GRACE_MS = 365 * 86_400_000;

async function requireProject(kv: Deno.Kv, id: string): Promise<Project> {
  const project = await getProject(kv, id);
  if (project === null) throw new ProjectNotFoundError(id);
  return project;
}

/** `project allow|disallow ID VALUE`: a change to the allow-list. */
function allowListCommand(
  change: typeof allowValue,
  action: string,
  headline: (id: string, value: string) => string,
): Subcommand {
  return subcommand({
    positionals: ["ID", "VALUE"],
    options: JSON_FLAG,
    async run(ctx, parsed, [id, value]) {
      const project = await change(ctx.kv, id, value);
      await recordCliChange(ctx, { projectId: id, action, detail: value });
      return printProject(ctx, parsed, project, headline(id, value));
    },
  });
}

const SUBCOMMANDS: Subcommands = {
  create: subcommand({
    positionals: [],
    options: {
      ...JSON_FLAG,
      name: { type: "string" },
      allow: { type: "string", multiple: true },
    },
    async run(ctx, parsed) {
      const name = requiredFlag(parsed, "project create", "name", "NAME");
      const project = await createProject(ctx.kv, {
        name,
        allow: stringFlags(parsed, "allow"),
        now: ctx.now,
      });
      // Printed before anything else can fail: the secret is shown once.
      const code = printResult(ctx, parsed, {
        json: projectJson(project, { secret: true }),
        text: [
          `Created project "${inert(project.name)}"`,
          "",
          describeProject(ctx, project, true),
          "",
          "Keep the secret somewhere safe: it is shown now and never again (rotate-secret makes a new one).",
        ],
      });
      await recordCliChange(ctx, {
        projectId: project.id,
        action: "project.create",
        detail: project.name,
      });
      return code;
    },
  }),
  list: serviceList(
    // By name, then age: projects of the same name sit together, told
    // apart by their ids and creation times.
    async (kv) =>
      (await listProjects(kv)).sort((a, b) =>
        a.name < b.name ? -1 : a.name > b.name ? 1 : a.createdAt - b.createdAt
      ),
    (ctx) => {
      const now = ctx.now();
      return {
        toJson: (p) => projectJson(p, { now }),
        empty:
          `No projects yet: create one with "deno task project create --name NAME"`,
        header: ["ID", "NAME", "ALLOWED", "LEVELS", "RETENTION", "CREATED"],
        row: (p) => [
          p.id,
          inert(p.name),
          inert(p.settings.allowedOrigin.join(", ")) || "-",
          [...STANDARD_LEVELS, ...p.levels].join(", "),
          `${p.retentionDays}d`,
          formatTime(p.createdAt),
        ],
      };
    },
  ),
  show: subcommand({
    positionals: ["ID"],
    options: JSON_FLAG,
    async run(ctx, parsed, [id]) {
      const project = await requireProject(ctx.kv, id);
      return printResult(ctx, parsed, {
        json: projectJson(project, { now: ctx.now() }),
        text: describeProject(ctx, project, false),
      });
    },
  }),
  allow: allowListCommand(
    allowValue,
    "settings.allow",
    (id, value) => `Allowed "${value}" in project "${id}"`,
  ),
  disallow: allowListCommand(
    disallowValue,
    "settings.disallow",
    (id, value) => `Removed "${value}" from the allow-list of project "${id}"`,
  ),
  "rotate-secret": subcommand({
    positionals: ["ID"],
    options: { ...JSON_FLAG, grace: { type: "string" } },
    async run(ctx, parsed, [id]) {
      const graceText = stringFlag(parsed, "grace") ?? "24h";
      const graceMs = parseDuration(graceText);
      // Checked before rotating: past its bound the expiry is no date, and
      // a rotated secret that is not printed is lost.
      if (graceMs === undefined || graceMs > MAX_GRACE_MS) {
        throw new UsageError(
          `Cannot read --grace "${graceText}": expected a duration such as "24h", "90m" or "0", at most 365d`,
        );
      }
      const project = await rotateSecret(ctx.kv, id, {
        graceMs,
        now: ctx.now,
      });
      const expires = project.previousSecretExpiresAt;
      // Printed before anything else can fail: the secret is shown once.
      const code = printResult(ctx, parsed, {
        json: {
          ...projectJson(project, { secret: true, now: ctx.now() }),
          previousSecretExpiresAt: expires === undefined
            ? null
            : new Date(expires).toISOString(),
        },
        text: [
          `New secret of project "${project.id}":`,
          "",
          `  ${project.secret}`,
          "",
          expires === undefined
            ? "The previous secret no longer verifies."
            : `The previous secret keeps verifying until ${
              formatTime(expires)
            }.`,
        ],
      });
      await recordCliChange(ctx, {
        projectId: id,
        action: "secret.rotate",
        detail: graceText,
      });
      return code;
    },
  }),
  levels: subcommand({
    positionals: ["ID", "add|remove?", "NAME?"],
    options: JSON_FLAG,
    async run(ctx, parsed, [id, action, level]) {
      let project: Project;
      let headline: string;
      if (action === undefined) {
        project = await requireProject(ctx.kv, id);
        headline = `Levels of project "${id}"`;
      } else if (action !== "add" && action !== "remove") {
        throw new UsageError(
          `Cannot run "project levels": expected "add" or "remove", got "${action}"`,
        );
      } else if (level === undefined) {
        throw new UsageError(
          `Cannot run "project levels ${action}": missing NAME (see --help)`,
        );
      } else if (action === "add") {
        project = await addLevel(ctx.kv, id, level);
        headline = `Added level "${level}" to project "${id}"`;
      } else {
        project = await removeLevel(ctx.kv, id, level);
        headline = `Removed level "${level}" from project "${id}"`;
      }
      if (action !== undefined) {
        await recordCliChange(ctx, {
          projectId: id,
          action: `settings.levels.${action}`,
          detail: level!,
        });
      }
      const color = useColor(ctx);
      return printResult(ctx, parsed, {
        json: projectJson(project, { now: ctx.now() }),
        text: [
          headline,
          "",
          formatTable([
            [
              "Standard",
              STANDARD_LEVELS.map((l) => formatLevel(l, color)).join(", "),
            ],
            [
              "Custom",
              project.levels.map((l) => formatLevel(l, color)).join(", ") ||
              "(none)",
            ],
          ]),
        ],
      });
    },
  }),
  retention: subcommand({
    positionals: ["ID", "DAYS"],
    options: JSON_FLAG,
    async run(ctx, parsed, [id, days]) {
      if (!/^\d{1,5}$/.test(days)) {
        throw new InvalidValueError(
          `Cannot keep entries for "${days}" days: expected a whole number from 1 to 3650`,
        );
      }
      const project = await setRetention(ctx.kv, id, Number(days));
      await recordCliChange(ctx, {
        projectId: id,
        action: "settings.retention",
        detail: days,
      });
      return printProject(
        ctx,
        parsed,
        project,
        `Entries of project "${id}" are kept ${project.retentionDays} days`,
      );
    },
  }),
  scrub: scrubSubcommand,
  "retention-rules": retentionRulesSubcommand,
  quota: quotaSubcommand,
  spike: spikeSubcommand,
  delete: subcommand({
    positionals: ["ID"],
    options: { ...JSON_FLAG, yes: { type: "boolean", short: "y" } },
    async run(ctx, parsed, [id]) {
      // A deletion cut short goes on (db/deletion.ts).
      const project = await getProject(ctx.kv, id) ??
        await deletionOf(ctx.kv, id) ?? await requireProject(ctx.kv, id);
      if (!booleanFlag(parsed, "yes")) {
        ctx.stderr(
          `Delete project "${
            inert(project.name)
          }" (${project.id}) and all its logs? [y/N] `,
        );
        const answer = (await (ctx.readLine?.() ?? Promise.resolve(null)))
          ?.trim().toLowerCase();
        if (answer !== "y" && answer !== "yes") {
          if (answer === undefined) ctx.stderr("\n");
          ctx.stderr(
            `Cannot delete project "${project.id}": not confirmed (pass --yes to skip the question)\n`,
          );
          return EXIT_FAILURE;
        }
      }
      const logs = await deleteProject(ctx.kv, project.id);
      await recordCliChange(ctx, {
        projectId: null,
        action: "project.delete",
        detail: `${project.name} (${project.id})`,
      });
      return printResult(ctx, parsed, {
        json: { projectId: project.id, deleted: true, logs },
        text: `Deleted project "${
          inert(project.name)
        }" (${project.id}) and ${logs} ${logs === 1 ? "entry" : "entries"}`,
      });
    },
  }),
};

/**
 * `deno task project <command> …`: dispatches on the first argument.
 *
 * @example
 * ```ts
 * const code = await projectCommand({ ...ctx, args: ["create", "--name", "web", "--json"] });
 * ```
 */
export function projectCommand(ctx: CommandContext): Promise<number> {
  return dispatch(ctx, {
    command: "project",
    usage: USAGE,
    subcommands: SUBCOMMANDS,
    async around(name, parsed, run) {
      // The ID of every subcommand but these may be a name (cli/resolve.ts).
      const named = parsed.positionals[0];
      if (name !== "create" && name !== "list" && named !== undefined) {
        parsed.positionals[0] = (await resolveProject(ctx.kv, named).catch(
          async (error) => {
            // A deletion cut short goes on, by its id or name.
            const cut = name === "delete" &&
              error instanceof ProjectNotFoundError &&
              await deletionOf(ctx.kv, named);
            if (!cut) throw error;
            return cut;
          },
        )).id;
      }
      return await run();
    },
  });
}

/** The JSON form of a project; the secret only when asked. */
export function projectJson(
  project: Project,
  options: { secret?: boolean; now?: number } = {},
): Record<string, unknown> {
  const expires = project.previousSecretExpiresAt;
  return {
    projectId: project.id,
    name: project.name,
    ...(options.secret ? { secret: project.secret } : {}),
    settings: { allowedOrigin: project.settings.allowedOrigin },
    levels: project.levels,
    retentionDays: project.retentionDays,
    createdAt: new Date(project.createdAt).toISOString(),
    ...(expires !== undefined && expires > (options.now ?? 0)
      ? { previousSecretExpiresAt: new Date(expires).toISOString() }
      : {}),
  };
}

/** A project as a table for people; the secret only when asked. */
export function describeProject(
  ctx: CommandContext,
  project: Project,
  secret: boolean,
): string {
  const color = useColor(ctx);
  const allowed = project.settings.allowedOrigin;
  const rows: string[][] = [
    ["Name", inert(project.name)],
    ["ID", project.id],
  ];
  if (secret) rows.push(["Secret", project.secret]);
  allowed.forEach((value, i) => rows.push([i === 0 ? "Allowed" : "", value]));
  if (allowed.length === 0) {
    rows.push(["Allowed", "(none: only signed entries are accepted)"]);
  }
  rows.push([
    "Levels",
    [...STANDARD_LEVELS, ...project.levels].map((l) => formatLevel(l, color))
      .join(", "),
  ]);
  rows.push(["Retention", `${project.retentionDays} days`]);
  rows.push(["Created", formatTime(project.createdAt)]);
  const expires = project.previousSecretExpiresAt;
  if (expires !== undefined && expires > ctx.now()) {
    rows.push(["Old secret", `verifies until ${formatTime(expires)}`]);
  }
  return formatTable(rows);
}

/**
 * Prints a project as JSON with `--json`, else `headline` and a table;
 * returns the exit code, 0.
 */
export function printProject(
  ctx: CommandContext,
  parsed: Parsed,
  project: Project,
  headline: string,
): number {
  return printResult(ctx, parsed, {
    json: projectJson(project, { now: ctx.now() }),
    text: [headline, "", describeProject(ctx, project, false)],
  });
}

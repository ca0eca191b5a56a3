/**
 * `deno task project …`: creating projects and changing their allow-list,
 * custom levels, retention, secret and scrubbing rules (cli/project_scrub.ts),
 * listing and showing them, deleting them with their logs. Built on db/projects.ts; this module only parses
 * arguments and prints. Secrets are printed by `create` and `rotate-secret`
 * only, never by `list` or `show`.
 *
 * @module
 */
import { deleteProject } from "../db/deletion.ts";
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
import {
  describeProject,
  printProject,
  projectJson,
} from "./project_format.ts";
import { USAGE } from "./project_usage.ts";
import { recordCliChange } from "./audit.ts";
import { scrubSubcommand } from "./project_scrub.ts";
import { quotaSubcommand, spikeSubcommand } from "./project_quota.ts";
import { retentionRulesSubcommand } from "./project_retention.ts";
import { resolveProject } from "./resolve.ts";

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
        `Entries of project "${id}" stored from now on are kept ${project.retentionDays} days`,
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
      const project = await requireProject(ctx.kv, id);
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
        parsed.positionals[0] = (await resolveProject(ctx.kv, named)).id;
      }
      return await run();
    },
  });
}

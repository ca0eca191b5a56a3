/**
 * `deno task audit [PROJECT]`: who changed what, and when, newest first —
 * a project's audit log, or without PROJECT the service's (accounts). Also
 * what writes the changes of `deno task project …` to that log.
 *
 * @module
 */
import { projectIdOf } from "./resolve.ts";
import {
  deleteAudit,
  listAudit,
  MAX_AUDIT_EVENTS,
  recordAudit,
} from "../db/audit.ts";
import { getProject, listProjects } from "../db/projects.ts";
import { deleteReadTokens } from "../db/tokens.ts";
import {
  booleanFlag,
  type CommandContext,
  type CommandSpec,
  type Parsed,
  println,
  runCommand,
  stringFlag,
  takePositionals,
  UsageError,
} from "./command.ts";
import { formatTable, formatTime, inert } from "./format.ts";
import { CLI_ACTOR } from "./user.ts";

const USAGE = `Print an audit log, newest first.

Usage: deno task audit [PROJECT] [--limit N] [--json]

Without PROJECT: the service's log (accounts added, changed, removed).

Options:
  --limit N   How many events (default and most: ${MAX_AUDIT_EVENTS})
  --json      One JSON object per line: at, actor, action, detail`;

const COMMAND: CommandSpec = {
  name: "audit",
  usage: USAGE,
  flags: { json: { type: "boolean" }, limit: { type: "string" } },
};

/**
 * `deno task audit …`.
 *
 * @example
 * ```ts
 * await auditCommand({ ...ctx, args: [projectId, "--json"] });
 * ```
 */
export function auditCommand(ctx: CommandContext): Promise<number> {
  return runCommand(ctx, COMMAND, async (parsed) => {
    const [named] = takePositionals("audit", parsed.positionals, [
      "PROJECT?",
    ]);
    const projectId = named === undefined
      ? undefined
      : await projectIdOf(ctx.kv, named);
    const limitText = stringFlag(parsed, "limit") ?? String(MAX_AUDIT_EVENTS);
    const limit = Number(limitText);
    if (!/^\d+$/.test(limitText) || limit < 1 || limit > MAX_AUDIT_EVENTS) {
      throw new UsageError(
        `Cannot read --limit "${limitText}": expected a whole number from 1 to ${MAX_AUDIT_EVENTS}`,
      );
    }
    const events = await listAudit(ctx.kv, projectId ?? null, limit);
    if (booleanFlag(parsed, "json")) {
      for (const event of events) {
        println(
          ctx,
          JSON.stringify({
            at: new Date(event.at).toISOString(),
            actor: event.actor,
            action: event.action,
            ...(event.detail === undefined ? {} : { detail: event.detail }),
          }),
        );
      }
      return 0;
    }
    if (events.length === 0) {
      println(ctx, "Nothing recorded yet.");
      return 0;
    }
    const rows = [["WHEN", "WHO", "WHAT", "DETAIL"]];
    for (const e of events) {
      rows.push([
        formatTime(e.at),
        inert(e.actor),
        e.action,
        inert(e.detail ?? ""),
      ]);
    }
    println(ctx, formatTable(rows));
    return 0;
  });
}

/** A change made with these commands, for {@linkcode recordCliChange}. */
export interface CliChange {
  /** Whose log: a project's, or the service's with `null`. */
  projectId: string | null;
  /** What changed, as `area.verb` (`token.create`). */
  action: string;
  detail: string;
}

/** Writes a change made with these commands to an audit log, as done by `cli`. */
export async function recordCliChange(
  ctx: CommandContext,
  change: CliChange,
): Promise<void> {
  await recordAudit(ctx.kv, { ...change, actor: CLI_ACTOR, now: ctx.now });
}

/**
 * Runs `deno task project NAME …` (`run`) and, when it succeeded, writes
 * its change to the project's audit log as done by `cli`; deleting a
 * project also revokes its read tokens (and is logged for the service).
 */
export async function auditedProjectCommand(
  ctx: CommandContext,
  name: string,
  parsed: Parsed,
  run: () => Promise<number>,
): Promise<number> {
  const [id = "", a, b] = parsed.positionals;
  const before = name === "create"
    ? new Set((await listProjects(ctx.kv)).map((p) => p.id))
    : null;
  const deleted = name === "delete" ? await getProject(ctx.kv, id) : null;
  const code = await run();
  if (code !== 0 || booleanFlag(parsed, "help")) return code;
  const record = (projectId: string | null, action: string, detail: string) =>
    recordCliChange(ctx, { projectId, action, detail });
  if (before !== null) {
    for (const project of await listProjects(ctx.kv)) {
      if (!before.has(project.id)) {
        await record(project.id, "project.create", project.name);
      }
    }
  } else if (deleted !== null) {
    await deleteReadTokens(ctx.kv, deleted.id);
    await deleteAudit(ctx.kv, deleted.id);
    await record(null, "project.delete", `${deleted.name} (${deleted.id})`);
  } else if (name === "allow" || name === "disallow") {
    await record(id, `settings.${name}`, a ?? "");
  } else if (name === "rotate-secret") {
    await record(id, "secret.rotate", stringFlag(parsed, "grace") ?? "24h");
  } else if (name === "levels" && (a === "add" || a === "remove")) {
    await record(id, `settings.levels.${a}`, b ?? "");
  } else if (name === "retention") {
    await record(id, "settings.retention", a ?? "");
  }
  return code;
}

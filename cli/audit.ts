/**
 * `deno task audit [PROJECT]`: who changed what, and when, newest first —
 * a project's audit log, or without PROJECT the service's (accounts). Also
 * what writes the changes these commands make to those logs.
 *
 * @module
 */
import { projectIdOf } from "./resolve.ts";
import { listAudit, MAX_AUDIT_EVENTS, recordAudit } from "../db/audit.ts";
import {
  booleanFlag,
  type CommandContext,
  type CommandSpec,
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

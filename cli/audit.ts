/**
 * `deno task audit [PROJECT]`: who changed what, and when, newest first —
 * a project's audit log, or without PROJECT the service's (accounts). Also
 * what writes the changes these commands make to those logs.
 *
 * @module
 */
import { projectIdOf } from "./resolve.ts";
import {
  AuditCursorError,
  type AuditEvent,
  listAudit,
  MAX_AUDIT_LIST,
  recordAudit,
} from "../db/audit.ts";
import {
  booleanFlag,
  type CommandContext,
  type CommandSpec,
  flags,
  limitFlag,
  println,
  runCommand,
  stringFlag,
  takePositionals,
  UsageError,
} from "./command.ts";
import { formatTable, formatTime, inert } from "./format.ts";
import { printJsonLines } from "./output.ts";
import { CLI_ACTOR } from "./user.ts";

const USAGE = `Print an audit log, newest first.

Usage: deno task audit [PROJECT] [--limit N] [--before ID] [--json]

Without PROJECT: the service's log (accounts added, changed, removed).
Events are kept 180 days. An account's events past 200 a day in one log
are folded into one line per action: "action ×N", the last one's detail.

Options:
  --limit N    How many events (default and most: ${MAX_AUDIT_LIST})
  --before ID  The events recorded before event ID: the next page (the id
               is printed under a full page, and in each JSON line)
  --json       One JSON object per line: id, at, actor, action, detail,
               and for folded events repeated and since`;

const COMMAND: CommandSpec = {
  name: "audit",
  usage: USAGE,
  flags: flags({ string: ["limit", "before"], boolean: ["json"] }),
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
    const limit = limitFlag(parsed, {
      fallback: MAX_AUDIT_LIST,
      max: MAX_AUDIT_LIST,
    });
    const before = stringFlag(parsed, "before");
    let events: AuditEvent[];
    try {
      events = await listAudit(ctx.kv, projectId ?? null, limit, before);
    } catch (error) {
      if (error instanceof AuditCursorError) {
        throw new UsageError(`Cannot read --before: ${error.message}`);
      }
      throw error;
    }
    if (booleanFlag(parsed, "json")) {
      return printJsonLines(ctx, events, (event) => ({
        id: event.id,
        at: new Date(event.at).toISOString(),
        actor: event.actor,
        action: event.action,
        ...(event.detail === undefined ? {} : { detail: event.detail }),
        ...(event.repeated === undefined ? {} : {
          repeated: event.repeated,
          since: new Date(event.since ?? event.at).toISOString(),
        }),
      }));
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
        e.repeated === undefined ? e.action : `${e.action} ×${e.repeated}`,
        inert(e.detail ?? ""),
      ]);
    }
    println(ctx, formatTable(rows));
    if (events.length === limit) {
      println(
        ctx,
        `Earlier events: deno task audit ${projectId ?? ""} --before ${
          events.at(-1)!.id
        }`.replace("audit  --", "audit --"),
      );
    }
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

/**
 * `deno task audit [PROJECT]`: who changed what, and when, newest first —
 * a project's audit log, or without PROJECT the service's (accounts).
 *
 * @module
 */
import { listAudit, MAX_AUDIT_EVENTS } from "../db/audit.ts";
import { getProject, ProjectNotFoundError } from "../db/projects.ts";
import {
  booleanFlag,
  type CommandContext,
  guard,
  parseFlags,
  println,
  stringFlag,
  takePositionals,
  UsageError,
} from "./command.ts";
import { formatTable, formatTime, inert } from "./format.ts";

const USAGE = `Print an audit log, newest first.

Usage: deno task audit [PROJECT] [--limit N] [--json]

Without PROJECT: the service's log (accounts added, changed, removed).

Options:
  --limit N   How many events (default and most: ${MAX_AUDIT_EVENTS})
  --json      One JSON object per line: at, actor, action, detail`;

/**
 * `deno task audit …`.
 *
 * @example
 * ```ts
 * await auditCommand({ ...ctx, args: [projectId, "--json"] });
 * ```
 */
export function auditCommand(ctx: CommandContext): Promise<number> {
  return guard(ctx, async () => {
    const parsed = parseFlags("audit", ctx.args, {
      json: { type: "boolean" },
      limit: { type: "string" },
    });
    if (booleanFlag(parsed, "help")) {
      println(ctx, USAGE);
      return 0;
    }
    const [projectId] = takePositionals("audit", parsed.positionals, [
      "PROJECT?",
    ]);
    const limitText = stringFlag(parsed, "limit") ?? String(MAX_AUDIT_EVENTS);
    const limit = Number(limitText);
    if (!/^\d+$/.test(limitText) || limit < 1 || limit > MAX_AUDIT_EVENTS) {
      throw new UsageError(
        `Cannot read --limit "${limitText}": expected a whole number from 1 to ${MAX_AUDIT_EVENTS}`,
      );
    }
    if (
      projectId !== undefined && await getProject(ctx.kv, projectId) === null
    ) {
      throw new ProjectNotFoundError(projectId);
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

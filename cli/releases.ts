/**
 * `deno task releases PROJECT [--json]`: a project's releases, the latest
 * first (semantic versions in their order, other names by first seen), each
 * with its first and last seen, entries, errors and new error groups
 * (db/releases.ts).
 *
 * @module
 */
import { listReleases, MAX_RELEASES } from "../db/releases.ts";
import { DAY_MS } from "../domain/entry.ts";
import {
  booleanFlag,
  type CommandContext,
  type CommandSpec,
  println,
  projectArgument,
  runCommand,
} from "./command.ts";
import { formatTable, formatTime, inert } from "./format.ts";
import { printJsonLines } from "./output.ts";

const USAGE = `Show a project's releases, the latest first.

Usage: deno task releases PROJECT [--json]

A release is the context.release of entries (the client library's release
option). Versions such as 1.4.0 are ordered as versions, other names by when
they were first seen. Per release: first and last seen, entries, errors
(level error and critical) and new error groups (first seen in it). A project
keeps ${MAX_RELEASES} releases, the least recently seen going first.

Options:
  --json      One JSON object per release and line: release, firstSeen,
              lastSeen, entries, errors, newGroups
  -h, --help  Show this help`;

const COMMAND: CommandSpec = {
  name: "releases",
  usage: USAGE,
  flags: { json: { type: "boolean" } },
};

/**
 * `deno task releases PROJECT …`.
 *
 * @example
 * ```ts
 * await releasesCommand({ ...ctx, args: ["shop", "--json"] });
 * ```
 */
export function releasesCommand(ctx: CommandContext): Promise<number> {
  return runCommand(ctx, COMMAND, async (parsed) => {
    const project = await projectArgument(ctx, "releases", parsed, "PROJECT");
    const releases = await listReleases(ctx.kv, project.id, {
      now: ctx.now(),
      retentionMs: project.retentionDays * DAY_MS,
    });
    if (booleanFlag(parsed, "json")) {
      return printJsonLines(ctx, releases, (r) => ({
        release: r.name,
        firstSeen: new Date(r.firstSeen).toISOString(),
        lastSeen: new Date(r.lastSeen).toISOString(),
        entries: r.entries,
        errors: r.errors,
        newGroups: r.newGroups,
      }));
    }
    if (releases.length === 0) {
      println(ctx, `No releases in project "${inert(project.name)}"`);
      return 0;
    }
    println(
      ctx,
      `Releases of project "${inert(project.name)}" (${project.id})`,
    );
    println(ctx);
    println(
      ctx,
      formatTable([
        [
          "RELEASE",
          "FIRST SEEN",
          "LAST SEEN",
          "ENTRIES",
          "ERRORS",
          "NEW GROUPS",
        ],
        ...releases.map((r) => [
          inert(r.name),
          formatTime(r.firstSeen),
          formatTime(r.lastSeen),
          String(r.entries),
          String(r.errors),
          String(r.newGroups),
        ]),
      ]),
    );
    return 0;
  });
}

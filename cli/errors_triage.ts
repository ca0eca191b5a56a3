/**
 * `deno task errors resolve|ignore|reopen|assign PROJECT FINGERPRINT …`:
 * changes the triage of an error group (db/error_group_triage.ts), written
 * to the project's audit log; and the fields of a group every `errors`
 * output shares (status, releases, frame, assignee).
 *
 * @module
 */
import {
  changeTriage,
  GroupNotFoundError,
  type GroupTriage,
  IGNORE_UNTIL_EXPECTED,
  ignoreUntilFits,
  type TriageChange,
} from "../db/error_group_triage.ts";
import {
  checkFingerprint,
  FingerprintError,
} from "../db/error_group_detail.ts";
import type { ErrorGroup } from "../db/error_group_reads.ts";
import { groupFrame } from "../db/error_group_frame.ts";
import type { Project } from "../db/projects.ts";
import { recordCliChange } from "./audit.ts";
import {
  booleanFlag,
  type CommandContext,
  type Parsed,
  println,
  stringFlag,
  takePositionals,
  UsageError,
} from "./command.ts";
import { parseDuration } from "./format.ts";
import { inert } from "./format.ts";
import { jsonText } from "./inert.ts";
import { CLI_ACTOR } from "./user.ts";
import { resolveProject } from "./resolve.ts";

/** The words of the triage subcommands. */
export const TRIAGE_ACTIONS = ["resolve", "ignore", "reopen", "assign"];

/** The triage fields of a group in `errors --json` (docs/errors.md). */
export function triageJson(
  group: ErrorGroup,
  triage: GroupTriage | undefined,
  /** The resolved top frame (db/symbolicate.ts). @default the stored one */
  frame: unknown = groupFrame(group),
): Record<string, unknown> {
  const t = triage?.triage ?? null;
  return {
    status: triage?.status ?? "unresolved",
    firstRelease: group.firstRelease,
    lastRelease: group.lastRelease,
    frame: frame ?? groupFrame(group),
    assignee: triage?.assignee ?? null,
    ...(t?.state === "resolved" && t.inRelease !== undefined
      ? { resolvedIn: t.inRelease }
      : {}),
    ...(t?.state === "ignored" && t.untilMs !== undefined
      ? untilJson(t.untilMs)
      : {}),
    ...(t?.state === "ignored" && t.untilCount !== undefined
      ? { ignoredUntilCount: t.untilCount, ignoredAtCount: t.count }
      : {}),
  };
}

/**
 * `ignoredUntil` of a stored time; none for one no date can show (stored
 * before the bound on it), which ignores the group as if for ever.
 */
function untilJson(untilMs: number): { ignoredUntil?: string } {
  const until = new Date(untilMs);
  return Number.isNaN(until.getTime())
    ? {}
    : { ignoredUntil: until.toISOString() };
}

/**
 * A FINGERPRINT argument, checked: 16 hex digits, else a
 * {@linkcode UsageError}.
 */
export function fingerprintArg(text: string): string {
  try {
    return checkFingerprint(text);
  } catch (error) {
    if (error instanceof FingerprintError) throw new UsageError(error.message);
    throw error;
  }
}

/**
 * `--until`: an ISO date or time, or a duration from now (`7d`), after now
 * and at most `MAX_IGNORE_DAYS` ahead.
 */
function untilOf(text: string, now: number): number {
  const duration = parseDuration(text);
  let ms = duration !== undefined && duration > 0 ? now + duration : NaN;
  if (duration === undefined && /^\d{4}-\d{2}-\d{2}/.test(text)) {
    ms = Date.parse(text);
  }
  if (!Number.isNaN(ms)) {
    if (ignoreUntilFits(ms, now)) return ms;
    throw new UsageError(
      `Cannot use --until "${text}": ${IGNORE_UNTIL_EXPECTED}`,
    );
  }
  throw new UsageError(
    `Cannot read --until "${text}": expected a date such as "2026-12-31", an ISO 8601 time, or a duration such as "7d"`,
  );
}

function countOf(text: string): number {
  if (!/^\d{1,10}$/.test(text) || Number(text) < 1) {
    throw new UsageError(
      `Cannot read --until-count "${text}": expected a whole number from 1`,
    );
  }
  return Number(text);
}

/** The change a subcommand asks for, its flags checked. */
function changeOf(
  action: string,
  parsed: Parsed,
  email: string | undefined,
  now: number,
): TriageChange {
  const inRelease = stringFlag(parsed, "in-release");
  const until = stringFlag(parsed, "until");
  const untilCount = stringFlag(parsed, "until-count");
  const misplaced = (flag: string, where: string) =>
    new UsageError(
      `Cannot use ${flag} with "${action}": it goes with "${where}"`,
    );
  if (inRelease !== undefined && action !== "resolve") {
    throw misplaced("--in-release", "resolve");
  }
  if ((until ?? untilCount) !== undefined && action !== "ignore") {
    throw misplaced(
      until !== undefined ? "--until" : "--until-count",
      "ignore",
    );
  }
  if (email !== undefined && action !== "assign") {
    throw new UsageError(
      `Cannot run "errors ${action}": unexpected argument "${email}" (see --help)`,
    );
  }
  switch (action) {
    case "resolve":
      return { action, ...(inRelease === undefined ? {} : { inRelease }) };
    case "ignore":
      if (until !== undefined && untilCount !== undefined) {
        throw new UsageError(
          "Cannot use --until and --until-count together: give one",
        );
      }
      return {
        action,
        ...(until === undefined ? {} : { untilMs: untilOf(until, now) }),
        ...(untilCount === undefined
          ? {}
          : { untilCount: countOf(untilCount) }),
      };
    case "reopen":
      return { action };
    default:
      if (email === undefined) {
        throw new UsageError(
          `Cannot run "errors assign": missing EMAIL (an account's, or "none") (see --help)`,
        );
      }
      return { action: "assign", email: email === "none" ? null : email };
  }
}

/**
 * `deno task errors ACTION PROJECT FINGERPRINT [EMAIL]`: changes the
 * group's triage and records it in the project's audit log.
 */
export async function triageCommand(
  ctx: CommandContext,
  parsed: Parsed,
): Promise<number> {
  const [action, named, fingerprint, email] = takePositionals(
    "errors",
    parsed.positionals,
    ["ACTION", "PROJECT", "FINGERPRINT", "EMAIL?"],
  );
  const change = changeOf(action, parsed, email, ctx.now());
  const fp = fingerprintArg(fingerprint);
  const project: Project = await resolveProject(ctx.kv, named);
  let done;
  try {
    done = await changeTriage(ctx.kv, project.id, fp, change, {
      now: ctx.now(),
      actor: CLI_ACTOR,
    });
  } catch (error) {
    if (!(error instanceof GroupNotFoundError)) throw error;
    ctx.stderr(error.message + "\n");
    return 1;
  }
  await recordCliChange(ctx, {
    projectId: project.id,
    action: `error.${action}`,
    detail: done.detail,
  });
  if (booleanFlag(parsed, "json")) {
    println(
      ctx,
      jsonText({
        fingerprint: fp,
        state: done.triage.state,
        ...(done.triage.inRelease ? { inRelease: done.triage.inRelease } : {}),
        assignee: done.triage.assignee ?? null,
      }),
    );
  } else {
    println(
      ctx,
      `Error group ${fp} ${inert(done.detail.split(": ").slice(1).join(": "))}`,
    );
  }
  return 0;
}

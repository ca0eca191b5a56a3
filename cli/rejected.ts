/**
 * `deno task rejected ID`: the recent rejected entries of a project with their
 * content, and for `bad_signature` the text the service expected to be
 * signed, so that a developer sees what went wrong; `deno task rejected
 * replay ID` authenticates them again once the settings are fixed
 * (queue/replay.ts). `--global` lists the entries that named no project.
 * Everything a sender supplied is printed inert (cli/format.ts#inert);
 * `--json` prints it exactly.
 *
 * @module
 */
import {
  type KeptEntry,
  listRejected,
  listUnknownProjectRejected,
  sentBody,
  sentSignedText,
} from "../db/rejected.ts";
import { replayRejected, type ReplayResult } from "../queue/replay.ts";
import {
  REJECT_REASONS,
  type RejectReason,
  senderJson,
} from "../domain/entry.ts";
import {
  booleanFlag,
  type CommandContext,
  type CommandSpec,
  EXIT_FAILURE,
  flags,
  println,
  projectArgument,
  runCommand,
  stringFlag,
  stringFlags,
  takePositionals,
  UsageError,
  useColor,
} from "./command.ts";
import { printJsonLines, printResult } from "./output.ts";
import { formatLevel, formatTable, formatTime, inert } from "./format.ts";

const USAGE = `Show a project's recent rejected entries, and replay them.

Usage: deno task rejected ID [--reason R] [--limit N] [--json]
       deno task rejected --global [--limit N] [--json]
       deno task rejected replay ID [--entry ENTRY_ID]... [--json]

ID is a project's id or its name.

The service keeps the last 100 rejected entries of each project for 7 days,
each with its content when it takes at most 10,000 bytes. For bad_signature it
also shows the text as sent (each signed member as the sender wrote it, in
signing order) and the exact text it expected to be signed: projectId + params +
timestamp, where params is the compact JSON of level, projectId, device,
context and data in that order. Compare it with what your client signs:
spaces after separators, sorted keys, a trailing newline, echo instead of
printf.

replay authenticates the kept entries again (or only those given with
--entry) on the project's current settings, after you fixed them with
"deno task project allow", "levels" or "rotate-secret". An entry that passes
is stored once, counted as accepted and as replayed, and no longer kept; one
that fails again stays kept. Rejection counters do not change.

Options:
  --reason R   Only entries rejected for R: ${REJECT_REASONS.join(", ")}
  --limit N    At most N entries, newest first (default 100)
  --global     Entries that named a project that does not exist
  --entry ID   With replay: only this entry (repeatable)
  --json       One JSON object per line (replay: one summary object)
  -h, --help   Show this help`;

const COMMAND: CommandSpec = {
  name: "rejected",
  usage: USAGE,
  flags: flags({ string: ["reason", "limit"], boolean: ["global", "json"] }),
};

const REPLAY: CommandSpec = {
  name: "rejected replay",
  usage: USAGE,
  flags: {
    entry: { type: "string", multiple: true },
    json: { type: "boolean" },
  },
};

function keptJson(kept: KeptEntry): Record<string, unknown> {
  const e = kept.entry;
  return {
    entryId: kept.entryId,
    at: new Date(kept.at).toISOString(),
    reason: kept.reason,
    projectId: kept.projectId,
    level: kept.level,
    ...senderJson(kept),
    ...(e === undefined ? {} : { body: sentBody(kept) }),
    ...(e?.signature === undefined ? {} : { signature: e.signature }),
    ...(e?.timestamp === undefined ? {} : { timestamp: e.timestamp }),
    ...(sentSignedText(kept) === undefined
      ? {}
      : { sent: sentSignedText(kept) }),
    ...(kept.expected === undefined ? {} : { expected: kept.expected }),
    ...(kept.omittedBytes === undefined
      ? {}
      : { omittedBytes: kept.omittedBytes }),
  };
}

/** Human lines of one kept entry: a heading, then its details indented. */
function keptLines(
  kept: KeptEntry,
  color: boolean,
  global: boolean,
): string[] {
  const heading = [
    formatTime(kept.at),
    kept.reason,
    formatLevel(inert(kept.level), color),
    kept.entryId,
  ].join("  ");
  const details: string[][] = [];
  if (global) details.push(["project", inert(kept.projectId)]);
  if (kept.origin !== undefined) details.push(["origin", inert(kept.origin)]);
  if (kept.appid !== undefined) details.push(["appid", inert(kept.appid)]);
  const body = sentBody(kept);
  if (body === undefined) {
    details.push(["content", `not kept (${kept.omittedBytes} bytes)`]);
  } else {
    details.push(["entry", inert(JSON.stringify(body))]);
  }
  const { signature, timestamp } = kept.entry ?? {};
  if (signature !== undefined) details.push(["signature", inert(signature)]);
  if (timestamp !== undefined) details.push(["timestamp", inert(timestamp)]);
  const sent = sentSignedText(kept);
  if (sent !== undefined && kept.expected !== undefined) {
    details.push(["sent", inert(sent)]);
  }
  if (kept.expected !== undefined) {
    details.push(["expected", inert(kept.expected)]);
  }
  const table = formatTable(details.map(([k, v]) => [`  ${k}`, v!]));
  return [heading, ...table.split("\n")];
}

function positiveInteger(flag: string, text: string | undefined) {
  if (text === undefined) return undefined;
  if (!/^[1-9]\d{0,8}$/.test(text)) {
    throw new UsageError(
      `Cannot use ${flag} "${text}": expected a whole number from 1`,
    );
  }
  return Number(text);
}

function reasonFlag(text: string | undefined): RejectReason | undefined {
  if (text === undefined) return undefined;
  if (!(REJECT_REASONS as readonly string[]).includes(text)) {
    throw new UsageError(
      `Cannot use --reason "${text}": expected one of ${
        REJECT_REASONS.join(", ")
      }`,
    );
  }
  return text as RejectReason;
}

function resultText(r: ReplayResult): string {
  switch (r.outcome) {
    case "stored":
      return `stored (auth ${r.auth})`;
    case "rejected":
      return `rejected again: ${r.reason}`;
    case "skipped":
      return `not replayed: ${r.why}`;
    case "missing":
      return "not kept (expired, replayed or never rejected)";
  }
}

function replay(ctx: CommandContext): Promise<number> {
  return runCommand(ctx, REPLAY, async (parsed) => {
    const project = await projectArgument(ctx, "rejected replay", parsed);
    const named = stringFlags(parsed, "entry");
    const results = await replayRejected(
      ctx.kv,
      project.id,
      named.length > 0 ? named : undefined,
      { now: ctx.now },
    );
    const count = (outcome: ReplayResult["outcome"]) =>
      results.filter((r) => r.outcome === outcome).length;
    printResult(ctx, parsed, {
      json: {
        stored: count("stored"),
        rejected: count("rejected"),
        skipped: count("skipped"),
        missing: count("missing"),
        results,
      },
      text: results.length === 0
        ? `Project "${inert(project.name)}" has no kept rejected entry`
        : [
          `Replayed ${results.length} kept ${
            results.length === 1 ? "entry" : "entries"
          } of project "${inert(project.name)}" (${project.id}): ${
            count("stored")
          } stored, ${results.length - count("stored")} not`,
          "",
          formatTable([
            ["ENTRY", "RESULT"],
            ...results.map((r) => [inert(r.entryId), resultText(r)]),
          ]),
        ],
    });
    return count("missing") > 0 && named.length > 0 ? EXIT_FAILURE : 0;
  });
}

/**
 * `deno task rejected …`.
 *
 * @example
 * ```ts
 * const code = await rejectedCommand({ ...ctx, args: [projectId, "--json"] });
 * ```
 */
export function rejectedCommand(ctx: CommandContext): Promise<number> {
  if (ctx.args[0] === "replay") {
    return replay({ ...ctx, args: ctx.args.slice(1) });
  }
  return runCommand(ctx, COMMAND, async (parsed) => {
    const limit = positiveInteger("--limit", stringFlag(parsed, "limit"));
    const reason = reasonFlag(stringFlag(parsed, "reason"));
    const global = booleanFlag(parsed, "global");
    let kept: KeptEntry[];
    let title: string;
    if (global) {
      takePositionals("rejected --global", parsed.positionals, []);
      kept = await listUnknownProjectRejected(ctx.kv, {
        ...(reason === undefined ? {} : { reason }),
        ...(limit === undefined ? {} : { limit }),
      });
      title = "Entries naming no existing project";
    } else {
      const project = await projectArgument(ctx, "rejected", parsed);
      kept = await listRejected(ctx.kv, project.id, {
        ...(reason === undefined ? {} : { reason }),
        ...(limit === undefined ? {} : { limit }),
      });
      title = `Project "${inert(project.name)}" (${project.id})`;
    }
    if (booleanFlag(parsed, "json")) return printJsonLines(ctx, kept, keptJson);
    if (kept.length === 0) {
      println(ctx, `${title}: no rejected entry kept`);
      return 0;
    }
    println(
      ctx,
      `${title}: ${kept.length} rejected ${
        kept.length === 1 ? "entry" : "entries"
      }, newest first`,
    );
    const color = useColor(ctx);
    for (const k of kept) {
      println(ctx);
      for (const line of keptLines(k, color, global)) println(ctx, line);
    }
    return 0;
  });
}

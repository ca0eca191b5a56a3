/**
 * `deno task deadletters list|replay|delete [ID]`: batches whose processing
 * kept failing, putting them back in the pending batches so that a running
 * server's sweeper processes them again, and discarding the ones an operator
 * decided not to replay (`delete ID`, or `delete --all`: never without one of
 * them). Built on queue/dead_letters.ts.
 *
 * @module
 */
import {
  type DeadLetter,
  DeadLetterNotFoundError,
  deleteAllDeadLetters,
  deleteDeadLetter,
  getDeadLetter,
  letterIds,
  listDeadLetters,
  replayAllDeadLetters,
  replayDeadLetter,
} from "../queue/dead_letters.ts";
import {
  booleanFlag,
  type CommandContext,
  type CommandSpec,
  type Parsed,
  println,
  runCommand,
  takePositionals,
  UsageError,
} from "./command.ts";
import { printResult } from "./output.ts";
import { recordCliChange } from "./audit.ts";
import { formatList, formatTime, inert } from "./format.ts";

const USAGE =
  `List dead letters (batches whose processing kept failing), replay them or
delete them.

Usage: deno task deadletters list [ID] [--json]
       deno task deadletters replay [ID] [--json]
       deno task deadletters delete ID|--all [--json]

replay moves the dead letter ID (all of them without ID) back to the pending
batches with its attempts reset; a running server processes it within seconds.
Replaying is safe: a batch is never stored twice.

delete discards the dead letter ID (all of them with --all) and its entries
for good: they cannot be replayed afterwards. A dead letter replayed meanwhile
is not deleted.

Options:
  --all       delete: every dead letter (required to delete them all)
  --json      list: a JSON array; replay: {"replayed":[...]};
              delete: {"deleted":[...]}
  -h, --help  Show this help`;

const COMMAND: CommandSpec = {
  name: "deadletters",
  usage: USAGE,
  flags: { json: { type: "boolean" }, all: { type: "boolean" } },
};

/** The JSON form of a dead letter. */
export function deadLetterJson(letter: DeadLetter): Record<string, unknown> {
  return { ...letter, createdAt: new Date(letter.createdAt).toISOString() };
}

function plural(n: number, one: string, many: string): string {
  return `${n} ${n === 1 ? one : many}`;
}

/** "3 dead letters (12 entries)": how many letters and entries `letters` are. */
function counted(letters: DeadLetter[]): string {
  const entries = letters.reduce((n, l) => n + l.count, 0);
  return `${plural(letters.length, "dead letter", "dead letters")} (${
    plural(entries, "entry", "entries")
  })`;
}

/** `list [ID]`: every dead letter, or the one named. */
async function list(
  ctx: CommandContext,
  id: string | undefined,
  json: boolean,
): Promise<number> {
  let letters: DeadLetter[];
  if (id === undefined) {
    letters = await listDeadLetters(ctx.kv);
  } else {
    const letter = await getDeadLetter(ctx.kv, id);
    if (letter === null) throw new DeadLetterNotFoundError(id);
    letters = [letter];
  }
  println(
    ctx,
    formatList(letters, {
      json,
      toJson: deadLetterJson,
      empty: "No dead letters",
      header: ["BATCH", "CREATED", "ENTRIES", "ATTEMPTS", "ERROR"],
      row: (l) => [
        l.id,
        formatTime(l.createdAt),
        String(l.count),
        String(l.attempts),
        inert(l.error ?? "-"),
      ],
    }),
  );
  return 0;
}

/** `replay [ID]`: the one named, or every dead letter. */
async function replay(
  ctx: CommandContext,
  parsed: Parsed,
  id: string | undefined,
): Promise<number> {
  const conflicts: string[] = [];
  const replayed = id === undefined
    ? await replayAllDeadLetters(ctx.kv, conflicts)
    : [await replayDeadLetter(ctx.kv, id)];
  if (replayed.length > 0) {
    await recordCliChange(ctx, {
      projectId: null,
      action: "deadletter.replay",
      detail: letterIds(replayed),
    });
  }
  printResult(ctx, parsed, {
    json: { replayed: replayed.map(deadLetterJson) },
    text: replayed.length === 0
      ? conflicts.length === 0
        ? "No dead letters to replay"
        : "Replayed no dead letter"
      : `Replayed ${counted(replayed)}: a running server processes ${
        replayed.length === 1 ? "it" : "them"
      } within seconds`,
  });
  if (conflicts.length === 0) return 0;
  // The others were replayed; these stay dead letters, and the exit says so.
  ctx.stderr(
    `Cannot replay ${conflicts.length} dead letter(s): a batch with the same id is pending (${
      conflicts.slice(0, 20).join(", ")
    })\n`,
  );
  return 1;
}

/** `delete ID|--all`: the one named, or every dead letter with `--all` only. */
async function remove(
  ctx: CommandContext,
  parsed: Parsed,
  id: string | undefined,
): Promise<number> {
  const all = booleanFlag(parsed, "all");
  if (id === undefined && !all) {
    throw new UsageError(
      `Cannot run "deadletters delete": missing ID (or --all to delete every dead letter; see --help)`,
    );
  }
  if (id !== undefined && all) {
    throw new UsageError(
      `Cannot run "deadletters delete": give either ID or --all, not both (see --help)`,
    );
  }
  const deleted = id === undefined
    ? await deleteAllDeadLetters(ctx.kv)
    : [await deleteDeadLetter(ctx.kv, id)];
  if (deleted.length > 0) {
    await recordCliChange(ctx, {
      projectId: null,
      action: "deadletter.delete",
      detail: letterIds(deleted),
    });
  }
  return printResult(ctx, parsed, {
    json: { deleted: deleted.map(deadLetterJson) },
    text: deleted.length === 0
      ? "No dead letters to delete"
      : `Deleted ${counted(deleted)}; ${
        deleted.length === 1 ? "it" : "they"
      } cannot be replayed`,
  });
}

/**
 * `deno task deadletters …`.
 *
 * @example
 * ```ts
 * const code = await deadLettersCommand({ ...ctx, args: ["replay", batchId] });
 * ```
 */
export function deadLettersCommand(ctx: CommandContext): Promise<number> {
  return runCommand(ctx, COMMAND, async (parsed) => {
    const [action, id] = takePositionals(
      "deadletters",
      parsed.positionals,
      ["list|replay|delete", "ID?"],
    );
    if (action !== "delete" && booleanFlag(parsed, "all")) {
      throw new UsageError(
        `Cannot use option "--all" with "deadletters ${action}": only delete takes it (see --help)`,
      );
    }
    if (action === "list") {
      return await list(ctx, id, booleanFlag(parsed, "json"));
    }
    if (action === "replay") return await replay(ctx, parsed, id);
    if (action === "delete") return await remove(ctx, parsed, id);
    throw new UsageError(
      `Cannot run "deadletters ${action}": expected "list", "replay" or "delete" (see --help)`,
    );
  });
}

/**
 * `deno task deadletters list|replay [ID]`: batches whose processing kept
 * failing, and putting them back in the pending batches so that a running
 * server's sweeper processes them again. Built on queue/dead_letters.ts.
 *
 * @module
 */
import {
  type DeadLetter,
  DeadLetterNotFoundError,
  getDeadLetter,
  listDeadLetters,
  replayAllDeadLetters,
  replayDeadLetter,
} from "../queue/dead_letters.ts";
import {
  booleanFlag,
  type CommandContext,
  type CommandSpec,
  println,
  runCommand,
  takePositionals,
  UsageError,
} from "./command.ts";
import { printResult } from "./output.ts";
import { formatList, formatTime, inert } from "./format.ts";

const USAGE =
  `List dead letters (batches whose processing kept failing) or replay them.

Usage: deno task deadletters list [ID] [--json]
       deno task deadletters replay [ID] [--json]

replay moves the dead letter ID (all of them without ID) back to the pending
batches with its attempts reset; a running server processes it within seconds.
Replaying is safe: a batch is never stored twice.

Options:
  --json      list: a JSON array; replay: {"replayed":[...]}
  -h, --help  Show this help`;

const COMMAND: CommandSpec = {
  name: "deadletters",
  usage: USAGE,
  flags: { json: { type: "boolean" } },
};

/** The JSON form of a dead letter. */
export function deadLetterJson(letter: DeadLetter): Record<string, unknown> {
  return { ...letter, createdAt: new Date(letter.createdAt).toISOString() };
}

function plural(n: number, one: string, many: string): string {
  return `${n} ${n === 1 ? one : many}`;
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
      ["list|replay", "ID?"],
    );
    const json = booleanFlag(parsed, "json");
    if (action === "list") {
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
    if (action === "replay") {
      const replayed = id === undefined
        ? await replayAllDeadLetters(ctx.kv)
        : [await replayDeadLetter(ctx.kv, id)];
      const entries = replayed.reduce((n, l) => n + l.count, 0);
      return printResult(ctx, parsed, {
        json: { replayed: replayed.map(deadLetterJson) },
        text: replayed.length === 0
          ? "No dead letters to replay"
          : `Replayed ${
            plural(replayed.length, "dead letter", "dead letters")
          } (${
            plural(entries, "entry", "entries")
          }): a running server processes ${
            replayed.length === 1 ? "it" : "them"
          } within seconds`,
      });
    }
    throw new UsageError(
      `Cannot run "deadletters ${action}": expected "list" or "replay" (see --help)`,
    );
  });
}

/**
 * What a benchmark run is told: its command-line options, and the commands
 * it takes from deno.json's tasks (the service runs exactly as
 * `deno task start` runs it, so its flags are never copied by hand).
 *
 * Pure functions over text: reading files and the process's arguments is
 * left to `bench/ingest.ts`.
 *
 * @module
 */
import { parseArgs } from "node:util";

/** Options of one benchmark run, from the command line. */
export interface BenchOptions {
  /** Seconds per wrk turn. @default {10} */
  duration: number;
  /** Turns per server and connection count. @default {2} */
  turns: number;
  /** Connection counts, each run in its own series of turns. @default {[64, 256]} */
  connections: number[];
  /** wrk threads (`-t`). @default {2} */
  threads: number;
  /** Longest wait for the service to store what it accepted, seconds. @default {180} */
  drainTimeout: number;
  /** Print the summary as JSON instead of tables. @default {false} */
  json: boolean;
}

/**
 * The whole number of option `--name` given as `text`, from `min` to `max`;
 * throws a `RangeError` naming the option otherwise.
 *
 * @example
 * ```ts
 * wholeNumber("probe", "15", 1, 3600); // 15
 * ```
 */
export function wholeNumber(
  name: string,
  text: string,
  min: number,
  max: number,
): number {
  const n = Number(text);
  if (text.trim() === "" || !Number.isInteger(n) || n < min || n > max) {
    throw new RangeError(
      `Cannot read "--${name}": expected a whole number from ${min} to ${max}, got "${text}"`,
    );
  }
  return n;
}

/**
 * Parses the command line. Throws a `RangeError` (or `node:util`'s
 * `TypeError` for an unknown option) whose message names the option.
 *
 * @example
 * ```ts
 * parseOptions(["--duration", "3", "--turns", "1"]).connections; // [64, 256]
 * ```
 */
export function parseOptions(args: string[]): BenchOptions {
  const { values } = parseArgs({
    args,
    options: {
      duration: { type: "string", default: "10" },
      turns: { type: "string", default: "2" },
      connections: { type: "string", default: "64,256" },
      threads: { type: "string", default: "2" },
      "drain-timeout": { type: "string", default: "180" },
      json: { type: "boolean", default: false },
    },
  });
  const threads = wholeNumber("threads", values.threads, 1, 16);
  const connections = values.connections.split(",").map((c) =>
    wholeNumber("connections", c.trim(), 1, 10_000)
  );
  for (const c of connections) {
    if (c < threads) {
      throw new RangeError(
        `Cannot run ${c} connections on ${threads} threads: wrk needs one connection per thread at least`,
      );
    }
  }
  return {
    duration: wholeNumber("duration", values.duration, 1, 600),
    turns: wholeNumber("turns", values.turns, 1, 20),
    connections,
    threads,
    drainTimeout: wholeNumber(
      "drain-timeout",
      values["drain-timeout"],
      1,
      3600,
    ),
    json: values.json,
  };
}

/**
 * The command of task `task` in the text of a deno.json file.
 *
 * @example
 * ```ts
 * taskCommand('{"tasks":{"start":"deno run main.ts"}}', "start"); // "deno run main.ts"
 * ```
 */
export function taskCommand(configText: string, task: string): string {
  let config: unknown;
  try {
    config = JSON.parse(configText);
  } catch (error) {
    throw new SyntaxError(
      `Cannot parse deno.json: expected JSON (${(error as Error).message})`,
    );
  }
  const tasks = (config as { tasks?: Record<string, unknown> } | null)?.tasks;
  const entry = tasks?.[task];
  // A task is a string, or an object whose `command` is the string.
  const command = typeof entry === "object" && entry !== null
    ? (entry as { command?: unknown }).command
    : entry;
  if (typeof command !== "string" || command.trim() === "") {
    throw new TypeError(
      `Cannot read the "${task}" task of deno.json: expected a command string`,
    );
  }
  return command.trim();
}

/**
 * The `deno` arguments of a task's command that runs `script`, such as the
 * `start` task's `deno run --allow-net ... main.ts`. Refuses what the bench
 * cannot run as one process without a shell: another program, shell syntax
 * (quotes, `&&`, pipes, redirections, variables), or another script.
 *
 * @example
 * ```ts
 * denoArgs("deno run --allow-net main.ts", "main.ts"); // ["run", "--allow-net", "main.ts"]
 * ```
 */
export function denoArgs(command: string, script: string): string[] {
  const words = command.trim().split(/\s+/);
  if (
    words[0] !== "deno" || words.length < 3 || words.at(-1) !== script ||
    /["'`$&|;<>()\\]/.test(command)
  ) {
    throw new SyntaxError(
      `Cannot run "${command}": expected "deno <subcommand> [flags] ${script}" without shell syntax`,
    );
  }
  return words.slice(1);
}

/**
 * Entry point of the operator commands (`deno task project|logs|stats|
 * deadletters …`): reads the configuration the server reads (`KV_PATH` and
 * the rest, through loadConfig), opens the same KV — a file the server may
 * have open at the same time, or a KV Connect URL with
 * `DENO_KV_ACCESS_TOKEN` — and runs the command named by the first argument.
 * Wiring only: the commands themselves live beside this file and receive
 * everything as parameters.
 *
 * @module
 */
import { ConfigError, loadConfig } from "../config.ts";
import { openKv } from "../db/open.ts";
import {
  type Command,
  type CommandContext,
  EXIT_FAILURE,
  EXIT_USAGE,
  println,
} from "./command.ts";
import { inert, inertLines } from "./inert.ts";
import { alertCommand } from "./alert.ts";
import { deadLettersCommand } from "./deadletters.ts";
import { errorsCommand } from "./errors.ts";
import { logsCommand } from "./logs.ts";
import { projectCommand } from "./project.ts";
import { rejectedCommand } from "./rejected.ts";
import { releasesCommand } from "./releases.ts";
import { statsCommand } from "./stats.ts";
import { auditCommand } from "./audit.ts";
import { tokenCommand } from "./token.ts";
import { sourcemapCommand } from "./sourcemap.ts";
import { userCommand } from "./user.ts";
import { usageCommand } from "./usage.ts";

/** The commands, by their first word. */
export const COMMANDS: Record<string, Command> = {
  project: projectCommand,
  logs: logsCommand,
  stats: statsCommand,
  deadletters: deadLettersCommand,
  rejected: rejectedCommand,
  alert: alertCommand,
  user: userCommand,
  token: tokenCommand,
  audit: auditCommand,
  errors: errorsCommand,
  releases: releasesCommand,
  sourcemap: sourcemapCommand,
  usage: usageCommand,
};

const USAGE = `Operator commands of the log ingestion service.

Usage:
  deno task project <command> ...   Create and change projects (see --help)
  deno task logs ID [options]       Print a project's entries
  deno task stats ID [--json]       Counters and recent rejections of a project
  deno task deadletters list|replay|delete [ID]
                                    Batches whose processing kept failing
  deno task rejected [replay] ID    Recent rejected entries: why, and replay
  deno task alert add|list|remove|history PROJECT ...
                                    Alert rules and their deliveries
  deno task user add|list|set|passwd|remove ...
                                    Dashboard accounts and their roles
  deno task token create|list|revoke PROJECT ...
                                    Read tokens of the read API
  deno task audit [PROJECT]         Who changed what, and when
  deno task errors PROJECT          Errors grouped: count, status, releases
  deno task errors resolve|ignore|reopen|assign PROJECT FINGERPRINT ...
                                    Triage of an error group
  deno task releases PROJECT        Releases: first seen, entries, errors
  deno task sourcemap upload|list|delete PROJECT ...
                                    Source maps that resolve minified stacks
  deno task usage [PROJECT]         Entries accepted, stored, dropped, by day

A project is named by its id or its name wherever a command takes one.

Every command takes --help and --json.

Environment (the same as the server's):
  KV_PATH               Database: a file (default ./data/kv.sqlite) or a
                        KV Connect URL of a self-hosted denokv (docs/deploy.md)
  DENO_KV_ACCESS_TOKEN  Access token of a KV Connect database
  NO_COLOR              Set to print levels without colour`;

/**
 * Runs the command named by `ctx.args[0]` with the rest of the arguments.
 *
 * @example
 * ```ts
 * const code = await runCli({ ...ctx, args: ["stats", projectId, "--json"] });
 * ```
 */
export function runCli(ctx: CommandContext): Promise<number> {
  const [name = "", ...args] = ctx.args;
  // Own names only: `toString` or `constructor` is no command.
  const command = Object.hasOwn(COMMANDS, name) ? COMMANDS[name] : undefined;
  if (command !== undefined) return command({ ...ctx, args });
  if (name === "--help" || name === "-h" || name === "help") {
    println(ctx, USAGE);
    return Promise.resolve(0);
  }
  ctx.stderr(
    name === ""
      ? USAGE + "\n"
      : `Cannot run "${
        inert(name.slice(0, 100))
      }": unknown command, expected one of ${
        Object.keys(COMMANDS).join(", ")
      }\n`,
  );
  return Promise.resolve(EXIT_USAGE);
}

/** Whether `argv` only asks for help, so that no database is needed. */
function onlyHelp(argv: string[]): boolean {
  const end = argv.indexOf("--");
  const flags = end < 0 ? argv : argv.slice(0, end);
  return argv.length === 0 || !Object.hasOwn(COMMANDS, argv[0]!) ||
    (["project", "user", "token", "alert"].includes(argv[0]!) &&
      argv.length === 1) ||
    flags.includes("--help") || flags.includes("-h");
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

function writer(file: { writeSync(p: Uint8Array): number }) {
  return (text: string) => {
    let bytes = encoder.encode(text);
    while (bytes.length > 0) bytes = bytes.subarray(file.writeSync(bytes));
  };
}

/**
 * Characters of a line read at most: the answers read are a password (at
 * most 1,024 characters) and a yes or no, so a longer line is refused as it
 * would be whole.
 */
const MAX_LINE = 64 * 1024;

/** Reads one line of standard input (`null` at its end). */
async function readLine(): Promise<string | null> {
  const buffer = new Uint8Array(1024);
  let text = "";
  for (;;) {
    const n = await Deno.stdin.read(buffer);
    if (n === null) return text === "" ? null : text;
    const chunk = decoder.decode(buffer.subarray(0, n), { stream: true });
    const newline = chunk.indexOf("\n");
    if (newline >= 0) return text + chunk.slice(0, newline);
    text += chunk;
    if (text.length > MAX_LINE) return text;
  }
}

if (import.meta.main) {
  const argv = Deno.args;
  const stderr = writer(Deno.stderr);
  let code: number;
  try {
    const config = loadConfig(Deno.env.toObject());
    // Help needs no database: an in-memory one keeps `--help` from creating
    // ./data or reaching a remote database.
    const kv = await openKv(onlyHelp(argv) ? ":memory:" : config.kvPath);
    const controller = new AbortController();
    const following = argv[0] === "logs" &&
      (argv.includes("--follow") || argv.includes("-f"));
    const onInterrupt = () => controller.abort();
    // Ctrl-C ends `logs --follow` cleanly; other commands keep the default.
    if (following) Deno.addSignalListener("SIGINT", onInterrupt);
    const noColor = (Deno.env.get("NO_COLOR") ?? "") !== "";
    try {
      code = await runCli({
        kv,
        args: argv,
        stdout: writer(Deno.stdout),
        stderr,
        now: Date.now,
        isTerminal: Deno.stdout.isTerminal(),
        noColor,
        signal: controller.signal,
        readLine,
        allowPrivateTargets: config.alertPrivateTargets,
      });
    } finally {
      if (following) Deno.removeSignalListener("SIGINT", onInterrupt);
      kv.close();
    }
  } catch (error) {
    if (error instanceof Deno.errors.BrokenPipe) Deno.exit(0);
    const message = error instanceof Error ? error.message : String(error);
    stderr(
      error instanceof ConfigError
        ? `${message}\n`
        : inertLines(`Cannot run "${argv.slice(0, 2).join(" ")}": ${message}`) +
          "\n",
    );
    code = error instanceof ConfigError ? EXIT_USAGE : EXIT_FAILURE;
  }
  Deno.exit(code);
}

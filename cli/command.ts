/**
 * What every operator command receives and how it fails. A command is a
 * function of a {@linkcode CommandContext} — database, arguments, writers,
 * clock, terminal — that returns an exit code, so the tests run commands
 * in-process against an in-memory KV and read what they wrote.
 *
 * Commands must not read the environment, open KV or exit: `cli/main.ts`
 * does that wiring.
 *
 * @module
 */
import { parseArgs, type ParseArgsOptionsConfig } from "node:util";
import { type Project, ProjectNotFoundError } from "../db/projects.ts";
import { AmbiguousProjectError, resolveProject } from "./resolve.ts";
import { inertLines } from "./inert.ts";
import { InvalidValueError } from "../db/validation.ts";
import {
  DeadLetterConflictError,
  DeadLetterNotFoundError,
} from "../queue/dead_letters.ts";

/** Everything a command needs from the outside world. */
export interface CommandContext {
  /** The database, opened from `KV_PATH` by `cli/main.ts`. */
  kv: Deno.Kv;
  /** The arguments after the command words (`project create` → `["--name", "web"]`). */
  args: string[];
  /** Writes to standard output. */
  stdout: (text: string) => void;
  /** Writes to standard error. */
  stderr: (text: string) => void;
  /** Clock, Unix milliseconds. */
  now: () => number;
  /** Whether standard output is a terminal (levels are coloured then). */
  isTerminal: boolean;
  /** `NO_COLOR` is set: never colour. @default {false} */
  noColor?: boolean;
  /** Ends `logs --follow` (Ctrl-C). @default never */
  signal?: AbortSignal;
  /** Period of `logs --follow` polls, in milliseconds. @default {1000} */
  pollMs?: number;
  /** Waits between polls; resolves early when `signal` aborts. @default a timer */
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
  /** Reads one line of standard input, `null` at its end (for confirmations). @default end of input */
  readLine?: () => Promise<string | null>;
  /** `ALERT_PRIVATE_TARGETS=allow`: webhooks on private addresses permitted. @default {false} */
  allowPrivateTargets?: boolean;
}

/** A command: returns the process's exit code. */
export type Command = (ctx: CommandContext) => Promise<number>;

/** Exit code of a command that ran into a refusal or a missing record. */
export const EXIT_FAILURE = 1;
/** Exit code of a command called with bad arguments. */
export const EXIT_USAGE = 2;

/** Thrown for a bad flag or argument; exits with {@linkcode EXIT_USAGE}. */
export class UsageError extends Error {
  override name = "UsageError";
}

/** Whether output to this context is coloured. */
export function useColor(ctx: CommandContext): boolean {
  return ctx.isTerminal && !ctx.noColor;
}

/** Writes one line to standard output. */
export function println(ctx: CommandContext, line = ""): void {
  ctx.stdout(line + "\n");
}

/** The result of {@linkcode parseFlags}. */
export interface Parsed {
  values: Record<string, string | boolean | (string | boolean)[] | undefined>;
  positionals: string[];
}

/**
 * Parses `args` with `node:util` `parseArgs` (strict, positionals allowed,
 * `--help`/`-h` added), turning its errors into one-line {@linkcode UsageError}s.
 * Positionals are checked afterwards by {@linkcode takePositionals}, so that
 * `--help` is answered even when an argument is missing.
 *
 * @example
 * ```ts
 * const { values, positionals } = parseFlags("project create", ctx.args, {
 *   name: { type: "string" },
 * });
 * ```
 */
export function parseFlags(
  command: string,
  args: string[],
  options: ParseArgsOptionsConfig,
): Parsed {
  const all: ParseArgsOptionsConfig = { ...options, ...HELP_FLAG };
  const sorted = sortArguments(args, all);
  try {
    const { values, positionals, tokens } = parseArgs({
      args: sorted,
      options: all,
      allowPositionals: true,
      strict: true,
      tokens: true,
    });
    refuseRepeated(command, tokens, all);
    return { values, positionals };
  } catch (error) {
    const code = parseArgsCode(error);
    if (code === undefined) throw error;
    const { option, type } = offendingOption(sorted, all, code);
    if (code === "ERR_PARSE_ARGS_UNKNOWN_OPTION") {
      throw new UsageError(
        `Cannot use option "${option}" with "${command}": unknown option (see --help)`,
      );
    }
    if (code === "ERR_PARSE_ARGS_INVALID_OPTION_VALUE") {
      throw new UsageError(
        type === "boolean"
          ? `Cannot use option "${option}" with "${command}": it takes no value`
          : `Cannot use option "${option}" with "${command}": expected a value (write "${option}=-VALUE" for a value starting with a dash)`,
      );
    }
    throw new UsageError(
      `Cannot read the arguments of "${command}": ${(error as Error).message}`,
    );
  }
}

/**
 * Refuses an option that takes one value given twice (`--name a --name b`):
 * the last would be taken silently.
 */
function refuseRepeated(
  command: string,
  tokens: ReturnType<typeof parseArgs>["tokens"],
  options: ParseArgsOptionsConfig,
): void {
  const seen = new Set<string>();
  for (const token of tokens ?? []) {
    if (token.kind !== "option") continue;
    const option = options[token.name];
    if (option?.type !== "string" || option.multiple) continue;
    if (seen.has(token.name)) {
      throw new UsageError(
        `Cannot use option "--${token.name}" twice with "${command}": it takes one value`,
      );
    }
    seen.add(token.name);
  }
}

/** The names of a command's flags by kind, for {@linkcode flags}. */
export interface FlagNames {
  /** Flags that take a value. @default none */
  string?: string[];
  /** Flags that take no value. @default none */
  boolean?: string[];
  /** Flags that take a value and may repeat. @default none */
  multiple?: string[];
}

/**
 * A command's flags as `parseArgs` takes them, from their names by kind
 * (the lists std's `parseArgs` takes).
 *
 * @example
 * ```ts
 * flags({ string: ["limit"], boolean: ["json"] });
 * // { limit: { type: "string" }, json: { type: "boolean" } }
 * ```
 */
export function flags(names: FlagNames): ParseArgsOptionsConfig {
  const config: ParseArgsOptionsConfig = {};
  for (const name of names.string ?? []) config[name] = { type: "string" };
  for (const name of names.boolean ?? []) config[name] = { type: "boolean" };
  for (const name of names.multiple ?? []) {
    config[name] = { type: "string", multiple: true };
  }
  return config;
}

/** The option every command takes. */
const HELP_FLAG: ParseArgsOptionsConfig = {
  help: { type: "boolean", short: "h" },
};

/** The `code` of an error thrown by `parseArgs` (`ERR_PARSE_ARGS_…`). */
function parseArgsCode(error: unknown): string | undefined {
  if (!(error instanceof Error) || !("code" in error)) return undefined;
  const code = error.code;
  return typeof code === "string" && code.startsWith("ERR_PARSE_ARGS_")
    ? code
    : undefined;
}

/**
 * The option that made strict `parseArgs` throw `code`, as written (`--name`,
 * `-x`) and with its declared type: found again in the tokens of a lenient
 * parse, so that no error message is read.
 */
function offendingOption(
  args: string[],
  options: ParseArgsOptionsConfig,
  code: string,
): { option: string; type?: "string" | "boolean" } {
  const { tokens } = parseArgs({
    args,
    options,
    allowPositionals: true,
    strict: false,
    tokens: true,
  });
  for (const token of tokens) {
    if (token.kind !== "option") continue;
    const type = options[token.name]?.type;
    const offends = code === "ERR_PARSE_ARGS_UNKNOWN_OPTION"
      ? type === undefined
      : type === "boolean"
      ? token.inlineValue === true
      : token.value === undefined ||
        (token.inlineValue === false && token.value.startsWith("-"));
    if (offends) return { option: token.rawName, type };
  }
  return { option: "" };
}

/**
 * Rewrites `args` as `[...options, "--", ...positionals]` for `parseArgs`.
 * Project ids are random base64url and may start with a dash (`-zQ3…`), which
 * `parseArgs` would read as options; here an argument that is not one of the
 * command's options and looks like an id is a positional. The value of a
 * string option is attached (`--grep=-x`) so that it may start with a dash
 * too. Anything else starting with a dash is left for `parseArgs` to refuse.
 */
function sortArguments(
  args: string[],
  options: ParseArgsOptionsConfig,
): string[] {
  const all = options;
  const shorts = new Map<string, string>(
    Object.entries(all).flatMap(([name, o]) =>
      o.short === undefined ? [] : [[`-${o.short}`, name] as const]
    ),
  );
  const optionName = (arg: string): string | undefined => {
    if (arg.startsWith("--")) {
      const name = arg.slice(2).split("=")[0]!;
      return Object.hasOwn(all, name) ? name : undefined;
    }
    return shorts.get(arg);
  };
  const flags: string[] = [];
  const positionals: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (arg === "--") {
      positionals.push(...args.slice(i + 1));
      break;
    }
    const name = optionName(arg);
    if (name !== undefined) {
      const next = args[i + 1];
      if (
        all[name]!.type === "string" && !arg.includes("=") &&
        next !== undefined && next !== "--" && optionName(next) === undefined
      ) {
        flags.push(`--${name}=${next}`);
        i++;
      } else {
        flags.push(arg);
      }
    } else if (arg.startsWith("-") && arg !== "-") {
      flags.push(arg);
    } else {
      positionals.push(arg);
    }
  }
  return [...flags, "--", ...positionals];
}

/**
 * The values of positionals named `Names`: a string for each required name,
 * `string | undefined` for each optional one (a name ending in `?`).
 */
export type Positionals<Names extends readonly string[]> = {
  -readonly [K in keyof Names]: Names[K] extends `${string}?`
    ? string | undefined
    : string;
};

/**
 * Checks the positional arguments against the names a command expects and
 * returns them typed; names ending in `?` are optional and come last. A
 * missing or extra argument is a one-line {@linkcode UsageError} naming it.
 *
 * @example
 * ```ts
 * const [id, value] = takePositionals("project allow", parsed.positionals, [
 *   "ID",
 *   "VALUE",
 * ]); // both strings, or `Cannot run "project allow": missing VALUE (see --help)`
 * ```
 */
export function takePositionals<const Names extends readonly string[]>(
  command: string,
  positionals: readonly string[],
  names: Names,
): Positionals<Names> {
  const required = names.filter((n) => !n.endsWith("?")).length;
  if (positionals.length < required) {
    throw new UsageError(
      `Cannot run "${command}": missing ${
        names[positionals.length]
      } (see --help)`,
    );
  }
  if (positionals.length > names.length) {
    throw new UsageError(
      `Cannot run "${command}": unexpected argument "${
        positionals[names.length]
      }" (see --help)`,
    );
  }
  return names.map((_, i) => positionals[i]) as Positionals<Names>;
}

/**
 * The project named by the one argument of `command` (its id or name, as
 * {@linkcode resolveProject} finds it), shown as `label` in its usage; a
 * {@linkcode UsageError} when the argument is missing or not alone.
 *
 * @example
 * ```ts
 * const project = await projectArgument(ctx, "stats", parsed);
 * // or `Cannot run "stats": missing ID (see --help)`
 * ```
 */
export async function projectArgument(
  ctx: CommandContext,
  command: string,
  parsed: Parsed,
  label = "ID",
): Promise<Project> {
  const [named] = takePositionals(command, parsed.positionals, [label]);
  return await resolveProject(ctx.kv, named);
}

/**
 * Reads a flag that takes one of `choices`: `undefined` when it is not
 * given, a one-line {@linkcode UsageError} (exit 2) naming the choices when
 * its value is none of them.
 *
 * @example
 * ```ts
 * const scope = choiceFlag(parsed, "scope", ["read", "upload"]);
 * // or `Cannot read --scope "write": expected read or upload`
 * ```
 */
export function choiceFlag<const T extends string>(
  parsed: Parsed,
  name: string,
  choices: readonly T[],
): T | undefined {
  const value = stringFlag(parsed, name);
  if (value === undefined || (choices as readonly string[]).includes(value)) {
    return value as T | undefined;
  }
  const listed = choices.length > 1
    ? `${choices.slice(0, -1).join(", ")} or ${choices.at(-1)}`
    : choices.join("");
  throw new UsageError(
    `Cannot read --${name} "${value.slice(0, 100)}": expected ${listed}`,
  );
}

/** Reads a string flag that may appear once. */
export function stringFlag(parsed: Parsed, name: string): string | undefined {
  const value = parsed.values[name];
  if (Array.isArray(value)) return value.map(String).at(-1);
  return typeof value === "string" ? value : undefined;
}

/**
 * Reads a string flag that `command` cannot run without; a one-line
 * {@linkcode UsageError} naming it and its `value` when it is missing.
 *
 * @example
 * ```ts
 * const name = requiredFlag(parsed, "token create", "name", "NAME");
 * // or `Cannot run "token create": missing --name NAME (see --help)`
 * ```
 */
export function requiredFlag(
  parsed: Parsed,
  command: string,
  name: string,
  value: string,
): string {
  const text = stringFlag(parsed, name);
  if (text === undefined) {
    throw new UsageError(
      `Cannot run "${command}": missing --${name} ${value} (see --help)`,
    );
  }
  return text;
}

/**
 * Reads `--name`: a whole number from 1 to `max`, `fallback` when it is
 * absent; a {@linkcode UsageError} naming the bounds otherwise.
 *
 * @example
 * ```ts
 * const days = countFlag(parsed, "days", { fallback: 7, max: 90 });
 * // or `Cannot read --days "0": expected a whole number from 1 to 90`
 * ```
 */
export function countFlag(
  parsed: Parsed,
  name: string,
  bounds: { fallback: number; max: number },
): number {
  const text = stringFlag(parsed, name) ?? String(bounds.fallback);
  const count = Number(text);
  if (!/^\d+$/.test(text) || count < 1 || count > bounds.max) {
    throw new UsageError(
      `Cannot read --${name} "${text}": expected a whole number from 1 to ${bounds.max}`,
    );
  }
  return count;
}

/**
 * Reads `--limit` as {@linkcode countFlag} does.
 *
 * @example
 * ```ts
 * const limit = limitFlag(parsed, { fallback: 100, max: 100_000 });
 * ```
 */
export function limitFlag(
  parsed: Parsed,
  bounds: { fallback: number; max: number },
): number {
  return countFlag(parsed, "limit", bounds);
}

/**
 * Checks that `text`, the value of `--name`, is one of `allowed`; a
 * {@linkcode UsageError} listing them otherwise.
 *
 * @example
 * ```ts
 * const status = oneOfFlag("status", "open", STATUS_FILTERS);
 * // or `Cannot read --status "shut": expected one of all, open, …`
 * ```
 */
export function oneOfFlag<const T extends string>(
  name: string,
  text: string,
  allowed: readonly T[],
): T {
  if (!(allowed as readonly string[]).includes(text)) {
    throw new UsageError(
      `Cannot read --${name} "${text}": expected one of ${allowed.join(", ")}`,
    );
  }
  return text as T;
}

/** Reads a string flag that may be repeated. */
export function stringFlags(parsed: Parsed, name: string): string[] {
  const value = parsed.values[name];
  if (value === undefined) return [];
  return (Array.isArray(value) ? value : [value]).map(String);
}

/** Reads a boolean flag. */
export function booleanFlag(parsed: Parsed, name: string): boolean {
  return parsed.values[name] === true;
}

/**
 * Runs `body`, turning the errors an operator can cause into one line on
 * stderr and an exit code: {@linkcode EXIT_USAGE} for bad arguments,
 * {@linkcode EXIT_FAILURE} for an unknown project, a refused value or a
 * missing dead letter. Other errors propagate.
 */
export async function guard(
  ctx: CommandContext,
  body: () => Promise<number>,
): Promise<number> {
  try {
    return await body();
  } catch (error) {
    if (error instanceof UsageError) {
      ctx.stderr(inertLines(error.message) + "\n");
      return EXIT_USAGE;
    }
    if (
      error instanceof ProjectNotFoundError ||
      error instanceof AmbiguousProjectError ||
      error instanceof InvalidValueError ||
      error instanceof DeadLetterNotFoundError ||
      error instanceof DeadLetterConflictError
    ) {
      ctx.stderr(inertLines(error.message) + "\n");
      return EXIT_FAILURE;
    }
    throw error;
  }
}

/** A command without subcommands, for {@linkcode runCommand}. */
export interface CommandSpec {
  /** Its words, as in `rejected replay`, for the messages of a bad flag. */
  name: string;
  /** Its help text, printed for `--help`. */
  usage: string;
  flags: ParseArgsOptionsConfig;
}

/**
 * Runs a command under {@linkcode guard}: reads its flags as
 * {@linkcode parseFlags} does, answers `--help` with its usage, else runs
 * `body`.
 */
export function runCommand(
  ctx: CommandContext,
  spec: CommandSpec,
  body: (parsed: Parsed) => Promise<number>,
): Promise<number> {
  return guard(ctx, async () => {
    const parsed = parseFlags(spec.name, ctx.args, spec.flags);
    if (booleanFlag(parsed, "help")) {
      println(ctx, spec.usage);
      return 0;
    }
    return await body(parsed);
  });
}

/**
 * Commands made of subcommands (`deno task project create …`): the table
 * of their arguments, flags and runs, and the dispatch on the first
 * argument that answers `--help` at either level and checks the arguments
 * before a subcommand runs.
 *
 * @module
 */
import { inertLines } from "./inert.ts";
import type { ParseArgsOptionsConfig } from "node:util";
import {
  booleanFlag,
  type CommandContext,
  EXIT_FAILURE,
  EXIT_USAGE,
  guard,
  type Parsed,
  parseFlags,
  type Positionals,
  println,
  takePositionals,
  UsageError,
} from "./command.ts";
import type { ListView } from "./format.ts";
import { printList } from "./output.ts";
import { projectIdOf } from "./resolve.ts";

/** `--json`, the option of most subcommands. */
export const JSON_FLAG = { json: { type: "boolean" } } as const;

/**
 * A subcommand's arguments, flags and what runs it, for
 * {@linkcode dispatch}; made with {@linkcode subcommand}.
 */
export interface Subcommand<
  Names extends readonly string[] = readonly string[],
> {
  /**
   * The names of its positional arguments, as {@linkcode takePositionals}
   * takes them (a name ending in `?` is optional).
   */
  positionals: Names;
  options: ParseArgsOptionsConfig;
  /** Runs it with its positional arguments, checked, as `args`. */
  run(
    ctx: CommandContext,
    parsed: Parsed,
    args: Positionals<Names>,
  ): Promise<number>;
}

/**
 * A subcommand, its `run` receiving its positional arguments typed by
 * their names.
 *
 * @example
 * ```ts
 * const show = subcommand({
 *   positionals: ["ID"],
 *   options: JSON_FLAG,
 *   run: async (ctx, parsed, [id]) =>
 *     printResult(ctx, parsed, { json: { id }, text: `Project ${id}` }),
 * });
 * ```
 */
export function subcommand<const Names extends readonly string[]>(
  spec: Subcommand<Names>,
): Subcommand {
  return spec;
}

/** The subcommands of a command, by their word. */
export type Subcommands = Record<string, Subcommand>;

/**
 * `list PROJECT`: the records `list` reads of the project named by its
 * first argument (an id or a name), as {@linkcode printList} prints them.
 */
export function projectList<T>(
  list: (kv: Deno.Kv, projectId: string) => Promise<T[]>,
  view: (projectId: string) => Omit<ListView<T>, "json">,
): Subcommand {
  return subcommand({
    positionals: ["PROJECT"],
    options: JSON_FLAG,
    async run(ctx, parsed, [named]) {
      const projectId = await projectIdOf(ctx.kv, named);
      const items = await list(ctx.kv, projectId);
      return printList(ctx, parsed, items, view(projectId));
    },
  });
}

/**
 * `list`: the records `list` reads of the whole service (projects,
 * accounts), as {@linkcode printList} prints them.
 */
export function serviceList<T>(
  list: (kv: Deno.Kv) => Promise<T[]>,
  view: (ctx: CommandContext) => Omit<ListView<T>, "json">,
): Subcommand {
  return subcommand({
    positionals: [],
    options: JSON_FLAG,
    async run(ctx, parsed) {
      return printList(ctx, parsed, await list(ctx.kv), view(ctx));
    },
  });
}

/** Options of {@linkcode dispatch}. */
export interface DispatchOptions {
  /** The command's word, as in `deno task project`. */
  command: string;
  /** Help texts: `""` for the command, and one per subcommand. */
  usage: Record<string, string>;
  subcommands: Subcommands;
  /**
   * Errors told in one line with {@linkcode EXIT_FAILURE}, besides those
   * of {@linkcode guard} (a missing account, rule or token).
   * @default none
   */
  failures?: (new (...args: never[]) => Error)[];
  /**
   * Wraps the run of a subcommand whose arguments have been read (to
   * resolve a name, or to audit what it changed).
   * @default runs it
   */
  around?: (
    name: string,
    parsed: Parsed,
    run: () => Promise<number>,
  ) => Promise<number>;
}

/**
 * Runs the subcommand named by the first argument, answering `--help` at
 * either level (without a subcommand the help goes to stderr with
 * {@linkcode EXIT_USAGE}), and turns its failures into one line as
 * {@linkcode guard} does.
 *
 * @example
 * ```ts
 * return dispatch(ctx, { command: "token", usage, subcommands });
 * ```
 */
export function dispatch(
  ctx: CommandContext,
  options: DispatchOptions,
): Promise<number> {
  return guardFailures(ctx, options.failures ?? [], () => run(ctx, options));
}

async function run(
  ctx: CommandContext,
  options: DispatchOptions,
): Promise<number> {
  const { command, usage, subcommands } = options;
  const [name = "", ...rest] = ctx.args;
  if (name === "") {
    ctx.stderr(usage[""]! + "\n");
    return EXIT_USAGE;
  }
  if (name === "--help" || name === "-h" || name === "help") {
    println(ctx, usage[""]!);
    return 0;
  }
  const sub = Object.hasOwn(subcommands, name) ? subcommands[name] : undefined;
  if (sub === undefined) {
    throw new UsageError(
      `Cannot run "${command} ${name}": unknown command (see "deno task ${command} --help")`,
    );
  }
  const parsed = parseFlags(`${command} ${name}`, rest, sub.options);
  if (booleanFlag(parsed, "help")) {
    println(ctx, usage[name]!);
    return 0;
  }
  const run = () =>
    sub.run(
      { ...ctx, args: rest },
      parsed,
      takePositionals(
        `${command} ${name}`,
        parsed.positionals,
        sub.positionals,
      ),
    );
  return await (options.around?.(name, parsed, run) ?? run());
}

/**
 * Runs `body` as {@linkcode guard} does, also turning an error of one of
 * `kinds` into one line and {@linkcode EXIT_FAILURE}.
 */
function guardFailures(
  ctx: CommandContext,
  kinds: (new (...args: never[]) => Error)[],
  body: () => Promise<number>,
): Promise<number> {
  return guard(ctx, async () => {
    try {
      return await body();
    } catch (error) {
      if (kinds.some((kind) => error instanceof kind)) {
        ctx.stderr(inertLines((error as Error).message) + "\n");
        return EXIT_FAILURE;
      }
      throw error;
    }
  });
}

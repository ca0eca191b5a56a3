/**
 * What a command prints when it has done its work: its outcome as one line
 * of JSON with `--json`, else as text for people.
 *
 * @module
 */
import {
  booleanFlag,
  type CommandContext,
  type Parsed,
  println,
} from "./command.ts";
import { formatList, type ListView } from "./format.ts";

/**
 * Prints what a command did: `json` as one line of JSON with `--json`, else
 * the lines of `text`. Returns 0, the exit code of success.
 *
 * @example
 * ```ts
 * return printResult(ctx, parsed, { json: userJson(user), text: "Saved" });
 * ```
 */
export function printResult(
  ctx: CommandContext,
  parsed: Parsed,
  result: { json: unknown; text: string | string[] },
): number {
  const lines = booleanFlag(parsed, "json")
    ? [JSON.stringify(result.json)]
    : [result.text].flat();
  for (const line of lines) println(ctx, line);
  return 0;
}

/**
 * Prints `items` as {@linkcode formatList} shows them, as a JSON array
 * with `--json`. Returns 0, the exit code of success.
 */
export function printList<T>(
  ctx: CommandContext,
  parsed: Parsed,
  items: readonly T[],
  view: Omit<ListView<T>, "json">,
): number {
  println(
    ctx,
    formatList(items, { ...view, json: booleanFlag(parsed, "json") }),
  );
  return 0;
}

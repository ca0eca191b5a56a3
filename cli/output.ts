/**
 * What a command prints when it has done its work: its outcome as one line
 * of JSON with `--json`, else as text for people; and the rows of an
 * aggregation as a table, NDJSON or CSV.
 *
 * @module
 */
import {
  booleanFlag,
  type CommandContext,
  type Parsed,
  println,
} from "./command.ts";
import {
  formatList,
  formatTable,
  formatTime,
  inert,
  type ListView,
} from "./format.ts";
import { jsonText } from "./inert.ts";
import {
  type Aggregation,
  type Cell,
  MAX_EXACT_UNIQ,
} from "../db/query/mod.ts";
import { rowsCsv } from "../domain/csv.ts";

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
    ? [jsonText(result.json)]
    : [result.text].flat();
  for (const line of lines) println(ctx, line);
  return 0;
}

/**
 * Prints one line of JSON per item (NDJSON), as `toJson` makes it. Returns
 * 0, the exit code of success.
 *
 * @example
 * ```ts
 * if (booleanFlag(parsed, "json")) return printJsonLines(ctx, events, eventJson);
 * ```
 */
export function printJsonLines<T>(
  ctx: CommandContext,
  items: Iterable<T>,
  toJson: (item: T) => unknown,
): number {
  for (const item of items) println(ctx, jsonText(toJson(item)));
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

/**
 * Prints the rows of an aggregation (`--query 'Q | count by (…)'`): a table
 * for people (sender text made inert, `null` for a missing value, `share` as
 * a percentage), one JSON object per row with `json`, CSV with `csv` (its
 * text made inert too when written to a terminal). What
 * is only partly counted or estimated is said on stderr.
 *
 * @example
 * ```ts
 * printAggregation(ctx, await aggregate(kv, projectId, { filter, pipe }), "table");
 * ```
 */
export function printAggregation(
  ctx: CommandContext,
  answer: Aggregation,
  mode: "table" | "json" | "csv",
): void {
  const { columns, rows } = answer;
  if (mode === "json") {
    printJsonLines(ctx, rows, (row) => row);
  } else if (mode === "csv") {
    // To a terminal, a sender's escape sequences are shown, not obeyed; to a
    // file or a pipe, the values are written as stored.
    const shown = ctx.isTerminal
      ? rows.map((row) =>
        Object.fromEntries(
          Object.entries(row).map(([k, v]) => [
            inert(k),
            typeof v === "string" ? inert(v) : v,
          ]),
        )
      )
      : rows;
    ctx.stdout(rowsCsv(ctx.isTerminal ? columns.map(inert) : columns, shown));
  } else {
    const cell = (column: string, value: Cell) =>
      value === null
        ? "null"
        : column === "share"
        ? `${(Number(value) * 100).toFixed(1)}%`
        : column === "time"
        ? formatTime(Date.parse(String(value)))
        : inert(String(value));
    const body = rows.map((row) => columns.map((c) => cell(c, row[c] ?? null)));
    // Column names are field paths a query names, which entries supplied.
    println(ctx, formatTable([columns.map(inert), ...body]));
  }
  if (answer.more) {
    ctx.stderr(
      `Showing the largest ${answer.rows.length} of ${answer.groups} groups\n`,
    );
  }
  if (answer.estimate) {
    ctx.stderr(
      `The count is an estimate: more than ${MAX_EXACT_UNIQ} distinct values\n`,
    );
  }
  if (answer.searchedTo !== undefined) {
    ctx.stderr(
      `Partial, searched back to ${
        formatTime(answer.searchedTo)
      }: the time budget ran out (narrow --since and --until)\n`,
    );
  }
}

/**
 * Human output of the operator commands: aligned columns, coloured levels,
 * readable UTC times, and the durations and times operators type
 * (`15m`, `24h`, `2026-01-01T10:00:00Z`). Pure functions only.
 *
 * @module
 */
import { UsageError } from "./command.ts";
import { DURATION_UNIT_MS } from "../domain/duration.ts";

import { inert, jsonText } from "./inert.ts";

export { inert };

// deno-lint-ignore no-control-regex -- matching the escape character is the point
const ANSI = /\x1b\[[0-9;]*m/g;

const LEVEL_STYLES: Record<string, string> = {
  info: "36", // cyan
  warning: "33", // yellow
  error: "31", // red
  critical: "1;37;41", // bold white on red
};

/** Wraps `text` in an ANSI style when `color` is on. */
export function style(text: string, code: string, color: boolean): string {
  return color ? `\x1b[${code}m${text}\x1b[0m` : text;
}

/**
 * A level name, coloured by severity when `color` is on (custom levels in
 * magenta), padded to `width` visible characters.
 *
 * @example
 * ```ts
 * formatLevel("error", true, 8); // "\x1b[31merror\x1b[0m   "
 * ```
 */
export function formatLevel(level: string, color: boolean, width = 0): string {
  const padding = " ".repeat(Math.max(0, width - level.length));
  const code = Object.hasOwn(LEVEL_STYLES, level) ? LEVEL_STYLES[level] : "35";
  return style(level, code ?? "35", color) + padding;
}

/** Length of `text` as shown, ANSI styles left out. */
export function visibleLength(text: string): number {
  return text.replace(ANSI, "").length;
}

/**
 * Lays `rows` out in columns separated by two spaces, each as wide as its
 * widest cell (styles not counted); the last column is not padded.
 *
 * @example
 * ```ts
 * formatTable([["ID", "NAME"], ["abc", "web"]]); // "ID   NAME\nabc  web"
 * ```
 */
export function formatTable(rows: string[][]): string {
  const widths: number[] = [];
  for (const row of rows) {
    row.forEach((cell, i) => {
      widths[i] = Math.max(widths[i] ?? 0, visibleLength(cell));
    });
  }
  return rows.map((row) =>
    row.map((cell, i) =>
      i === row.length - 1
        ? cell
        : cell + " ".repeat((widths[i] ?? 0) - visibleLength(cell))
    ).join("  ").trimEnd()
  ).join("\n");
}

/** How {@linkcode formatList} shows a list of records. */
export interface ListView<T> {
  /** Whether to print one JSON array instead of a table. */
  json: boolean;
  /** A record as an element of that array. */
  toJson: (item: T) => unknown;
  /** What is said when there is no record. */
  empty: string;
  /** The table's header row. */
  header: string[];
  /** A record as a table row. */
  row: (item: T) => string[];
}

/**
 * A list of records as a `--json` array, as the sentence saying there is
 * none, or as a table under its header: how every `list` command answers.
 *
 * @example
 * ```ts
 * formatList([], { json: false, toJson: String, empty: "No rules", header: ["ID"], row: (r) => [r] }); // "No rules"
 * ```
 */
export function formatList<T>(items: readonly T[], view: ListView<T>): string {
  if (view.json) return jsonText(items.map((item) => view.toJson(item)));
  if (items.length === 0) return view.empty;
  return formatTable([view.header, ...items.map((item) => view.row(item))]);
}

/**
 * A time as `2026-01-01 12:00:05Z` (UTC), with milliseconds when asked.
 *
 * @example
 * ```ts
 * formatTime(Date.UTC(2026, 0, 1, 12, 0, 5, 250), true); // "2026-01-01 12:00:05.250Z"
 * ```
 */
export function formatTime(ms: number, withMs = false): string {
  const iso = new Date(ms).toISOString();
  return iso.slice(0, 10) + " " + iso.slice(11, withMs ? 23 : 19) + "Z";
}

const DURATION = /^(?:\d+(?:\.\d+)?(?:ms|s|m|h|d|w))+$/;

/**
 * Reads a duration such as `15m`, `24h`, `1h30m` or `0`; `undefined` when
 * `text` is not one.
 *
 * @example
 * ```ts
 * parseDuration("1h30m"); // 5400000
 * ```
 */
export function parseDuration(text: string): number | undefined {
  if (text === "0") return 0;
  if (!DURATION.test(text)) return undefined;
  let total = 0;
  for (const [, n, unit] of text.matchAll(/(\d+(?:\.\d+)?)(ms|s|m|h|d|w)/g)) {
    total += Number(n) * DURATION_UNIT_MS[unit!]!;
  }
  return Math.round(total);
}

/**
 * Reads the value of a time flag: a duration back from `now` (`15m`) or an
 * ISO 8601 date or time (`2026-01-01` is midnight UTC, `2026-01-01T10:00:00Z`
 * as written; a date and time without an offset is local time). Throws {@linkcode UsageError} naming `flag` otherwise.
 *
 * @example
 * ```ts
 * parseTimeFlag("--since", "15m", () => Date.UTC(2026, 0, 1)); // 15 minutes before
 * ```
 */
export function parseTimeFlag(
  flag: string,
  text: string,
  now: () => number,
): number {
  const duration = parseDuration(text);
  if (duration !== undefined) return now() - duration;
  if (/^\d{4}-\d{2}-\d{2}/.test(text)) {
    const ms = Date.parse(text);
    if (!Number.isNaN(ms)) return ms;
  }
  throw new UsageError(
    `Cannot read ${flag} "${text}": expected a duration such as "15m" or an ISO 8601 time such as "2026-01-01T10:00:00Z"`,
  );
}

/** Compact JSON of a value for people (made inert), `undefined` shown as nothing. */
export function compact(value: unknown): string {
  return value === undefined ? "" : inert(JSON.stringify(value));
}

const BLOCKS = "▁▂▃▄▅▆▇█";

/**
 * Hourly counts as one line of block characters; a space for an empty hour.
 *
 * @example
 * ```ts
 * sparkline([0, 1, 4]); // " ▂█"
 * ```
 */
export function sparkline(counts: number[]): string {
  const max = Math.max(1, ...counts);
  return counts.map((n) =>
    n === 0 ? " " : BLOCKS[Math.min(7, Math.floor((n / max) * 7.999))]
  ).join("");
}

/**
 * CSV as the read API and `deno task logs --csv` write it (RFC 4180, CRLF
 * line ends), with cells a spreadsheet would run as formulas kept text.
 *
 * @module
 */
import type { LogRecord } from "./entry.ts";

/**
 * One CSV cell (RFC 4180): quoted when it holds a comma, a quote or a line
 * break, quotes doubled; a cell a spreadsheet would read as a formula
 * (starting with `=`, `+`, `-`, `@`, a tab or a carriage return) gets a
 * leading `'` so that it stays text.
 *
 * @example
 * ```ts
 * csvCell('=HYPERLINK("x")'); // "\"'=HYPERLINK(\"\"x\"\")\""
 * ```
 */
export function csvCell(value: string): string {
  const safe = /^[=+\-@\t\r]/.test(value) ? `'${value}` : value;
  return /[",\r\n]/.test(safe) ? `"${safe.replaceAll('"', '""')}"` : safe;
}

/**
 * Rows of named values as CSV: a header of `columns`, then one line per
 * row; `null` and absent values are empty cells, numbers their decimal text.
 *
 * @example
 * ```ts
 * rowsCsv(["level", "count"], [{ level: "error", count: 3 }]); // "level,count\r\nerror,3\r\n"
 * ```
 */
export function rowsCsv(
  columns: readonly string[],
  rows: readonly Record<string, unknown>[],
): string {
  const line = (cells: string[]) => cells.map(csvCell).join(",") + "\r\n";
  return line([...columns]) + rows.map((row) =>
    line(columns.map((c) => {
      const value = row[c];
      return value === undefined || value === null ? "" : String(value);
    }))
  ).join("");
}

/** The CSV columns of an entry, in order. */
export const CSV_COLUMNS = [
  "id",
  "receivedAt",
  "level",
  "title",
  "message",
  "data",
  "context",
  "device",
  "appid",
  "auth",
] as const;

/** A cell's text: a string as it is, any other value as its JSON. */
function textOf(value: unknown): string {
  if (value === undefined || value === null) return "";
  return typeof value === "string" ? value : JSON.stringify(value);
}

/** The CSV row of one entry, in {@linkcode CSV_COLUMNS} (CRLF-terminated). */
export function csvRow(record: LogRecord): string {
  const cells = [
    record.id,
    new Date(record.receivedAt).toISOString(),
    record.level,
    textOf(record.data.title),
    textOf(record.data.message),
    JSON.stringify(record.data),
    JSON.stringify(record.context),
    JSON.stringify(record.device),
    record.appid ?? "",
    record.auth,
  ];
  return cells.map(csvCell).join(",") + "\r\n";
}

/**
 * Part of the provisional stand-in for the query module (see
 * dashboard/source.ts): the filter type, the parser of the query syntax
 * typed in the search box, and the exact match of one record.
 *
 * Syntax, terms combined with AND: bare words and `"quoted phrases"` (full
 * text, case-insensitive, over level, data, context, device, app id and
 * origin), `field:value` and `field:"a value"` (equality on a dotted path,
 * compared as text: `data.status:42` matches the number 42),
 * `-field:value` (not equal; records without the field pass), `field:*`
 * (present), `-field:*` (missing), `level:a,b` (any of these levels) and
 * `level>=warning` (this standard level or a more severe one; custom levels
 * have no rank and never pass it).
 *
 * @module
 */
import type { LogRecord } from "../db/logs.ts";
import { STANDARD_LEVELS } from "../db/projects.ts";

/** A parsed filter; every part optional; parts combine with AND. */
export interface Filter {
  /** Unix ms, inclusive. */
  since?: number;
  /** Unix ms, exclusive. */
  until?: number;
  /** Any of these levels. */
  levels?: string[];
  /** This standard level or a more severe one. */
  minLevel?: string;
  /** Lower-cased full-text terms; each must match. */
  text?: string[];
  /** Field equality, inequality, presence on dotted paths. */
  fields?: FieldTerm[];
}

/** One field condition of a {@linkcode Filter}. */
export type FieldTerm =
  | { path: string; op: "eq" | "neq"; value: string }
  | { path: string; op: "exists" | "missing" };

/** Thrown by {@linkcode parseQuery}; `column` is 1-based. */
export class QuerySyntaxError extends Error {
  override name = "QuerySyntaxError";
  column: number;
  constructor(message: string, column: number) {
    super(`${message} (column ${column})`);
    this.column = column;
  }
}

const PATH = /^[A-Za-z_$][\w$-]*(?:\.[\w$-]+)*$/;

/** Reads a quoted string starting at `text[at] === '"'`; returns it and the end. */
function readQuoted(text: string, at: number): { value: string; end: number } {
  let value = "";
  for (let i = at + 1; i < text.length; i++) {
    const ch = text[i]!;
    if (ch === "\\" && i + 1 < text.length) {
      value += text[++i];
    } else if (ch === '"') {
      return { value, end: i + 1 };
    } else {
      value += ch;
    }
  }
  throw new QuerySyntaxError(
    `Cannot parse the query: the quote is never closed`,
    at + 1,
  );
}

/**
 * Parses the query syntax into a {@linkcode Filter}.
 *
 * @example
 * ```ts
 * parseQuery('timeout level>=error context.userId:42 -device.os:"iOS 18"');
 * ```
 */
export function parseQuery(text: string): Filter {
  const filter: Filter = {};
  let i = 0;
  while (i < text.length) {
    if (/\s/.test(text[i]!)) {
      i++;
      continue;
    }
    const start = i;
    if (text[i] === '"') {
      const { value, end } = readQuoted(text, i);
      if (value.trim() !== "") {
        (filter.text ??= []).push(value.toLowerCase());
      }
      i = end;
      continue;
    }
    // A word: runs to whitespace, with a quoted value allowed after ":".
    let j = i;
    while (
      j < text.length && !/[\s:"]/.test(text[j]!) && !text.startsWith(">=", j)
    ) j++;
    const head = text.slice(i, j);
    if (text.startsWith(">=", j)) {
      if (head !== "level") {
        throw new QuerySyntaxError(
          `Cannot parse the query: ">=" applies to "level" only`,
          j + 1,
        );
      }
      let k = j + 2;
      while (k < text.length && !/\s/.test(text[k]!)) k++;
      const level = text.slice(j + 2, k);
      if (!(STANDARD_LEVELS as readonly string[]).includes(level)) {
        throw new QuerySyntaxError(
          `Cannot parse the query: expected a standard level after "level>=", not "${level}"`,
          j + 3,
        );
      }
      filter.minLevel = level;
      i = k;
      continue;
    }
    if (text[j] !== ":") {
      if (text[j] === '"') {
        throw new QuerySyntaxError(
          `Cannot parse the query: a quote inside a word`,
          j + 1,
        );
      }
      (filter.text ??= []).push(head.toLowerCase());
      i = j;
      continue;
    }
    const negated = head.startsWith("-");
    const path = negated ? head.slice(1) : head;
    if (!PATH.test(path)) {
      throw new QuerySyntaxError(
        `Cannot parse the query: expected a field name such as "context.userId" before ":"`,
        start + 1,
      );
    }
    let value: string;
    let quoted = false;
    if (text[j + 1] === '"') {
      const read = readQuoted(text, j + 1);
      value = read.value;
      quoted = true;
      i = read.end;
    } else {
      let k = j + 1;
      while (k < text.length && !/\s/.test(text[k]!)) k++;
      value = text.slice(j + 1, k);
      i = k;
    }
    if (value === "" && !quoted) {
      throw new QuerySyntaxError(
        `Cannot parse the query: expected a value after "${head}:"`,
        j + 2,
      );
    }
    if (value === "*" && !quoted) {
      (filter.fields ??= []).push({
        path,
        op: negated ? "missing" : "exists",
      });
    } else if (path === "level" && !negated) {
      const levels = value.split(",").filter((l) => l !== "");
      filter.levels = filter.levels
        ? filter.levels.filter((l) => levels.includes(l))
        : levels;
    } else {
      (filter.fields ??= []).push({ path, op: negated ? "neq" : "eq", value });
    }
  }
  return filter;
}

/** The value at a dotted path of a record, or `undefined`. */
export function fieldValue(record: LogRecord, path: string): unknown {
  let value: unknown = record;
  for (const name of path.split(".")) {
    if (typeof value !== "object" || value === null) return undefined;
    value = (value as Record<string, unknown>)[name];
  }
  return value;
}

/** A field value as the text it is compared as. */
export function fieldText(value: unknown): string {
  return typeof value === "string" ? value : JSON.stringify(value);
}

/**
 * Whether a record matches a filter.
 *
 * @example
 * ```ts
 * matches(record, parseQuery("level:error"));
 * ```
 */
export function matches(record: LogRecord, filter: Filter): boolean {
  if (filter.since !== undefined && record.receivedAt < filter.since) {
    return false;
  }
  if (filter.until !== undefined && record.receivedAt >= filter.until) {
    return false;
  }
  if (filter.levels && !filter.levels.includes(record.level)) return false;
  if (filter.minLevel !== undefined) {
    const ranks = STANDARD_LEVELS as readonly string[];
    if (ranks.indexOf(record.level) < ranks.indexOf(filter.minLevel)) {
      return false;
    }
  }
  if (filter.text && filter.text.length > 0) {
    const { level, data, context, device, appid, origin } = record;
    const haystack = JSON.stringify({
      level,
      data,
      context,
      device,
      appid,
      origin,
    }).toLowerCase();
    if (!filter.text.every((term) => haystack.includes(term))) return false;
  }
  for (const term of filter.fields ?? []) {
    const value = fieldValue(record, term.path);
    switch (term.op) {
      case "exists":
        if (value === undefined) return false;
        break;
      case "missing":
        if (value !== undefined) return false;
        break;
      case "eq":
        if (value === undefined || fieldText(value) !== term.value) {
          return false;
        }
        break;
      case "neq":
        if (value !== undefined && fieldText(value) === term.value) {
          return false;
        }
        break;
    }
  }
  return true;
}

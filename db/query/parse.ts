/**
 * The query syntax for people (docs/query.md#query-syntax), used by
 * `deno task logs ID --query '…'` and the dashboard's search box:
 *
 * | form | meaning |
 * |---|---|
 * | `timeout` | full-text word (see db/storage/text.ts) |
 * | `"payment failed"` | full-text phrase; `\"` and `\\` inside |
 * | `-timeout`, `-"a b"` | no entry with this word or phrase |
 * | `context.userId:user_42` | field equals value (`field:"a b"` when it has spaces) |
 * | `-device.os:iOS` | field absent or not equal |
 * | `context.release:*`, `-appid:*` | field present, absent |
 * | `level:error,critical` | any of these levels |
 * | `level>=warning` | this standard level or a more severe one |
 * | `AND` | ignored: terms always combine with AND |
 *
 * Fields are `level`, `auth`, `origin`, `appid`, `id`, `fingerprint` (of
 * an error group, domain/fingerprint.ts), and paths under
 * `data`, `context` and `device`. A word whose text before `:` names no field
 * is refused unless it is a URL (`https://…`) or a time of day (`12:30`), or
 * uses `=`, `<` or `>` (`a=b`): those are words. Quote it to search for it.
 * Errors are {@linkcode QuerySyntaxError}s naming the 1-based column.
 *
 * @module
 */
import { LEVEL_PATTERN, STANDARD_LEVELS } from "../../domain/entry.ts";
import { type FieldTerm, type Filter, levelRank } from "./filter.ts";
import { parsePipe, type Pipe } from "./pipe.ts";
import { QuerySyntaxError } from "./syntax.ts";

export { QuerySyntaxError };

/**
 * Terms one query holds at most: each is tested against every value of an
 * entry, so that a query's cost per entry is bounded.
 */
export const MAX_TERMS = 64;

const FIELD = /^[A-Za-z_][A-Za-z0-9_]*(?:\.[^\s.:"><=,]+)*/;
const TOP_FIELDS = new Set([
  "level",
  "auth",
  "origin",
  "appid",
  "id",
  "fingerprint",
]);
const ROOTS = new Set(["data", "context", "device"]);

function isSpace(c: string | undefined): boolean {
  return c === " " || c === "\t" || c === "\n" || c === "\r";
}

/** Reads a quoted string starting at `at` (the quote); returns text and end. */
function readQuoted(query: string, at: number): { text: string; end: number } {
  let text = "";
  for (let i = at + 1; i < query.length; i++) {
    const c = query[i]!;
    if (c === "\\" && i + 1 < query.length) {
      text += query[++i];
    } else if (c === '"') {
      if (i + 1 < query.length && !isSpace(query[i + 1])) {
        throw new QuerySyntaxError(
          i + 2,
          "expected a space after the closing quote",
        );
      }
      return { text, end: i + 1 };
    } else {
      text += c;
    }
  }
  throw new QuerySyntaxError(at + 1, "quoted text is not closed");
}

/** Reads up to the next space; a quote inside is refused. */
function readWord(query: string, at: number): { text: string; end: number } {
  let end = at;
  while (end < query.length && !isSpace(query[end])) {
    if (query[end] === '"') {
      throw new QuerySyntaxError(
        end + 1,
        `unexpected quote inside a word (quote the whole term)`,
      );
    }
    end++;
  }
  return { text: query.slice(at, end), end };
}

function checkLevel(level: string, column: number): string {
  if (!LEVEL_PATTERN.test(level)) {
    throw new QuerySyntaxError(
      column,
      `"${level}" is not a level (expected a name such as ${
        STANDARD_LEVELS.join(", ")
      })`,
    );
  }
  return level;
}

/** What the terms read so far add up to. */
interface Terms {
  filter: Filter;
  fields: FieldTerm[];
  text: string[];
  notText: string[];
  levels?: string[];
}

/**
 * Parses the query syntax into a filter. Throws {@linkcode QuerySyntaxError}
 * on malformed input.
 *
 * @example
 * ```ts
 * parseQuery('level>=warning "payment failed" -context.environment:staging');
 * ```
 */
export function parseQuery(query: string): Filter {
  const { filter, pipe } = parseSearch(query);
  if (pipe !== null) {
    throw new QuerySyntaxError(
      pipe.column,
      "an aggregation (| count, | top, | uniq) is not accepted here: only entries are listed",
    );
  }
  return filter;
}

/**
 * Parses a query that may end with an aggregation pipe (`QUERY | count by
 * (time 1h, context.service)`, see db/query/pipe.ts): the filter, and the
 * pipe or `null`. Throws {@linkcode QuerySyntaxError} on malformed input.
 *
 * @example
 * ```ts
 * parseSearch("level>=error | top 10 context.userId").pipe; // { op: "top", n: 10, … }
 * ```
 */
export function parseSearch(
  query: string,
): { filter: Filter; pipe: Pipe | null } {
  const terms: Terms = { filter: {}, fields: [], text: [], notText: [] };
  let at = 0;
  let pipe: Pipe | null = null;
  while (at < query.length) {
    if (query[at] === "|") {
      pipe = parsePipe(query, at);
      break;
    }
    if (isSpace(query[at])) {
      at++;
      continue;
    }
    const start = at;
    at = readTerm(query, at, terms);
    if (
      terms.fields.length + terms.text.length + terms.notText.length > MAX_TERMS
    ) {
      throw new QuerySyntaxError(
        start + 1,
        `more than ${MAX_TERMS} terms: narrow the query`,
      );
    }
  }
  return { filter: termsFilter(terms), pipe };
}

/** The filter the terms read add up to. */
function termsFilter(terms: Terms): Filter {
  const { filter, levels, text, notText, fields } = terms;
  if (levels) filter.levels = levels;
  if (text.length > 0) filter.text = text;
  if (notText.length > 0) filter.notText = notText;
  if (fields.length > 0) filter.fields = fields;
  return filter;
}

/** Reads the term starting at `at` into `terms`; returns where it ends. */
function readTerm(query: string, at: number, terms: Terms): number {
  const start = at;
  const c = query[at]!;
  if (c === "*" && (at + 1 === query.length || isSpace(query[at + 1]))) {
    return at + 1; // every entry: `* | count`
  }
  if (c === "(" || c === ")") {
    throw new QuerySyntaxError(at + 1, "parentheses are not supported");
  }
  const keywordEnd = readKeyword(query, at);
  if (keywordEnd !== undefined) return keywordEnd;
  let negated = false;
  if (c === "-") {
    negated = true;
    at++;
    if (at >= query.length || isSpace(query[at])) {
      throw new QuerySyntaxError(start + 1, "expected a term after -");
    }
  }
  if (query[at] === '"') {
    const { text: phrase, end } = readQuoted(query, at);
    if (phrase.trim() === "") {
      throw new QuerySyntaxError(at + 1, "the quoted phrase is empty");
    }
    (negated ? terms.notText : terms.text).push(phrase.toLowerCase());
    return end;
  }
  const field = FIELD.exec(query.slice(at))?.[0];
  const after = field === undefined ? "" : query.slice(at + field.length);
  const operator = /^(?::|>=|<=|>|<|=)/.exec(after)?.[0];
  const badPath = field !== undefined && after.startsWith(".") &&
    ROOTS.has(field.split(".")[0]!) && /^\.\S*:/.test(after);
  if (!badPath && (field === undefined || operator === undefined)) {
    return readTextWord(query, at, negated, terms);
  }
  if (badPath || operator === undefined) {
    throw new QuerySyntaxError(
      at + field.length + 1,
      `expected a name after "${field}."`,
    );
  }
  const root = field.split(".")[0]!;
  if (!TOP_FIELDS.has(field) && !ROOTS.has(root)) {
    // A URL, a time of day or "a=b" is a word, not a field.
    if (operator !== ":" || /^:(\/\/|\d)/.test(after)) {
      return readTextWord(query, at, negated, terms);
    }
    throw new QuerySyntaxError(
      at + 1,
      `unknown field "${field}" (expected level, auth, origin, appid, id, or a path under data., context. or device; quote text that contains ":")`,
    );
  }
  const term = { field, negated, valueAt: at + field.length + operator.length };
  if (operator === ":") return readFieldValue(query, term, terms);
  if (operator === "=") {
    throw new QuerySyntaxError(
      at + field.length + 1,
      `expected "${field}:VALUE" ("=" does not compare)`,
    );
  }
  if (field !== "level" || operator !== ">=") {
    throw new QuerySyntaxError(
      at + field.length + 1,
      `"${operator}" is not supported here: only level>=LEVEL compares`,
    );
  }
  if (negated) {
    throw new QuerySyntaxError(start + 1, "level>= cannot be negated");
  }
  return readMinLevel(query, term.valueAt, terms.filter);
}

/**
 * Reads a bare `AND` (ignored: returns its end), refuses `OR` and `NOT`;
 * `undefined` when the term at `at` is none of them.
 */
function readKeyword(query: string, at: number): number | undefined {
  const bare = /^[A-Z]+/.exec(query.slice(at, at + 4))?.[0];
  const bareEnd = at + (bare?.length ?? 0);
  if (!bare || (bareEnd !== query.length && !isSpace(query[bareEnd]))) {
    return undefined;
  }
  if (bare === "AND") return at + 3;
  if (bare === "OR" || bare === "NOT") {
    throw new QuerySyntaxError(
      at + 1,
      bare === "OR"
        ? "OR is not supported: terms combine with AND"
        : "NOT is not supported: write -term",
    );
  }
  return undefined;
}

/** Reads a full-text word; returns its end. */
function readTextWord(
  query: string,
  at: number,
  negated: boolean,
  terms: Terms,
): number {
  const { text: word, end } = readWord(query, at);
  (negated ? terms.notText : terms.text).push(word.toLowerCase());
  return end;
}

/** Reads the level after `level>=` at `valueAt`; the most severe one wins. */
function readMinLevel(query: string, valueAt: number, filter: Filter): number {
  const { text: level, end } = readWord(query, valueAt);
  if (!(STANDARD_LEVELS as readonly string[]).includes(level)) {
    throw new QuerySyntaxError(
      valueAt + 1,
      `expected one of ${STANDARD_LEVELS.join(", ")} after level>=`,
    );
  }
  if (
    filter.minLevel === undefined ||
    levelRank(level) > levelRank(filter.minLevel)
  ) filter.minLevel = level;
  return end;
}

/**
 * Reads the value of `field:` at `valueAt`: `*` for presence, a list of
 * levels (which narrow each other), or a value to equal; returns its end.
 */
function readFieldValue(
  query: string,
  term: { field: string; negated: boolean; valueAt: number },
  terms: Terms,
): number {
  const { field, negated, valueAt } = term;
  if (valueAt >= query.length || isSpace(query[valueAt])) {
    throw new QuerySyntaxError(
      valueAt + 1,
      `expected a value after "${field}:" (use ${field}:* for presence)`,
    );
  }
  const quoted = query[valueAt] === '"';
  const { text: value, end } = quoted
    ? readQuoted(query, valueAt)
    : readWord(query, valueAt);
  if (!quoted && value === "*") {
    terms.fields.push({ path: field, op: negated ? "missing" : "exists" });
  } else if (field === "level" && !quoted && !negated) {
    let column = valueAt + 1;
    const list = value.split(",").map((level) => {
      const checked = checkLevel(level, column);
      column += level.length + 1;
      return checked;
    });
    terms.levels = terms.levels
      ? terms.levels.filter((l) => list.includes(l))
      : list;
  } else if (field === "level") {
    let column = valueAt + 1;
    for (const level of quoted ? [value] : value.split(",")) {
      terms.fields.push({
        path: "level",
        op: negated ? "neq" : "eq",
        value: checkLevel(level, column),
      });
      column += level.length + 1;
    }
  } else {
    terms.fields.push({ path: field, op: negated ? "neq" : "eq", value });
  }
  return end;
}

/**
 * What full text and field values mean, in one place, so that the exact
 * matcher and the Bloom filters of chunk summaries agree (see
 * docs/query.md#full-text).
 *
 * - The searchable values of an entry are every string and every finite
 *   number (as its decimal text) in `data`, `context` and `device`, and its
 *   `origin` and `appid`. Member names, `level` and `auth` are not text.
 * - A word character is a letter, a digit or `_`; a token is a maximal run
 *   of them in a lower-cased value.
 * - A term (a bare word or a quoted phrase) matches a value when the
 *   lower-cased value contains the lower-cased term at word boundaries: not
 *   preceded by a word character when the term starts with one, not followed
 *   by one when it ends with one. `error` matches "Error: x" and "db error",
 *   not "errors"; `"payment failed"` matches "Payment failed twice". Every
 *   token of a matching term is then a whole token of the value, which is
 *   what lets a Bloom filter of tokens rule a chunk out.
 * - A field pair is `path=value` for every scalar at most
 *   {@linkcode PAIR_MAX_DEPTH} segments deep under `data`, `context` and
 *   `device` (array items by index), and `level`, `auth`, `origin`, `appid`,
 *   when its text (see {@linkcode fieldText}) is at most
 *   {@linkcode PAIR_MAX_CHARS} characters.
 *
 * @module
 */

/** Longest value text recorded as a field pair. */
import type { LogRecord } from "../../domain/entry.ts";
export const PAIR_MAX_CHARS = 32;
/** Deepest path (segments, root included) recorded as a field pair. */
export const PAIR_MAX_DEPTH = 8;
/** Objects deep from which a value is no longer searchable text. */
export const TEXT_MAX_DEPTH = 64;
/** Roots whose values are searchable text. */
export const TEXT_ROOTS: ReadonlySet<string> = new Set([
  "data",
  "context",
  "device",
  "origin",
  "appid",
]);
/** Roots whose field pairs are recorded. */
export const PAIR_ROOTS: ReadonlySet<string> = new Set([
  ...TEXT_ROOTS,
  "level",
  "auth",
]);

const WORD = /^[\p{L}\p{N}_]$/u;

/** Whether the ASCII unit `c` (below 128) is a word character. */
export function isAsciiWord(c: number): boolean {
  return (c >= 97 && c <= 122) || (c >= 48 && c <= 57) ||
    (c >= 65 && c <= 90) || c === 95;
}

/** Whether the code point `c` is a word character. */
function isWordCodePoint(c: number): boolean {
  return c < 128 ? isAsciiWord(c) : WORD.test(String.fromCodePoint(c));
}

/** Whether the character starting at `i` is a word character. */
function wordAt(text: string, i: number): boolean {
  return i >= 0 && i < text.length && isWordCodePoint(text.codePointAt(i)!);
}

/** Whether the character ending just before `i` is a word character. */
function wordBefore(text: string, i: number): boolean {
  if (i <= 0) return false;
  const low = text.charCodeAt(i - 1);
  const start = low >= 0xdc00 && low <= 0xdfff && i >= 2 ? i - 2 : i - 1;
  return isWordCodePoint(text.codePointAt(start)!);
}

/**
 * Calls `fn` with every token of `lower` (an already lower-cased text).
 *
 * @example
 * ```ts
 * forEachToken("get /api/v1 answered 502", (t) => console.log(t)); // get, api, v1, answered, 502
 * ```
 */
export function forEachToken(lower: string, fn: (token: string) => void) {
  forEachTokenRange(lower, (start, end) => fn(lower.slice(start, end)));
}

/**
 * Calls `fn` with the start and end of every token of `lower`: the tokens
 * of {@linkcode forEachToken} without making a string of each.
 */
export function forEachTokenRange(
  lower: string,
  fn: (start: number, end: number) => void,
) {
  let start = -1;
  for (let i = 0; i < lower.length; i++) {
    const c = lower.charCodeAt(i);
    let word: boolean;
    let width = 1;
    if (c < 128) word = isAsciiWord(c);
    else {
      const cp = lower.codePointAt(i)!;
      if (cp > 0xffff) width = 2;
      word = isWordCodePoint(cp);
    }
    if (word) {
      if (start < 0) start = i;
    } else if (start >= 0) {
      fn(start, i);
      start = -1;
    }
    i += width - 1;
  }
  if (start >= 0) fn(start, lower.length);
}

/** The tokens of a term (lower-cased first). */
export function termTokens(term: string): string[] {
  const out: string[] = [];
  forEachToken(term.toLowerCase(), (t) => out.push(t));
  return out;
}

/**
 * Whether `lowerValue` contains `lowerTerm` at word boundaries (both
 * lower-cased already).
 *
 * @example
 * ```ts
 * containsTerm("db error: timeout", "error"); // true
 * containsTerm("3 errors", "error"); // false
 * ```
 */
export function containsTerm(lowerValue: string, lowerTerm: string): boolean {
  if (lowerTerm === "") return true;
  const startsWord = wordAt(lowerTerm, 0);
  const endsWord = wordBefore(lowerTerm, lowerTerm.length);
  for (
    let at = lowerValue.indexOf(lowerTerm);
    at >= 0;
    at = lowerValue.indexOf(lowerTerm, at + 1)
  ) {
    if (startsWord && wordBefore(lowerValue, at)) continue;
    if (endsWord && wordAt(lowerValue, at + lowerTerm.length)) continue;
    return true;
  }
  return false;
}

function walkText(value: unknown, fn: (text: string) => void, depth: number) {
  if (typeof value === "string") fn(value);
  else if (typeof value === "number") {
    if (Number.isFinite(value)) fn(String(value));
  } else if (
    typeof value === "object" && value !== null && depth < TEXT_MAX_DEPTH
  ) {
    for (const item of Object.values(value)) walkText(item, fn, depth + 1);
  }
}

/** Calls `fn` with every searchable value of an entry. */
export function forEachText(record: LogRecord, fn: (text: string) => void) {
  walkText(record.data, fn, 0);
  walkText(record.context, fn, 0);
  walkText(record.device, fn, 0);
  if (record.origin !== undefined) fn(record.origin);
  if (record.appid !== undefined) fn(record.appid);
}

/**
 * The text a field's value compares as: strings as they are, anything else
 * as its JSON (`42`, `true`, `null`, `{"a":1}`); `undefined` when absent.
 */
export function fieldText(value: unknown): string | undefined {
  if (value === undefined) return undefined;
  return typeof value === "string" ? value : JSON.stringify(value);
}

/** The value at a dotted path of an entry (`context.userId`), if any. */
export function resolvePath(record: LogRecord, path: string): unknown {
  let value: unknown = record;
  for (const name of path.split(".")) {
    if (typeof value !== "object" || value === null) return undefined;
    if (!Object.hasOwn(value, name)) return undefined;
    // An array's `length` is no member: only items are reached by index.
    if (Array.isArray(value) && !/^\d+$/.test(name)) return undefined;
    value = (value as Record<string, unknown>)[name];
  }
  return value;
}

function walkPairs(
  value: unknown,
  path: string,
  depth: number,
  fn: (path: string, text: string) => void,
) {
  if (typeof value === "object" && value !== null) {
    if (depth >= PAIR_MAX_DEPTH) return;
    for (const [name, item] of Object.entries(value)) {
      walkPairs(item, `${path}.${name}`, depth + 1, fn);
    }
    return;
  }
  const text = fieldText(value);
  if (text !== undefined && text.length <= PAIR_MAX_CHARS) fn(path, text);
}

/**
 * Calls `add` with every field pair (`path=value`) of an entry, in the order
 * the Bloom filters' members are added (db/storage/indexer.ts).
 */
export function forEachPair(record: LogRecord, add: (pair: string) => void) {
  const fn = (path: string, text: string) => add(`${path}=${text}`);
  walkPairs(record.level, "level", 1, fn);
  walkPairs(record.auth, "auth", 1, fn);
  if (record.origin !== undefined) walkPairs(record.origin, "origin", 1, fn);
  if (record.appid !== undefined) walkPairs(record.appid, "appid", 1, fn);
  walkPairs(record.data, "data", 1, fn);
  walkPairs(record.context, "context", 1, fn);
  walkPairs(record.device, "device", 1, fn);
}

/**
 * Whether a Bloom filter of field pairs can rule out `path=value`: the path
 * is under a recorded root and shallow enough, the value short enough, and
 * not the JSON of an object or array (those are not recorded).
 */
export function pairIndexed(path: string, value: string): boolean {
  const segments = path.split(".");
  return PAIR_ROOTS.has(segments[0]!) && segments.length <= PAIR_MAX_DEPTH &&
    value.length <= PAIR_MAX_CHARS && !/^[[{]/.test(value);
}

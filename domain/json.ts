/**
 * One pass over a JSON text that `JSON.parse` already accepted, for what
 * `JSON.parse` does not tell: repeated member names at the top level, the
 * nesting depth, and the client's own text of the top-level members (kept for
 * signature verification, docs/design.md#signatures).
 *
 * @module
 */

/** What {@linkcode scanJson} found. */
export interface Scan {
  /** A top-level member name that appears twice, if any. */
  duplicate?: string;
  /** The top-level member in which nesting first passes the limit, if any. */
  tooDeepIn?: string;
  /**
   * `[start, end)` of each top-level member's value text, when asked for
   * (only signature checks need them).
   */
  spans?: Map<string, [number, number]>;
}

const QUOTE = 34, BACKSLASH = 92, COMMA = 44, COLON = 58;
const OPEN_BRACE = 123,
  CLOSE_BRACE = 125,
  OPEN_BRACKET = 91,
  CLOSE_BRACKET = 93;
/** Names compared one by one before a set takes over (an entry has ~6). */
const FEW_NAMES = 16;

/**
 * Scans `text`, a valid JSON object, with nesting limited to `maxDepth` (the
 * top-level object is depth 1); with `withSpans`, also records where each
 * top-level member's value is.
 *
 * @example
 * ```ts
 * scanJson('{"a":1,"a":2}', 32).duplicate; // "a"
 * scanJson('{"a":[1]}', 32, true).spans?.get("a"); // [5, 8]
 * ```
 */
export function scanJson(
  text: string,
  maxDepth: number,
  withSpans = false,
): Scan {
  const spans = withSpans ? new Map<string, [number, number]>() : undefined;
  // Allocation-free for the few names of an entry; a set past a few, so
  // that a body of thousands of names is not compared pairwise.
  const names: string[] = [];
  let many: Set<string> | undefined;
  let depth = 0;
  let expectKey = false;
  let key = "";
  let valueStart = -1;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) {
      // Jump to the closing quote natively: most of a body is string text.
      const start = i;
      i = closingQuote(text, i);
      if (depth === 1 && expectKey) {
        const raw = text.slice(start + 1, i);
        key = raw.includes("\\") ? JSON.parse(text.slice(start, i + 1)) : raw;
        if (many ? many.has(key) : names.includes(key)) {
          return { duplicate: key, spans };
        }
        if (many) many.add(key);
        else if (names.push(key) > FEW_NAMES) many = new Set(names);
        expectKey = false;
      }
    } else if (c === OPEN_BRACE || c === OPEN_BRACKET) {
      depth++;
      if (depth > maxDepth) return { tooDeepIn: key, spans };
      if (depth === 1) expectKey = true;
    } else if (c === CLOSE_BRACE || c === CLOSE_BRACKET) {
      if (depth === 1 && valueStart >= 0) {
        spans?.set(key, [valueStart, i]);
        valueStart = -1;
      }
      depth--;
    } else if (depth === 1) {
      if (c === COMMA) {
        if (valueStart >= 0) spans?.set(key, [valueStart, i]);
        valueStart = -1;
        expectKey = true;
      } else if (c === COLON) valueStart = i + 1;
    }
  }
  return { spans };
}

/**
 * Removes the insignificant whitespace of a JSON text, leaving strings as the
 * client wrote them (escapes included).
 */
export function minifyJson(text: string): string {
  let out = "";
  let from = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) i = closingQuote(text, i);
    else if (c === 32 || c === 9 || c === 10 || c === 13) {
      out += text.slice(from, i);
      from = i + 1;
    }
  }
  return out + text.slice(from);
}

/** Index of the quote closing the string that opens at `open`. */
function closingQuote(text: string, open: number): number {
  let end = text.indexOf('"', open + 1);
  for (;;) {
    if (end < 0) return text.length;
    let backslashes = 0;
    while (text.charCodeAt(end - 1 - backslashes) === BACKSLASH) backslashes++;
    if (backslashes % 2 === 0) return end;
    end = text.indexOf('"', end + 1);
  }
}

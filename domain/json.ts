/**
 * One pass over a JSON text that `JSON.parse` already accepted, for what
 * `JSON.parse` does not tell: repeated member names at the top level, the
 * nesting depth, and the client's own text of the top-level members (kept for
 * signature verification, docs/design.md#signatures).
 *
 * @module
 */

/** A value that would not be stored as it was sent, and why. */
export interface Inexact {
  /** The member's path, names and indexes joined by dots (`data.a.0`). */
  path: string;
  message: string;
}

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
  /**
   * Values inside the members checked for exactness that a parse and a
   * write would change (a repeated name included) (at most {@linkcode MAX_INEXACT}), if any.
   */
  inexact?: Inexact[];
}

/** Inexact values reported at most, so that an answer stays small. */
export const MAX_INEXACT = 20;

const QUOTE = 34, BACKSLASH = 92, COMMA = 44, COLON = 58, MINUS = 45;
const DOT = 46, LOWER_E = 101, UPPER_E = 69, ZERO = 48, NINE = 57, PLUS = 43;
const OPEN_BRACE = 123,
  CLOSE_BRACE = 125,
  OPEN_BRACKET = 91,
  CLOSE_BRACKET = 93;
/** Names compared one by one before a set takes over (an entry has ~6). */
const FEW_NAMES = 16;
/**
 * Digits a number without an exponent may have and always be read exactly:
 * a double holds any decimal of 15 significant digits, and 15 digits keep
 * an integer within ±2^53.
 */
const EXACT_DIGITS = 15;

/**
 * Scans `text`, a valid JSON object, with nesting limited to `maxDepth` (the
 * top-level object is depth 1); with `withSpans`, also records where each
 * top-level member's value is. Inside the top-level members named in
 * `exactIn`, it also finds what `JSON.parse` and `JSON.stringify` would not
 * keep as sent: a member named `__proto__` or one repeated in its object,
 * an integer beyond ±(2^53 - 1),
 * a number that overflows a double, and any number whose decimal value a
 * double cannot hold exactly (`1.0`, `1e2` or `0.1` keep their value).
 *
 * @example
 * ```ts
 * scanJson('{"a":1,"a":2}', 32).duplicate; // "a"
 * scanJson('{"a":[1]}', 32, true).spans?.get("a"); // [5, 8]
 * scanJson('{"data":{"n":1e999}}', 32, false, new Set(["data"])).inexact;
 * // [{ path: "data.n", message: "…" }]
 * ```
 */
export function scanJson(
  text: string,
  maxDepth: number,
  withSpans = false,
  exactIn?: ReadonlySet<string>,
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
  let checking = false; // inside a top-level member named in `exactIn`
  const checked: Checked = {
    isArray: [],
    nameAt: [],
    indexAt: [],
    namesAt: [],
  };
  const { isArray, indexAt, namesAt } = checked;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) {
      // Jump to the closing quote natively: most of a body is string text.
      const start = i;
      i = closingQuote(text, i);
      if (!expectKey) continue;
      expectKey = false;
      if (depth === 1) {
        key = decodeName(text, start, i);
        if (many ? many.has(key) : names.includes(key)) {
          return { duplicate: key, spans };
        }
        if (many) many.add(key);
        else if (names.push(key) > FEW_NAMES) many = new Set(names);
        checking = exactIn?.has(key) ?? false;
      } else if (checking) checkName(text, start, i, key, checked, depth);
    } else if (c === OPEN_BRACE || c === OPEN_BRACKET) {
      depth++;
      if (depth > maxDepth) return { tooDeepIn: key, spans };
      expectKey = c === OPEN_BRACE;
      if (checking) {
        isArray[depth] = c === OPEN_BRACKET;
        indexAt[depth] = 0;
        if (c === OPEN_BRACE) namesAt[depth] = [];
      }
    } else if (c === CLOSE_BRACE || c === CLOSE_BRACKET) {
      if (depth === 1 && valueStart >= 0) {
        spans?.set(key, [valueStart, i]);
        valueStart = -1;
      }
      depth--;
      expectKey = false;
    } else if (depth === 1) {
      if (c === COMMA) {
        if (valueStart >= 0) spans?.set(key, [valueStart, i]);
        valueStart = -1;
        expectKey = true;
        checking = false;
      } else if (c === COLON) valueStart = i + 1;
    } else if (!checking) continue;
    else if (c === COMMA) {
      if (isArray[depth]) indexAt[depth]!++;
      else expectKey = true;
    } else if (c === MINUS || (c >= ZERO && c <= NINE)) {
      i = checkNumber(text, i, key, checked, depth) - 1;
    }
  }
  const { inexact } = checked;
  return inexact ? { spans, inexact } : { spans };
}

/**
 * Checks the number that starts at `start` inside the checked member `key`
 * and reports it when a double would not hold it; the index past it.
 */
function checkNumber(
  text: string,
  start: number,
  key: string,
  checked: Checked,
  depth: number,
): number {
  const end = numberEnd(text, start);
  const why = end < 0 && !full(checked)
    ? numberProblem(text.slice(start, -end))
    : null;
  if (why !== null) {
    const path = pathTo(text, key, checked, depth);
    report(checked, path, `"${path}" ${why}: send it as a string`);
  }
  return Math.abs(end);
}

/**
 * Where a scan is below the top level of a member checked for exactness:
 * per depth, whether it is an array, and the last name's text or the index
 * reached, so that a finding can name its path; the names of each object
 * open, to find a repeated one (`JSON.parse` would keep only its last
 * value); and what was found.
 */
interface Checked {
  isArray: boolean[];
  nameAt: number[];
  indexAt: number[];
  namesAt: (string[] | Set<string>)[];
  inexact?: Inexact[];
}

/**
 * Checks the name between `start` and `end` (its quotes) of an object at
 * `depth` inside the checked member `key`: a name `JSON.parse` drops
 * (`__proto__`) or one repeated in its object is reported with its path.
 */
function checkName(
  text: string,
  start: number,
  end: number,
  key: string,
  checked: Checked,
  depth: number,
): void {
  checked.nameAt[depth] = start;
  const name = decodeName(text, start, end);
  // Past the findings listed, none is described again: a path costs its
  // names' length, which a sender could repeat thousands of times.
  if (full(checked)) return;
  if (name === "__proto__") {
    const path = pathTo(text, key, checked, depth - 1, name);
    report(
      checked,
      path,
      `"${path}" cannot be stored: ` +
        `a member named "__proto__" is dropped by JavaScript; rename it`,
    );
  }
  const seen = checked.namesAt[depth]!;
  if (Array.isArray(seen) ? seen.includes(name) : seen.has(name)) {
    const path = pathTo(text, key, checked, depth - 1, name);
    report(
      checked,
      path,
      `"${path}" appears more than once in its object: ` +
        `only one value would be kept; send each name once`,
    );
  } else if (Array.isArray(seen)) {
    if (seen.push(name) > FEW_NAMES) checked.namesAt[depth] = new Set(seen);
  } else seen.add(name);
}

/** Whether {@linkcode MAX_INEXACT} findings are listed already. */
function full(checked: Checked): boolean {
  return (checked.inexact?.length ?? 0) >= MAX_INEXACT;
}

/** Records a finding, while fewer than {@linkcode MAX_INEXACT} are. */
function report(checked: Checked, path: string, message: string): void {
  checked.inexact ??= [];
  if (checked.inexact.length < MAX_INEXACT) {
    checked.inexact.push({ path, message });
  }
}

/**
 * The path inside the top-level member `key` down to depth `until`, then
 * `name` if given.
 */
function pathTo(
  text: string,
  key: string,
  checked: Checked,
  until: number,
  name?: string,
): string {
  const parts = [key];
  for (let d = 2; d <= until; d++) {
    parts.push(
      checked.isArray[d]
        ? String(checked.indexAt[d])
        : readName(text, checked.nameAt[d]!),
    );
  }
  if (name !== undefined) parts.push(name);
  return parts.join(".");
}

/** The name whose text opens with the quote at `open`, decoded. */
function readName(text: string, open: number): string {
  return decodeName(text, open, closingQuote(text, open));
}

/**
 * The string between the quotes at `open` and `close`, decoded; its text as
 * it is when it has no escape, which is almost always.
 */
function decodeName(text: string, open: number, close: number): string {
  const raw = text.slice(open + 1, close);
  return raw.includes("\\") ? JSON.parse(text.slice(open, close + 1)) : raw;
}

/**
 * Index just past the number that starts at `start`, negated when a double
 * may not hold the number exactly (more than {@linkcode EXACT_DIGITS} digits,
 * or an exponent): one pass over a number, which the common ones need only.
 */
function numberEnd(text: string, start: number): number {
  let digits = 0;
  let exponent = false;
  let i = start;
  for (; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c >= ZERO && c <= NINE) digits++;
    else if (c === LOWER_E || c === UPPER_E) exponent = true;
    else if (c !== DOT && c !== MINUS && c !== PLUS) break;
  }
  return exponent || digits > EXACT_DIGITS ? -i : i;
}

/**
 * Why the number `token` would not be stored as sent, or `null` when a
 * double holds its value exactly.
 */
function numberProblem(token: string): string | null {
  const value = Number(token);
  if (!Number.isFinite(value)) {
    return "is a number too large for a 64-bit float";
  }
  if (!/[.eE]/.test(token) && !Number.isSafeInteger(value)) {
    return "is an integer beyond ±(2^53 - 1), which a JSON number cannot carry exactly";
  }
  if (decimalValue(token) !== decimalValue(String(value))) {
    return "is a number that a 64-bit float cannot hold exactly";
  }
  return null;
}

/**
 * The value of a decimal number text as significant digits and a power of
 * ten (`"-1.50e3"` → `"-15e2"`, every zero `"0"`), so that two texts of one
 * value compare equal.
 */
function decimalValue(number: string): string {
  let text = number;
  const negative = text.startsWith("-");
  if (negative) text = text.slice(1);
  let exponent = 0;
  const e = text.search(/[eE]/);
  if (e >= 0) {
    exponent = Number(text.slice(e + 1));
    text = text.slice(0, e);
  }
  const dot = text.indexOf(".");
  if (dot >= 0) {
    exponent -= text.length - dot - 1;
    text = text.slice(0, dot) + text.slice(dot + 1);
  }
  // Counted, not matched: a regex's `0+$` backtracks over every run of
  // zeros that a later digit ends, quadratic in a sender's number.
  let first = 0;
  while (text.charCodeAt(first) === ZERO) first++;
  let end = text.length;
  while (end > first && text.charCodeAt(end - 1) === ZERO) end--;
  if (end === first) return "0";
  const trailing = text.length - end;
  return `${negative ? "-" : ""}${text.slice(first, end)}e${
    exponent + trailing
  }`;
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

/**
 * Detectors of sensitive values inside strings, for scrubbing
 * (docs/privacy.md): card numbers (Luhn-valid), email addresses, IPv4 and
 * IPv6 addresses, bearer and JWT tokens, IBANs (mod-97-valid), and a
 * project's own regular expressions, whose cost is bounded before they are
 * saved ({@linkcode validatePattern}). Each detector has a cheap trigger, a
 * test on the entry's JSON text that every string it would match passes, so
 * that most entries are never parsed. Imports nothing.
 *
 * @module
 */

/** The detectors a rule may name. */
export const DETECTORS = ["email", "ip", "token", "iban", "card"] as const;

/** One of {@linkcode DETECTORS}. */
export type DetectorName = typeof DETECTORS[number];

/** Longest custom pattern, in characters. */
export const MAX_PATTERN_CHARS = 200;
/** Unbounded quantifiers (`*`, `+`, `{n,}`) a custom pattern holds at most. */
export const MAX_UNBOUNDED_QUANTIFIERS = 1;
/**
 * Ways a custom pattern may try to match at one place, at most: the product
 * of its quantifiers' ranges (an unbounded one counting as a window's
 * length, `?` as 2, `{2,5}` as 4) and of its alternatives. Adjacent bounded
 * quantifiers backtrack as that product (`a{0,30}a{0,30}a{0,30}b` took 324 ms
 * over one window of 256 characters); at this bound the worst measured took
 * 2.3 ms.
 */
export const MAX_PATTERN_WAYS = 1024;
/**
 * Characters of a string a custom pattern runs over at once: a longer
 * string is searched in windows of this size, each overlapping the previous
 * by {@linkcode PATTERN_OVERLAP_CHARS}, so the cost of one pattern grows
 * linearly with the string whatever the pattern does inside a window.
 */
export const PATTERN_WINDOW_CHARS = 256;
/** Overlap of two windows: the longest match found across a window's edge. */
export const PATTERN_OVERLAP_CHARS = 64;

/** A match inside a string: `[start, end)`. */
export type Span = [number, number];

/** Finds the spans a detector matches in `text`. */
export type Finder = (text: string) => Span[] | null;

/** Whether the digits of `digits` pass the Luhn check. */
export function luhnValid(digits: string): boolean {
  let sum = 0;
  for (let i = digits.length - 1, odd = false; i >= 0; i--, odd = !odd) {
    let d = digits.charCodeAt(i) - 48;
    if (odd) d = d * 2 > 9 ? d * 2 - 9 : d * 2;
    sum += d;
  }
  return sum % 10 === 0;
}

/** 13 to 19 digits, each pair at most one space or dash apart. */
const CARD = /(?<![0-9])[0-9](?:[ -]?[0-9]){12,18}(?![0-9])/g;
/** A run of 13 characters of digits, spaces and dashes: the card trigger. */
const CARD_TRIGGER = /[0-9][0-9 -]{11,}[0-9]/;

/** Whether `text` holds at least `n` digits: a card's first, cheap test. */
function hasDigits(text: string, n: number): boolean {
  for (let i = 0; i < text.length && text.length - i >= n; i++) {
    const c = text.charCodeAt(i);
    if (c >= 48 && c <= 57 && --n === 0) return true;
  }
  return false;
}

function findCards(text: string): Span[] {
  const spans: Span[] = [];
  if (!hasDigits(text, 13)) return spans;
  for (const m of text.matchAll(CARD)) {
    const digits = m[0].replace(/[ -]/g, "");
    if (luhnValid(digits)) spans.push([m.index, m.index + m[0].length]);
  }
  return spans;
}

const LOCAL = /[A-Za-z0-9._%+-]/;
const DOMAIN = /[A-Za-z0-9.-]/;

/** Email addresses, found around each `@` in linear time. */
function findEmails(text: string): Span[] {
  const spans: Span[] = [];
  let from = 0;
  for (let at = text.indexOf("@"); at >= 0; at = text.indexOf("@", at + 1)) {
    let start = at;
    while (start > from && LOCAL.test(text[start - 1]!)) start--;
    let end = at + 1;
    while (end < text.length && DOMAIN.test(text[end]!)) end++;
    while (end > at + 1 && text[end - 1] === ".") end--;
    const domain = text.slice(at + 1, end);
    if (
      start < at &&
      /^[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}$/.test(domain)
    ) {
      spans.push([start, end]);
      from = end;
    }
  }
  return spans;
}

const OCTET = "(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])";
const IPV4 = new RegExp(
  `(?<![0-9.])${OCTET}(?:\\.${OCTET}){3}(?![0-9]|\\.[0-9])`,
  "g",
);
const IPV6 =
  /(?<![0-9A-Fa-f:])(?:[0-9A-Fa-f]{0,4}:){2,7}(?:[0-9A-Fa-f]{1,4}|:)?(?:%[0-9A-Za-z]{1,16})?(?![0-9A-Fa-f:])/g;

/** Four dotted numbers: versions such as `2026.8.0` do not pass. */
const IPV4_TRIGGER = /[0-9]\.[0-9]{1,3}\.[0-9]{1,3}\.[0-9]/;

function findIps(text: string): Span[] {
  const spans: Span[] = [];
  for (const m of text.matchAll(IPV4)) {
    spans.push([m.index, m.index + m[0].length]);
  }
  if (text.includes(":")) {
    for (const m of text.matchAll(IPV6)) {
      if (validIpv6(m[0])) spans.push([m.index, m.index + m[0].length]);
    }
  }
  return spans;
}

function validIpv6(candidate: string): boolean {
  const address = candidate.replace(/%.*$/, "");
  if (!address.includes("::") && address.split(":").length !== 8) return false;
  try {
    new URL(`http://[${address}]/`);
    return true;
  } catch {
    return false;
  }
}

const BEARER = /\bbearer\s+[A-Za-z0-9\-._~+/]{8,}=*/gi;
/**
 * A JWT: it starts where no base64url character or dot stands before it, so
 * that a long run of them is tried once, not from each of its `eyJ` (which
 * took seconds over 64 KB of `eyJ-` repeated).
 */
const JWT =
  /(?<![A-Za-z0-9_.-])eyJ[A-Za-z0-9_-]{4,}\.eyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*/g;

function findTokens(text: string): Span[] {
  const spans: Span[] = [];
  for (const re of [BEARER, JWT]) {
    for (const m of text.matchAll(re)) {
      spans.push([m.index, m.index + m[0].length]);
    }
  }
  return spans;
}

/** Country code, check digits, then 11 to 30 letters or digits, grouped or not. */
const IBAN =
  /(?<![A-Za-z0-9])[A-Z]{2}[0-9]{2}(?: ?[A-Z0-9]){11,30}(?![A-Za-z0-9])/g;

/** Whether an IBAN (spaces removed) passes the mod-97 check. */
export function ibanValid(iban: string): boolean {
  const moved = iban.slice(4) + iban.slice(0, 4);
  let rest = 0;
  for (const c of moved) {
    const code = c.charCodeAt(0);
    const value = code >= 65 ? String(code - 55) : c;
    for (const d of value) rest = (rest * 10 + Number(d)) % 97;
  }
  return rest === 1;
}

function findIbans(text: string): Span[] {
  const spans: Span[] = [];
  for (const m of text.matchAll(IBAN)) {
    if (ibanValid(m[0].replaceAll(" ", ""))) {
      spans.push([m.index, m.index + m[0].length]);
    }
  }
  return spans;
}

/** A detector: its finder and the trigger its matches pass on JSON text. */
export interface Detector {
  find: Finder;
  /** A cheap test on the entry's JSON text; `false` means no match inside. */
  trigger: (text: string) => boolean;
}

/** The built-in detectors by name. */
export const DETECTOR_TABLE: Record<DetectorName, Detector> = {
  card: { find: findCards, trigger: (t) => CARD_TRIGGER.test(t) },
  email: { find: findEmails, trigger: (t) => t.includes("@") },
  ip: {
    find: findIps,
    trigger: (t) => IPV4_TRIGGER.test(t) || /:[0-9A-Fa-f]*:/.test(t),
  },
  token: { find: findTokens, trigger: (t) => /bearer|eyJ/i.test(t) },
  iban: { find: findIbans, trigger: (t) => /[A-Z]{2}[0-9]{2}/.test(t) },
};

/** Thrown when a custom pattern is refused. */
export class PatternError extends Error {
  override name = "PatternError";
}

/**
 * Checks that a custom pattern compiles and has a bounded cost: at most
 * {@linkcode MAX_PATTERN_CHARS} characters, no backreference, no lookaround,
 * no quantified group that holds a quantifier or an alternation (the shapes
 * that backtrack exponentially, such as `(a+)+` and `(a|aa)*`), and at most
 * {@linkcode MAX_UNBOUNDED_QUANTIFIERS} unbounded quantifiers and
 * {@linkcode MAX_PATTERN_WAYS} ways to match at one place (polynomial
 * backtracking: the cost over a window grows as that product, and the
 * windows of {@linkcode patternFinder}, 256 characters, keep it linear in
 * the string).
 * Returns the compiled expression (global, case-sensitive).
 *
 * @example
 * ```ts
 * validatePattern("ORD-[0-9]{6}"); // /ORD-[0-9]{6}/g
 * validatePattern("(a+)+$"); // throws PatternError
 * ```
 */
export function validatePattern(pattern: string): RegExp {
  const refuse = (why: string) =>
    new PatternError(`Cannot use pattern "${pattern}": ${why}`);
  if (pattern.length === 0 || pattern.length > MAX_PATTERN_CHARS) {
    throw refuse(`expected 1 to ${MAX_PATTERN_CHARS} characters`);
  }
  let re: RegExp;
  try {
    re = new RegExp(pattern, "g");
  } catch (error) {
    throw refuse(`not a regular expression (${(error as Error).message})`);
  }
  if (re.test("")) throw refuse("it matches the empty string");
  re.lastIndex = 0;
  // Each open group: whether it holds a quantifier or an alternation.
  const groups: boolean[] = [];
  let risky = false; // the atom just closed is a group that is risky
  let quantified = false; // the atom just read carries a quantifier
  const cost = patternCost(refuse);
  let inClass = false;
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i]!;
    if (inClass) {
      if (c === "\\") i++;
      else if (c === "]") inClass = false;
      continue;
    }
    if (c === "\\") {
      if (/[1-9k]/.test(pattern[i + 1] ?? "")) {
        throw refuse("backreferences are not allowed");
      }
      i++;
      risky = quantified = false;
      continue;
    }
    if (c === "?" && quantified) { // lazy: `a+?`
      quantified = false;
      continue;
    }
    let bound: string | undefined;
    if (c === "{") bound = /^\{\d+(,\d*)?\}/.exec(pattern.slice(i))?.[0];
    if (c === "*" || c === "+" || c === "?" || bound !== undefined) {
      const many = c !== "?" && bound !== "{0}" && bound !== "{1}" &&
        bound !== "{0,1}";
      if (risky && many) {
        throw refuse(
          "a repeated group may not hold a quantifier or an alternation",
        );
      }
      cost.quantifier(c, bound);
      if (groups.length > 0) groups[groups.length - 1] = true;
      if (bound !== undefined) i += bound.length - 1;
      risky = false;
      quantified = true;
      continue;
    }
    risky = quantified = false;
    if (c === "[") inClass = true;
    else if (c === "(") {
      const head = pattern.slice(i, i + 4);
      if (/^\(\?<?[=!]/.test(head)) throw refuse("lookarounds are not allowed");
      groups.push(false);
      cost.open();
      if (head.startsWith("(?:")) i += 2;
      else if (head.startsWith("(?<")) i = pattern.indexOf(">", i);
    } else if (c === "|") {
      if (groups.length > 0) groups[groups.length - 1] = true;
      cost.alternative();
    } else if (c === ")") {
      risky = groups.pop() ?? false;
      if (risky && groups.length > 0) groups[groups.length - 1] = true;
      cost.close();
    }
  }
  cost.end();
  return re;
}

/**
 * Counts what a pattern may cost as {@linkcode validatePattern} reads it:
 * its unbounded quantifiers and its ways to match at one place (quantifier
 * ranges and alternatives multiplied), throwing `refuse`'s error past
 * {@linkcode MAX_UNBOUNDED_QUANTIFIERS} or {@linkcode MAX_PATTERN_WAYS}.
 */
function patternCost(refuse: (why: string) => PatternError) {
  let unbounded = 0;
  let ways = 1;
  // Alternatives of each open group, and of the pattern outside any group.
  const alternatives: number[] = [];
  let top = 1;
  const multiply = (n: number) => {
    ways *= n;
    if (ways > MAX_PATTERN_WAYS) {
      throw refuse(
        `expected at most ${MAX_PATTERN_WAYS} ways to match at one place (its quantifiers' ranges and its alternatives multiplied)`,
      );
    }
  };
  return {
    quantifier(c: string, bound: string | undefined): void {
      if (c === "*" || c === "+" || bound?.endsWith(",}")) unbounded++;
      if (unbounded > MAX_UNBOUNDED_QUANTIFIERS) {
        throw refuse(
          `expected at most ${MAX_UNBOUNDED_QUANTIFIERS} unbounded quantifiers (*, +, {n,})`,
        );
      }
      multiply(quantifierRange(c, bound));
    },
    open: () => void alternatives.push(1),
    alternative(): void {
      if (alternatives.length > 0) alternatives[alternatives.length - 1]!++;
      else top++;
    },
    close: () => multiply(alternatives.pop() ?? 1),
    end: () => multiply(top),
  };
}

/**
 * How many lengths quantifier `c` (with `bound`, its `{…}` text) lets its
 * atom take within one window: `*`, `+` and `{n,}` a window's length.
 */
function quantifierRange(c: string, bound: string | undefined): number {
  if (c === "?") return 2;
  if (c === "*" || c === "+") return PATTERN_WINDOW_CHARS;
  const [min, max] = bound!.slice(1, -1).split(",");
  if (max === undefined) return 1; // {n}
  if (max === "") return PATTERN_WINDOW_CHARS; // {n,}
  return Math.max(
    1,
    Math.min(PATTERN_WINDOW_CHARS, Number(max) - Number(min) + 1),
  );
}

/** Time custom patterns may take over one entry, in milliseconds. */
export const PATTERN_BUDGET_MS = 25;

/** What custom patterns may still spend over the entry being scrubbed. */
export interface PatternBudget {
  /** Clock reading past which a pattern stops (`performance.now()` time). */
  deadline: number;
  now: () => number;
}

/**
 * A finder for a custom pattern: windows of {@linkcode PATTERN_WINDOW_CHARS}
 * (see there), a match kept once. `null` when the entry's
 * {@linkcode PATTERN_BUDGET_MS} ran out before the string was searched
 * through: the caller filters the whole string rather than let a match
 * through.
 */
export function patternFinder(
  re: RegExp,
  budget?: PatternBudget,
): (text: string) => Span[] | null {
  return (text) => {
    const spans: Span[] = [];
    let covered = 0; // matches ending before this were found already
    for (let at = 0;; at += PATTERN_WINDOW_CHARS - PATTERN_OVERLAP_CHARS) {
      if (budget && budget.now() > budget.deadline) return null;
      const window = text.slice(at, at + PATTERN_WINDOW_CHARS);
      for (const m of window.matchAll(re)) {
        const start = at + m.index;
        const end = start + m[0].length;
        if (end > start && start >= covered) {
          spans.push([start, end]);
          covered = end;
        }
      }
      if (at + PATTERN_WINDOW_CHARS >= text.length) return spans;
    }
  };
}

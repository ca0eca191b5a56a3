/**
 * Scrubbing (docs/privacy.md): what becomes of secrets in an entry before it
 * is stored. Always on: values under keys that name secrets become
 * {@linkcode FILTERED}, and Luhn-valid card numbers inside strings too. A
 * project adds rules: key names, detectors (domain/detectors.ts) or its own
 * patterns, each with an action (remove, mask, keyed hash).
 *
 * Pure: {@linkcode compileScrubber} turns a project's rules into a scrubber
 * whose `candidate(text)` is a cheap test on the entry's JSON text (most
 * entries hold no secret and are never parsed) and whose `scrub(record)`
 * returns the record scrubbed, the input untouched. Scrubbing is idempotent:
 * a scrubbed entry scrubbed again (a kept rejected entry replayed) stays as
 * it is. Imports only detectors and the runtime's HMAC.
 *
 * @module
 */
import { createHmac } from "node:crypto";
import {
  DETECTOR_TABLE,
  type DetectorName,
  type Finder,
  PATTERN_BUDGET_MS,
  type PatternBudget,
  patternFinder,
  type Span,
  validatePattern,
} from "./detectors.ts";

/** What replaces a removed value, or a removed part of a string. */
export const FILTERED = "[Filtered]";

/** What a rule does to what it matches. */
export const SCRUB_ACTIONS = ["remove", "mask", "hash"] as const;

/** One of {@linkcode SCRUB_ACTIONS}. */
export type ScrubAction = typeof SCRUB_ACTIONS[number];

/** A project's scrubbing rule. */
export type ScrubRule =
  & { id: string; action: ScrubAction }
  & (
    | { kind: "key"; key: string }
    | { kind: "detector"; detector: DetectorName }
    | { kind: "pattern"; pattern: string }
  );

/**
 * Key names that always name secrets, as words: a key matches when a run of
 * its words (split at case changes and at anything not a letter or digit),
 * joined, is the name or its plural (`userPassword`, `X-Api-Key`,
 * `session_id`, `cardNumber`; not `cardinality`).
 */
export const DEFAULT_SECRET_KEYS = [
  "password",
  "passwd",
  "secret",
  "token",
  "api_key",
  "authorization",
  "cookie",
  "session_id",
  "card",
  "cvv",
  "ssn",
] as const;

/** A key's words, lower case: `"X-ApiKey"` → `["x", "api", "key"]`. */
export function keyWords(key: string): string[] {
  return key.replace(/([a-z0-9])([A-Z])/g, "$1 $2")
    // A lookahead, not `([A-Z]+)([A-Z][a-z])`, which backtracks over a
    // run of capitals: quadratic in a sender's key (60,000 capitals 2.4 s).
    .replace(/([A-Z])(?=[A-Z][a-z])/g, "$1 ")
    .toLowerCase().split(/[^a-z0-9]+/).filter((w) => w !== "");
}

/** A key name as the words it matches. */
type KeyName = string[];

/** The default secret names, as words. */
const SECRET_NAMES: KeyName[] = DEFAULT_SECRET_KEYS.map(keyWords);
/**
 * Keys whose verdict against the defaults is remembered, at most: keys
 * repeat from entry to entry, and splitting one into words costs more than
 * the rest of its walk. The memo is emptied when full.
 */
export const MAX_KEY_MEMO = 4096;
/**
 * Longest key remembered, in characters: a sender's member names are bounded
 * only by the body, so the memo holds at most 4,096 × 128 characters.
 */
export const MAX_KEY_MEMO_CHARS = 128;
const secretKeys = new Map<string, boolean>();

/** Whether `key` names a secret of {@linkcode DEFAULT_SECRET_KEYS}. */
function isSecretKey(key: string): boolean {
  let secret = secretKeys.get(key);
  if (secret === undefined) {
    const words = keyWords(key);
    secret = SECRET_NAMES.some((name) => keyMatches(words, name));
    if (key.length > MAX_KEY_MEMO_CHARS) return secret;
    if (secretKeys.size >= MAX_KEY_MEMO) secretKeys.clear();
    secretKeys.set(key, secret);
  }
  return secret;
}

/**
 * Whether a key of `words` names `name`: the name's words appear in a row
 * among them, or the name's words joined are one of them (`apikey`); the
 * last word may be plural.
 */
function keyMatches(words: string[], name: KeyName): boolean {
  const same = (word: string, want: string) =>
    word === want || word === want + "s";
  const whole = name.join("");
  for (let i = 0; i < words.length; i++) {
    if (same(words[i]!, whole)) return true;
    if (name.length === 1 || i + name.length > words.length) continue;
    let k = 0;
    while (k < name.length - 1 && words[i + k] === name[k]) k++;
    if (k === name.length - 1 && same(words[i + k]!, name[k]!)) return true;
  }
  return false;
}

/** What may separate a key's words in JSON text: a character, or an escape. */
const SEPARATOR = "(?:[^a-z0-9]|\\\\(?:u[0-9a-f]{4}|[a-z]))";
/**
 * A word that can stand inside a run of separators: the letter of an
 * escape (`\t`) or part of a `\u001e`.
 */
const ESCAPE_LIKE = /^(?:[a-z]|u?[0-9a-f]{1,4})$/;
/**
 * Separators between two words of a key that a trigger looks past, after a
 * word {@linkcode ESCAPE_LIKE}: an unbounded run would be scanned again from
 * every place such a word stands inside it (64 KB of `\t` took 5.4 s for a
 * rule on `t_id`).
 */
const MAX_SEPARATORS = 16;
/**
 * A regular expression source that every key matching `name` passes in
 * JSON text, whatever separates its words (a case change, a character,
 * or an escape sequence): any number of them; or, once a word but the last
 * is {@linkcode ESCAPE_LIKE}, up to {@linkcode MAX_SEPARATORS}, or any word
 * but the last followed by more (a key whose words a longer run parts is
 * still looked at, and text without such a word and run is not).
 */
function textStem(name: KeyName): string {
  const words = name.slice(0, -1);
  if (!words.some((word) => ESCAPE_LIKE.test(word))) {
    return name.join(`${SEPARATOR}*`);
  }
  const chain = name.join(`${SEPARATOR}{0,${MAX_SEPARATORS}}`);
  const parted = words.map((word) =>
    `${word}${SEPARATOR}{${MAX_SEPARATORS + 1}}`
  );
  return [chain, ...parted].join("|");
}

/** A string rewrite: the spans a finder matched, replaced. */
interface StringRule {
  find: Finder;
  action: ScrubAction;
}

/** A compiled project's rules: see the module doc. */
export interface Scrubber {
  /** `false` when `text` (an entry's JSON) surely holds nothing to scrub. */
  candidate(text: string): boolean;
  /** The record with its `data`, `context` and `device` scrubbed. */
  scrub<T extends ScrubTarget>(record: T): { entry: T; changed: boolean };
}

/** What a scrubber rewrites: the sender's members of an entry. */
export interface ScrubTarget {
  data: Record<string, unknown>;
  context?: Record<string, unknown>;
  device?: Record<string, unknown> | string;
}

/** Options of {@linkcode compileScrubber}. */
export interface ScrubberOptions {
  /** The project's key of keyed hashes; required by a rule that hashes. */
  hashKey?: string;
  /** Clock of the patterns' budget per entry. @default {performance.now} */
  now?: () => number;
}

/** Shape of a value a hash action made: left as it is when met again. */
const HASHED = /^hash:[0-9a-f]{16}$/;
/** Shape of a value a mask action made (or a filtered one). */
const MASKED = /^\*+.{0,4}$/s;

/** A project's rules sorted by what they match, ready to run. */
interface CompiledRules {
  /** Key names of the project's rules, with their actions. */
  keyActions: [KeyName, ScrubAction][];
  /** Rewrites of strings, the card default first. */
  strings: StringRule[];
  /** `false` when an entry's JSON text surely holds nothing to scrub. */
  candidate: (text: string) => boolean;
}

/** Sorts `rules` (after the defaults) by what they match. */
function compileRules(
  rules: readonly ScrubRule[],
  budget: PatternBudget,
): CompiledRules {
  const keyActions: [KeyName, ScrubAction][] = [];
  const stems = SECRET_NAMES.map(textStem);
  const strings: StringRule[] = [];
  const triggers = [DETECTOR_TABLE.card.trigger];
  let cardAction: ScrubAction = "remove";
  let always = false;
  for (const rule of rules) {
    if (rule.kind === "key") {
      const name = keyWords(rule.key);
      if (name.length === 0) continue;
      keyActions.push([name, rule.action]);
      stems.push(textStem(name));
    } else if (rule.kind === "detector" && rule.detector === "card") {
      cardAction = rule.action;
    } else if (rule.kind === "detector") {
      const detector = DETECTOR_TABLE[rule.detector];
      strings.push({ find: detector.find, action: rule.action });
      triggers.push(detector.trigger);
    } else {
      let find: (text: string) => Span[] | null;
      try {
        find = patternFinder(validatePattern(rule.pattern), budget);
      } catch {
        // Stored before a bound that now refuses it: never run, every
        // string filtered as by a pattern out of time (fail closed).
        find = () => null;
      }
      strings.push({ find, action: rule.action });
      always = true; // a pattern has no trigger: every entry is parsed
    }
  }
  strings.unshift({ find: DETECTOR_TABLE.card.find, action: cardAction });
  const keyTrigger = new RegExp(stems.join("|"), "i");
  return {
    keyActions,
    strings,
    candidate: (text) =>
      always || keyTrigger.test(text) || triggers.some((t) => t(text)),
  };
}

/**
 * `name`, a member name that scrubbing rewrote, or `name (2)`, `name (3)`…
 * where the object already has it (two card numbers as names, both
 * `[Filtered]`): a rewritten name never takes another member's value.
 */
function unusedName(
  name: string,
  out: Record<string, unknown>,
  source: object,
  next: Map<string, number>,
): string {
  // Numbering goes on from where it stopped for this name: thousands of
  // card numbers as names of one object cost one try each, not each a walk.
  let n = next.get(name) ?? 1;
  let free = n === 1 ? name : `${name} (${n})`;
  while (Object.hasOwn(out, free) || Object.hasOwn(source, free)) {
    free = `${name} (${++n})`;
  }
  next.set(name, n + 1);
  return free;
}

/** What an action makes of a value: `[Filtered]`, a mask, a keyed hash. */
function actionOf(
  hashKey: string | undefined,
): (action: ScrubAction, value: string) => string {
  return (action, value) => {
    if (action === "remove") return FILTERED;
    if (action === "mask") return mask(value);
    const mac = createHmac("sha256", hashKey!).update(value).digest("hex");
    return "hash:" + mac.slice(0, 16);
  };
}

/** One scrub of one entry: the walk over its members, and whether it changed. */
class Walk {
  changed = false;
  #rules: CompiledRules;
  #apply: (action: ScrubAction, value: string) => string;

  constructor(
    rules: CompiledRules,
    apply: (action: ScrubAction, value: string) => string,
  ) {
    this.#rules = rules;
    this.#apply = apply;
  }

  /** What a key's value gets: an action, or `undefined` to walk into it. */
  keyAction(key: string): ScrubAction | undefined {
    if (isSecretKey(key)) return "remove";
    const { keyActions } = this.#rules;
    if (keyActions.length === 0) return undefined;
    const words = keyWords(key);
    return keyActions.find(([name]) => keyMatches(words, name))?.[1];
  }

  string(text: string): string {
    if (HASHED.test(text)) return text;
    let out = text;
    for (const rule of this.#rules.strings) {
      const spans = rule.find(out);
      if (spans === null) { // out of time: nothing unsearched gets through
        out = FILTERED;
        break;
      }
      if (spans.length > 0) {
        out = rewrite(out, spans, (part) => this.#apply(rule.action, part));
      }
    }
    if (out !== text) this.changed = true;
    return out;
  }

  value(value: unknown, depth: number): unknown {
    if (typeof value === "string") return this.string(value);
    if (typeof value !== "object" || value === null || depth > 64) {
      return value;
    }
    if (Array.isArray(value)) return value.map((v) => this.value(v, depth + 1));
    const out: Record<string, unknown> = {};
    let next: Map<string, number> | undefined;
    for (const [key, inner] of Object.entries(value)) {
      const action = this.keyAction(key);
      const name = this.string(key);
      out[
        name === key ? key : unusedName(name, out, value, next ??= new Map())
      ] = action === undefined
        ? this.value(inner, depth + 1)
        : this.keyed(inner, action);
    }
    return out;
  }

  /** The value under a key a rule names. */
  keyed(value: unknown, action: ScrubAction): unknown {
    if (value === null || value === "" || value === FILTERED) return value;
    const text = typeof value === "string" ? value : JSON.stringify(value);
    if (action === "hash" && HASHED.test(text)) return value;
    if (action === "mask" && MASKED.test(text)) return value;
    this.changed = true;
    const whole = typeof value === "object" && action === "mask";
    return this.#apply(whole ? "remove" : action, text);
  }
}

/**
 * Compiles a project's rules (the defaults always first) into a
 * {@linkcode Scrubber}. Throws when a rule hashes and no key is given; a
 * stored pattern the bounds now refuse is never run, it filters every string
 * (fail closed).
 *
 * @example
 * ```ts
 * const scrubber = compileScrubber([]);
 * scrubber.scrub({ data: { password: "hunter2" } }).entry.data; // { password: "[Filtered]" }
 * ```
 */
export function compileScrubber(
  rules: readonly ScrubRule[],
  options: ScrubberOptions = {},
): Scrubber {
  if (rules.some((r) => r.action === "hash") && !options.hashKey) {
    throw new Error("Cannot hash without the project's hash key");
  }
  const now = options.now ?? (() => performance.now());
  const budget: PatternBudget = { deadline: Infinity, now };
  const compiled = compileRules(rules, budget);
  const apply = actionOf(options.hashKey);
  return {
    candidate: compiled.candidate,
    scrub(record) {
      budget.deadline = now() + PATTERN_BUDGET_MS;
      const walk = new Walk(compiled, apply);
      const entry = { ...record };
      entry.data = walk.value(record.data, 0) as Record<string, unknown>;
      if (record.context !== undefined) {
        entry.context = walk.value(record.context, 0) as typeof record.context;
      }
      if (record.device !== undefined) {
        entry.device = walk.value(record.device, 0) as typeof record.device;
      }
      return walk.changed
        ? { entry, changed: true }
        : { entry: record, changed: false };
    },
  };
}

/**
 * `value` with all but its last 4 characters as `*`; all of it when it is
 * shorter than 8 characters, whose last 4 would say too much.
 */
function mask(value: string): string {
  const chars = [...value];
  const kept = chars.length < 8 ? 0 : 4;
  return "*".repeat(Math.max(4, chars.length - kept)) +
    chars.slice(chars.length - kept).join("");
}

/** `text` with each span (in order, not overlapping) replaced by `by(part)`. */
function rewrite(
  text: string,
  spans: Span[],
  by: (part: string) => string,
): string {
  spans.sort((a, b) => a[0] - b[0]);
  let out = "";
  let at = 0;
  for (const [start, end] of spans) {
    if (start < at) continue;
    out += text.slice(at, start) + by(text.slice(start, end));
    at = end;
  }
  return out + text.slice(at);
}

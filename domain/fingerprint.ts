/**
 * The fingerprint of an error: what makes two `error` or `critical` entries
 * "the same error" for the error groups (docs/explorer.md#error-groups).
 * Pure and synchronous, so the consumer computes it at write time and the
 * query module can match `fingerprint:<hash>` on any entry.
 *
 * The fingerprint covers the entry's title (`data.title`, else
 * `data.message`, else its first string field) with the parts that vary
 * from one occurrence to the next normalised — quoted strings, UUIDs, hex
 * ids and numbers — plus the top frame of `data.stack` when there is one,
 * as `file:function` without line or column (a rebuild moves lines, not
 * errors).
 *
 * That fingerprint is public arithmetic (FNV-1a): a sender can make titles
 * whose fingerprints are whatever it likes. It names the entries of a group in
 * a query (`fingerprint:<hash>`); the group itself is named by
 * {@linkcode groupIdOf}, a keyed hash of the same text under the project's own
 * random key, which a sender cannot compute, so it cannot aim at a group.
 *
 * @module
 */
import { sipHash24, SIPHASH_KEY_BYTES } from "./siphash.ts";

/** What an entry's fingerprint is made of. */
export interface Fingerprint {
  /** 16 lower-case hex digits. */
  fingerprint: string;
  /** The normalised title the fingerprint covers. */
  title: string;
  /** `file:function` of the top stack frame; `null` when there is none. */
  topFrame: string | null;
}

/** Longest normalised title kept, in characters. */
const MAX_TITLE = 200;
/** Longest top frame kept, in characters. */
const MAX_FRAME = 200;

/**
 * An entry's one-line text: `data.title`, else `data.message`, else the
 * first non-empty string member of `data`; `""` when there is none.
 *
 * @example
 * ```ts
 * entryTitle({ message: "boom", code: "E1" }); // "boom"
 * ```
 */
export function entryTitle(data: Record<string, unknown>): string {
  for (const name of ["title", "message"]) {
    const value = data[name];
    if (typeof value === "string" && value.trim() !== "") return value;
  }
  for (const value of Object.values(data)) {
    if (typeof value === "string" && value.trim() !== "") return value;
  }
  return "";
}

const UUID =
  /\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b/gi;
/** Hex runs of 8 or more that hold a digit (so that "deadbeef" words stay). */
const HEX = /\b(?:0x)?(?=[0-9a-f]*\d)[0-9a-f]{8,}\b/gi;
const NUMBER = /(?<![A-Za-z_\d])[-+]?\d+(?:[.,:]\d+)*(?![A-Za-z_\d])/g;
/** Characters `.` does not match in a regular expression. */
const LINE_END = /[\n\r\u2028\u2029]/;

/**
 * A title with its varying parts replaced: quoted strings by `"…"`, UUIDs by
 * `<uuid>`, hex ids by `<hex>`, numbers by `<n>`; whitespace collapsed.
 *
 * @example
 * ```ts
 * normaliseTitle('User 42 not found: "bob"'); // 'User <n> not found: "…"'
 * ```
 */
export function normaliseTitle(title: string): string {
  const text = maskQuoted(title)
    .replace(UUID, "<uuid>")
    .replace(HEX, "<hex>")
    .replace(NUMBER, "<n>")
    .replace(/\s+/g, " ")
    .trim();
  return text.length > MAX_TITLE ? text.slice(0, MAX_TITLE) : text;
}

/**
 * `text` with each quoted string replaced by `"…"` (or `'…'`, `` `…` ``):
 * what replacing `/"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*'|`[^`\n]*`/g`
 * gives, in one pass. The expression scans again from every quote that
 * opens no string, which a sender's `"\"\"\"…` makes quadratic: a quote
 * inside a string that failed is escaped, and fails at the same place.
 */
function maskQuoted(text: string): string {
  let out = "";
  let from = 0;
  // Per quote, where the last string it opened failed to close.
  const failed: Record<string, number> = { '"': -1, "'": -1, "`": -1 };
  for (let i = 0; i < text.length; i++) {
    const quote = text[i]!;
    if (!(quote in failed) || i < failed[quote]!) continue;
    const close = closingQuote(text, i);
    if (close < 0) {
      failed[quote] = -close;
      continue;
    }
    out += `${text.slice(from, i)}${quote}…${quote}`;
    from = close + 1;
    i = close;
  }
  return out + text.slice(from);
}

/**
 * Index of the quote closing the string opened at `open`, or minus where it
 * fails: a line feed, the end, or (but in a template) a backslash before a
 * line end.
 */
function closingQuote(text: string, open: number): number {
  const quote = text[open]!;
  for (let i = open + 1; i < text.length; i++) {
    const c = text[i]!;
    if (c === quote) return i;
    if (c === "\n") return -i;
    if (c === "\\" && quote !== "`") {
      if (i + 1 >= text.length || LINE_END.test(text[i + 1]!)) return -i;
      i++;
    }
  }
  return -text.length;
}

/**
 * The lines of a `data.stack`: a string split at its newlines, or an array
 * whose strings are taken as they are and whose objects are written as
 * `function (file:line:column)`. `[]` for anything else.
 *
 * @example
 * ```ts
 * stackLines("Error: x\n    at f (a.js:1:2)"); // ["Error: x", "    at f (a.js:1:2)"]
 * ```
 */
export function stackLines(stack: unknown): string[] {
  if (typeof stack === "string") {
    return stack.split(/\r\n|\r|\n/).filter((line) => line.trim() !== "");
  }
  if (!Array.isArray(stack)) return [];
  const lines: string[] = [];
  for (const frame of stack) {
    if (typeof frame === "string") {
      if (frame.trim() !== "") lines.push(frame);
    } else if (typeof frame === "object" && frame !== null) {
      const f = frameParts(frame as Record<string, unknown>);
      if (f === null) continue;
      const where = [f.file, f.line, f.column].filter((p) => p !== "")
        .join(":");
      lines.push(
        f.fn === "" ? `at ${where}` : `at ${f.fn} (${where || "?"})`,
      );
    }
  }
  return lines;
}

function text(value: unknown): string {
  return typeof value === "string"
    ? value
    : typeof value === "number"
    ? String(value)
    : "";
}

/** Function, file, line and column of a frame object (Sentry's and others' names). */
function frameParts(
  frame: Record<string, unknown>,
): { fn: string; file: string; line: string; column: string } | null {
  const fn = text(
    frame.function ?? frame.functionName ?? frame.fn ?? frame.method,
  );
  const file = text(
    frame.file ?? frame.fileName ?? frame.filename ?? frame.url ??
      frame.abs_path,
  );
  if (fn === "" && file === "") return null;
  return {
    fn,
    file,
    line: text(frame.line ?? frame.lineNumber ?? frame.lineno),
    column: text(frame.column ?? frame.columnNumber ?? frame.colno),
  };
}

// `at file:1:2`, `fn@file:1:2` (Firefox, Safari); `at fn (file:1:2)` is
// read by v8Call.
const V8_BARE = /^\s*at\s+(?:async\s+)?(\S+)\s*$/;
const GECKO = /^\s*([^@\s]*)@(\S+)\s*$/;

/** A location without `:line:column`, query or fragment. */
function fileOf(location: string): string {
  return location.replace(/[?#][^:]*/, "").replace(/(?::\d+){1,2}$/, "");
}

const SPACE = /\s/;

/**
 * The function and the location of a line `at [async ]fn (location)`:
 * what `/^\s*at\s+(?:async\s+)?(.*?)\s+\((.*)\)\s*$/` captures, found
 * in one pass. The expression itself backtracks over every split of a run
 * of spaces (minutes for a line of 60,000 spaces); a sender writes the
 * stack, and the consumer reads it.
 */
function v8Call(line: string): [fn: string, location: string] | null {
  const space = (i: number) => i < line.length && SPACE.test(line[i]!);
  const skip = (i: number) => {
    while (space(i)) i++;
    return i;
  };
  const atAt = skip(0);
  if (!line.startsWith("at", atAt) || !space(atAt + 2)) return null;
  // The location runs from the "(" to the last character, which must be
  // ")" (spaces aside), with no line end in between.
  let close = line.length - 1;
  while (close >= 0 && space(close)) close--;
  if (line[close] !== ")") return null;
  let lastEnd = close - 1;
  while (lastEnd >= 0 && !LINE_END.test(line[lastEnd]!)) lastEnd--;
  const opens = (q: number) => line[q] === "(" && q > lastEnd && q < close;
  const call = (fn: string, q: number): [string, string] => [
    fn,
    line.slice(q + 1, close),
  ];
  // The shortest function from `from`: up to the first run of spaces
  // followed by a "(" that opens the location; a line end cannot be in it.
  const search = (from: number): [string, string] | null => {
    for (let i = from; i < line.length;) {
      if (!space(i)) {
        i++;
        continue;
      }
      const q = skip(i);
      if (opens(q)) return call(line.slice(from, i), q);
      for (let k = i; k < q; k++) if (LINE_END.test(line[k]!)) return null;
      i = q;
    }
    return null;
  };
  const fnAt = skip(atAt + 2);
  if (line.startsWith("async", fnAt) && space(fnAt + 5)) {
    const afterAsync = skip(fnAt + 5);
    const found = search(afterAsync);
    if (found) return found;
    // Backtracking gives a space back: an empty function before the "(".
    if (afterAsync - fnAt - 5 >= 2 && opens(afterAsync)) {
      return call("", afterAsync);
    }
  }
  const found = search(fnAt);
  if (found) return found;
  return fnAt - atAt - 2 >= 2 && opens(fnAt) ? call("", fnAt) : null;
}

/** `file:function` of one stack line; `null` when it is no frame. */
function frameOfLine(line: string): string | null {
  const call = v8Call(line);
  if (call) return `${fileOf(call[1])}:${call[0]}`;
  let m = V8_BARE.exec(line);
  if (m) return `${fileOf(m[1]!)}:`;
  m = GECKO.exec(line);
  if (m) return `${fileOf(m[2]!)}:${m[1]}`;
  return null;
}

/**
 * The top frame of a `data.stack` as `file:function`, without line and
 * column; `null` when it has no recognisable frame.
 *
 * @example
 * ```ts
 * topFrame("TypeError: x\n    at pay (https://shop/app.js:10:5)"); // "https://shop/app.js:pay"
 * ```
 */
export function topFrame(stack: unknown): string | null {
  if (Array.isArray(stack)) {
    for (const frame of stack) {
      if (typeof frame === "object" && frame !== null) {
        const f = frameParts(frame as Record<string, unknown>);
        if (f !== null) return `${fileOf(f.file)}:${f.fn}`.slice(0, MAX_FRAME);
      } else if (typeof frame === "string") {
        const found = frameOfLine(frame);
        if (found !== null) return found.slice(0, MAX_FRAME);
      }
    }
    return null;
  }
  for (const line of stackLines(stack)) {
    const found = frameOfLine(line);
    if (found !== null) return found.slice(0, MAX_FRAME);
  }
  return null;
}

/** 64-bit FNV-1a of `text`'s UTF-16 units, as 16 hex digits. */
function fnv1a64(text: string): string {
  let h = 0xcbf29ce484222325n;
  const prime = 0x100000001b3n;
  const mask = 0xffffffffffffffffn;
  for (let i = 0; i < text.length; i++) {
    h ^= BigInt(text.charCodeAt(i));
    h = (h * prime) & mask;
  }
  return h.toString(16).padStart(16, "0");
}

/**
 * The fingerprint of an entry from its `data`.
 *
 * @example
 * ```ts
 * fingerprintOf({ data: { title: "Order 1234 failed" } }).title; // "Order <n> failed"
 * ```
 */
export function fingerprintOf(
  record: { data: Record<string, unknown> },
): Fingerprint {
  const title = normaliseTitle(entryTitle(record.data));
  const frame = topFrame(record.data.stack);
  return {
    fingerprint: fnv1a64(`${title}\n${frame ?? ""}`),
    title,
    topFrame: frame,
  };
}

/** Bytes of a key of {@linkcode groupIdOf}. */
export const GROUP_KEY_BYTES = SIPHASH_KEY_BYTES;

const ENCODER = new TextEncoder();
/** Room for the longest title and frame, 3 UTF-8 bytes a UTF-16 unit. */
const SCRATCH = new Uint8Array((MAX_TITLE + MAX_FRAME + 1) * 3 + 8);

/**
 * The id of an entry's error group in its project: SipHash-2-4 (the keyed
 * hash made for hash tables fed by attackers) of the fingerprint's text
 * under the project's random 16-byte key, as 16 hex digits. Synchronous and
 * allocation-light, because the consumer groups every error entry: about
 * 5 µs an entry, where node:crypto's HMAC-SHA-256 took 40 µs
 * (docs/explorer.md#error-groups).
 *
 * @example
 * ```ts
 * groupIdOf(key, fingerprintOf(record)); // 16 hex digits
 * ```
 */
export function groupIdOf(
  key: Uint8Array,
  fingerprint: Pick<Fingerprint, "title" | "topFrame">,
): string {
  const text = `${fingerprint.title}\n${fingerprint.topFrame ?? ""}`;
  const { written } = ENCODER.encodeInto(text, SCRATCH);
  return sipHash24(key, SCRATCH.subarray(0, written));
}

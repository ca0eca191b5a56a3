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
 * That fingerprint is public: SHA-256 of the text, cut to 64 bits, so that
 * anyone can compute it, yet a text with another group's fingerprint takes
 * about 2^64 hashes to find. It names a group's entries in a query
 * (`fingerprint:<hash>`), and the group itself in triage and in URLs; the
 * group is stored under {@linkcode groupIdOf}, a keyed hash of the same
 * bytes under the project's own random key, which a sender cannot compute.
 * The fingerprint was once FNV-1a, whose collisions a lattice reduction
 * finds in seconds: a sender's `data.fingerprint` took another group's
 * fingerprint, its triage and its page (docs/explorer.md#error-groups).
 *
 * @module
 */
import { createHash } from "node:crypto";
import { sipHash24, SIPHASH_KEY_BYTES } from "./siphash.ts";
import {
  fileOf,
  frameParts,
  isRuntimeFrame,
  parseStack,
  type StackFrame,
} from "./stack.ts";
import type { ResolvedStack, ShownFrame } from "./entry.ts";

/** What an entry's fingerprint is made of. */
export interface Fingerprint {
  /** 16 lower-case hex digits. */
  fingerprint: string;
  /** The normalised title the fingerprint covers. */
  title: string;
  /** `file:function` of the top stack frame; `null` when there is none. */
  topFrame: string | null;
  /** The text of the sender's own fingerprint (`data.fingerprint`), `null` when none. */
  custom: string | null;
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

/** Longest text of a sender's own fingerprint kept, in characters. */
const MAX_CUSTOM = 600;

/**
 * The top frame of a list of frames as `file:function`: the first frame
 * that is not the runtime's own ({@linkcode isRuntimeFrame}), else the
 * first; `null` when there is none.
 */
export function topFrameOf(frames: StackFrame[]): string | null {
  const top = frames.find((f) => !isRuntimeFrame(f)) ?? frames[0];
  if (top === undefined) return null;
  return `${fileOf(top.location)}:${top.function}`.slice(0, MAX_FRAME);
}

/**
 * The top frame of a `data.stack` as `file:function`, without line and
 * column, the runtime's own frames skipped; `null` when it has no
 * recognisable frame.
 *
 * @example
 * ```ts
 * topFrame("TypeError: x\n    at pay (https://shop/app.js:10:5)"); // "https://shop/app.js:pay"
 * ```
 */
export function topFrame(stack: unknown): string | null {
  return topFrameOf(parseStack(stack));
}

/**
 * The public fingerprint of a text: the first 64 bits of SHA-256 of its
 * UTF-8 bytes (the bytes {@linkcode groupIdOf} hashes), as 16 hex digits.
 * About 2 µs a text, as FNV-1a in BigInt arithmetic was.
 */
function publicHash(text: string): string {
  return createHash("sha256").update(utf8(text)).digest("hex").slice(0, 16);
}

/**
 * The sender's own fingerprint (`data.fingerprint`, a string or an array of
 * strings, as in Sentry), with `{{ default }}` standing for the computed
 * one's text; `null` when there is none. Marked so that it never equals a
 * computed fingerprint's text.
 */
function customText(value: unknown, computed: string): string | null {
  const parts = typeof value === "string"
    ? [value]
    : Array.isArray(value)
    ? value.slice(0, MAX_CUSTOM_PARTS).filter((p) => typeof p === "string")
    : [];
  if (parts.length === 0 || parts.every((p) => p.trim() === "")) return null;
  const text = parts.map((p) => DEFAULT_PART.test(p) ? computed : p)
    .join("\n");
  return `\u0001${text}`.slice(0, MAX_CUSTOM);
}

/** Parts of a sender's fingerprint read at most. */
const MAX_CUSTOM_PARTS = 20;
const DEFAULT_PART = /^\{\{\s*default\s*\}\}$/;

/**
 * The top frame of a stack resolved through source maps: the first frame
 * whose file is not the runtime's own.
 */
function resolvedTopFrame(frames: readonly ShownFrame[]): string | null {
  return topFrameOf(
    frames.map((f) => ({
      function: f.function,
      location: f.file,
      file: f.file,
      line: f.line,
      column: f.column,
    })),
  );
}

/**
 * The fingerprint of an entry from its `data`: its title and top frame (of
 * the stack resolved through source maps when the consumer resolved it,
 * `resolved`), unless `data.fingerprint` gives the sender's own.
 *
 * @example
 * ```ts
 * fingerprintOf({ data: { title: "Order 1234 failed" } }).title; // "Order <n> failed"
 * ```
 */
export function fingerprintOf(
  record: { data: Record<string, unknown>; resolved?: ResolvedStack },
): Fingerprint {
  const title = normaliseTitle(entryTitle(record.data));
  const frame = record.resolved
    ? resolvedTopFrame(record.resolved.frames)
    : topFrame(record.data.stack);
  const computed = `${title}\n${frame ?? ""}`;
  const custom = record.data.fingerprint === undefined
    ? null
    : customText(record.data.fingerprint, computed);
  return {
    fingerprint: publicHash(custom ?? computed),
    title,
    topFrame: frame,
    custom,
  };
}

/** Bytes of a key of {@linkcode groupIdOf}. */
export const GROUP_KEY_BYTES = SIPHASH_KEY_BYTES;

const ENCODER = new TextEncoder();
/** Room for the longest title and frame, 3 UTF-8 bytes a UTF-16 unit. */
const SCRATCH = new Uint8Array(
  Math.max(MAX_TITLE + MAX_FRAME + 1, MAX_CUSTOM) * 3 + 8,
);

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
  fingerprint:
    & Pick<Fingerprint, "title" | "topFrame">
    & { custom?: string | null },
): string {
  const text = fingerprint.custom ??
    `${fingerprint.title}\n${fingerprint.topFrame ?? ""}`;
  return sipHash24(key, utf8(text));
}

/**
 * `text` as UTF-8 (a lone surrogate as U+FFFD), in a buffer the next call
 * writes over: both hashes of a fingerprint's text read the same bytes.
 */
function utf8(text: string): Uint8Array {
  const { written } = ENCODER.encodeInto(text, SCRATCH);
  return SCRATCH.subarray(0, written);
}

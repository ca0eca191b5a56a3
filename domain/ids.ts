/**
 * Unique, time-sortable ids for entries and batches: 12 hex digits of Unix
 * milliseconds, 8 of a per-process sequence, 8 of a per-process random tag.
 * Ids sort by time, then by arrival within one process; two processes never
 * produce the same id. This module is the only one that knows the layout:
 * a time range becomes an id range here ({@linkcode timeBound},
 * {@linkcode firstIdAt}), an id's time is read here ({@linkcode idTime},
 * {@linkcode boundTime}), and an id's form is checked here
 * ({@linkcode isIdForm}).
 *
 * @module
 */

/** Hex digits of time at the start of an id. */
const TIME_DIGITS = 12;
/** Hex digits of a whole id: time, sequence and tag. */
const ID_DIGITS = 28;
const ID = new RegExp(`^[0-9a-f]{${ID_DIGITS}}$`);

const tag = Array.from(
  crypto.getRandomValues(new Uint8Array(4)),
  (b) => b.toString(16).padStart(2, "0"),
).join("");
let sequence = 0;
/** The time part of the last id: requests of one millisecond share it. */
let lastMs = -1;
let lastTime = "";

/**
 * Returns a new id for time `ms`.
 *
 * @example
 * ```ts
 * createId(Date.now()); // "0193f0c2a1b4000000017f3a9c21"
 * ```
 */
export function createId(ms: number): string {
  sequence = (sequence + 1) >>> 0;
  if (ms !== lastMs) {
    lastMs = ms;
    lastTime = timeBound(ms);
  }
  return lastTime + sequence.toString(16).padStart(8, "0") + tag;
}

/** Reads the time back out of an id made by {@linkcode createId}. */
export function idTime(id: string): number {
  return parseInt(id.slice(0, TIME_DIGITS), 16);
}

/**
 * The smallest id of time `ms`: every id created at `ms` or later sorts at or
 * after it, every id created earlier sorts before it.
 *
 * @example
 * ```ts
 * timeBound(Date.UTC(2026, 0, 1)); // "019b76daa800"
 * ```
 */
export function timeBound(ms: number): string {
  return Math.max(0, Math.floor(ms)).toString(16).padStart(TIME_DIGITS, "0");
}

/**
 * Whether `text` has the form of an id: 28 lowercase hex digits.
 *
 * @example
 * ```ts
 * isIdForm(createId(Date.now())); // true
 * isIdForm("0193"); // false
 * ```
 */
export function isIdForm(text: string): boolean {
  return ID.test(text);
}

/**
 * The smallest whole id of time `ms`: {@linkcode timeBound} padded with
 * zeros to an id's length, for a cursor that must have the form of an id.
 *
 * @example
 * ```ts
 * firstIdAt(Date.UTC(2026, 0, 1)); // "019b76daa800" + "0".repeat(16)
 * ```
 */
export function firstIdAt(ms: number): string {
  return timeBound(ms).padEnd(ID_DIGITS, "0");
}

/**
 * The time an id or a time bound starts with; a bound shorter than the time
 * digits counts as padded with zeros.
 *
 * @example
 * ```ts
 * boundTime(timeBound(1_700_000_000_000)); // 1700000000000
 * ```
 */
export function boundTime(bound: string): number {
  return parseInt(bound.slice(0, TIME_DIGITS).padEnd(TIME_DIGITS, "0"), 16);
}

/**
 * The greatest id that sorts before `bound` (a scan's resume: an id, an id
 * and `"\0"`, or a time's 12 digits), so that every id after it is at or
 * after `bound`; `null` when none sorts before it.
 *
 * @example
 * ```ts
 * idJustBefore("019b76daa800"); // "019b76daa7ff" followed by 16 "f"
 * ```
 */
export function idJustBefore(bound: string): string | null {
  if (bound.length > ID_DIGITS) return bound.slice(0, ID_DIGITS);
  const digits = bound.padEnd(ID_DIGITS, "0");
  if (!/^[0-9a-f]+$/.test(digits)) return null;
  const at = digits.search(/[1-9a-f]0*$/);
  if (at < 0) return null;
  const less = (parseInt(digits[at]!, 16) - 1).toString(16);
  return digits.slice(0, at) + less + "f".repeat(ID_DIGITS - at - 1);
}

/**
 * The operator's log of unexpected errors, rate-limited so that no client can
 * flood it (docs/design.md#errors): per kind of line, the first error of an
 * interval is written at once, as one line; the ones after it in the same
 * interval are only counted, and one line with their number and the last of
 * them follows once the interval is over (a timer that runs only while an
 * interval is open writes it). Lines hold the error's name, message and
 * where it was thrown, never a stack trace, with control characters
 * escaped.
 *
 * @module
 */

import { type After, BusyTicker } from "../queue/ticker.ts";

/** How often a started log writes the counts of intervals that are over. */
export const FLUSH_MS = 1000;

/** Options of {@linkcode ErrorLog}. */
export interface ErrorLogOptions {
  /** Length of an interval. @default {10000} */
  intervalMs?: number;
  /** Clock. @default {Date.now} */
  now?: () => number;
  /** Where lines go. @default {console.error} */
  write?: (line: string) => void;
  /** Schedules the flush of a started log. @default a `setTimeout` */
  after?: After;
}

interface Window {
  start: number;
  /** Errors counted but not written since `start`. */
  held: number;
  last: string;
}

/**
 * A rate-limited log of unexpected errors.
 *
 * @example
 * ```ts
 * const log = new ErrorLog({ intervalMs: 10_000 });
 * log.report(new Error("boom")); // "Unexpected error: Error: boom (at ...)"
 * log.report(new Error("boom")); // counted
 * log.flush(); // after 10 s: "Unexpected error: 1 more in the last 10 s, the last: ..."
 * ```
 */
export class ErrorLog {
  readonly intervalMs: number;
  #now: () => number;
  #write: (line: string) => void;
  #windows = new Map<string, Window>();
  #after: After | undefined;
  #ticker: BusyTicker | undefined;

  constructor(options: ErrorLogOptions = {}) {
    this.intervalMs = options.intervalMs ?? 10_000;
    this.#now = options.now ?? Date.now;
    this.#write = options.write ?? ((line) => console.error(line));
    this.#after = options.after;
  }

  /**
   * Flushes every {@linkcode FLUSH_MS} while an interval is open; at rest,
   * no timer runs.
   */
  start(): void {
    this.#ticker ??= new BusyTicker(
      FLUSH_MS,
      () => this.#windows.size > 0,
      () => this.flush(),
      this.#after,
    );
    if (this.#windows.size > 0) this.#ticker.wake();
  }

  /** Stops the timer of {@linkcode ErrorLog.start}. */
  stop(): void {
    this.#ticker?.stop();
    this.#ticker = undefined;
  }

  /** Logs `error` under `label`, or counts it if its interval already wrote. */
  report(error: unknown, label = "Unexpected error"): void {
    const now = this.#now();
    const window = this.#windows.get(label);
    if (window && now - window.start < this.intervalMs) {
      window.held++;
      window.last = describeError(error);
      return;
    }
    if (window) this.#summarize(label, window);
    this.#windows.set(label, {
      start: now,
      held: 0,
      last: "",
    });
    this.#ticker?.wake();
    this.#write(`${label}: ${describeError(error)}`);
  }

  /** Writes the counts of the intervals that are over. */
  flush(): void {
    const now = this.#now();
    for (const [label, window] of this.#windows) {
      if (now - window.start < this.intervalMs) continue;
      this.#summarize(label, window);
      this.#windows.delete(label);
    }
  }

  #summarize(label: string, window: Window): void {
    if (window.held === 0) return;
    const seconds = Math.round(this.intervalMs / 1000);
    this.#write(
      `${label}: ${window.held} more in the last ${seconds} s, the last: ${window.last}`,
    );
  }
}

/**
 * One line describing `error`: its name and message and the first frame of
 * its stack, with control and bidirectional characters escaped.
 *
 * @example
 * ```ts
 * describeError(new TypeError("x")); // "TypeError: x (at file:///app.ts:1:7)"
 * ```
 */
export function describeError(error: unknown): string {
  if (!(error instanceof Error)) return escapeControls(String(error));
  const frame = /\n\s*at (.*)/.exec(error.stack ?? "")?.[1];
  const where = frame ? ` (at ${callSite(frame)})` : "";
  return escapeControls(`${error.name}: ${error.message}${where}`);
}

/** A stack line's place: inside its last parentheses, if it ends with one. */
function callSite(frame: string): string {
  const open = frame.lastIndexOf("(");
  return open >= 0 && frame.endsWith(")") ? frame.slice(open + 1, -1) : frame;
}

// C0 and C1 controls, DEL, and the bidirectional formatting characters:
// matching them is the point.
// deno-lint-ignore no-control-regex
const CONTROLS = new RegExp(
  "[\\u0000-\\u001f\\u007f-\\u009f\\u061c\\u200e\\u200f\\u202a-\\u202e\\u2066-\\u2069]",
  "g",
);

function escapeControls(text: string): string {
  return text.replace(
    CONTROLS,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`,
  );
}

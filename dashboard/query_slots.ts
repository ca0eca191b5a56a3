/**
 * Queries one account (all its sessions together) or one read token may
 * run at once, and the dashboard in all: whether they read in the query
 * thread or in the server's, one reader looping heavy queries must not
 * hold them for everyone (docs/limits.md#dashboard). Kept in memory, per
 * process.
 * The live tail's slots (dashboard/routes/tail.ts) count with the same
 * {@linkcode giveBack}.
 *
 * @module
 */

/** Options of {@linkcode QuerySlots}. */
export interface QuerySlotsOptions {
  /** Queries one account or token runs at once. @default {4} */
  perReader?: number;
  /** Queries the dashboard runs at once. @default {16} */
  total?: number;
}

/** The queries running now, by reader. */
export class QuerySlots {
  readonly perReader: number;
  readonly total: number;
  #running = 0;
  #byReader = new Map<string, number>();

  constructor(options: QuerySlotsOptions = {}) {
    this.perReader = options.perReader ?? 4;
    this.total = options.total ?? 16;
  }

  /**
   * Takes a slot for `reader` (`account:<email>` or `token:<id>`): the
   * function that gives it back (once, however often it is called), or why
   * there is none.
   *
   * @example
   * ```ts
   * const slot = slots.take(`account:${email}`);
   * if (typeof slot === "string") return tooMany(slot);
   * try { return await query(); } finally { slot(); }
   * ```
   */
  take(reader: string): (() => void) | string {
    const held = this.#byReader.get(reader) ?? 0;
    if (held >= this.perReader) {
      return `Cannot run more than ${this.perReader} queries at once for one reader: wait for one to end`;
    }
    if (this.#running >= this.total) {
      return `Cannot run more than ${this.total} queries at once on this dashboard: try again in a moment`;
    }
    this.#running++;
    this.#byReader.set(reader, held + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.#running--;
      giveBack(this.#byReader, reader);
    };
  }
}

/**
 * Counts one holder fewer for `key` (a stream, a query), forgetting it at
 * none.
 *
 * @example
 * ```ts
 * giveBack(bySession, sessionId);
 * ```
 */
export function giveBack(counts: Map<string, number>, key: string): void {
  const left = (counts.get(key) ?? 1) - 1;
  if (left > 0) counts.set(key, left);
  else counts.delete(key);
}

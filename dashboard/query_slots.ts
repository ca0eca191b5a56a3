/**
 * Queries one account (all its sessions together) or one read token may
 * run at once, and the dashboard in all: whether they read in the query
 * thread or in the server's, one reader looping heavy queries must not
 * hold them for everyone (docs/limits.md#dashboard). Kept in memory, per
 * process. The live tail's slots (dashboard/routes/tail.ts) are the same
 * {@linkcode Slots}.
 *
 * @module
 */

/** Options of {@linkcode QuerySlots}. */
export interface QuerySlotsOptions {
  /** Queries one account or token runs at once. @default {4} */
  perReader?: number;
  /** Queries the dashboard runs at once. @default {16} */
  total?: number;
  /** Queries the read tokens of one project run at once. @default {8} */
  perProjectTokens?: number;
  /**
   * Queries read tokens run at once in all, so that signed-in readers keep
   * the rest of `total`. @default {total - perReader}
   */
  allTokens?: number;
}

/** One bound of {@linkcode Slots}: holders at most, and why a take past it is refused. */
export interface SlotBound {
  most: number;
  why: string;
}

/**
 * Holders counted per key at each level (a session, an account, a reader)
 * and in all, each with its bound, in memory. A take answers the function
 * that gives the slot back (once, however often it is called), or why there
 * is none: the first bound it would pass.
 *
 * @example
 * ```ts
 * const slots = new Slots([{ most: 4, why: "one reader holds 4" }], { most: 16, why: "16 in all" });
 * const slot = slots.take(["account:a@example.com"]);
 * ```
 */
export class Slots {
  #open = 0;
  #levels: SlotBound[];
  #total: SlotBound;
  #counts: Map<string, number>[];

  constructor(levels: SlotBound[], total: SlotBound) {
    this.#levels = levels;
    this.#total = total;
    this.#counts = levels.map(() => new Map());
  }

  /** Slots held now. */
  get open(): number {
    return this.#open;
  }

  /**
   * Takes a slot for `keys`, one per level, in the levels' order; levels
   * past the keys given do not count this holder.
   */
  take(keys: string[]): (() => void) | string {
    for (const [i, key] of keys.entries()) {
      const bound = this.#levels[i]!;
      if ((this.#counts[i]!.get(key) ?? 0) >= bound.most) return bound.why;
    }
    if (this.#open >= this.#total.most) return this.#total.why;
    this.#open++;
    keys.forEach((key, i) => {
      const counts = this.#counts[i]!;
      counts.set(key, (counts.get(key) ?? 0) + 1);
    });
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.#open--;
      keys.forEach((key, i) => giveBack(this.#counts[i]!, key));
    };
  }
}

/**
 * The queries running now, by reader; a read token's also by its project
 * and among all tokens', since a member may make up to 100 tokens a project
 * (4 tokens × 4 queries were every slot).
 */
export class QuerySlots {
  readonly perReader: number;
  readonly total: number;
  readonly perProjectTokens: number;
  readonly allTokens: number;
  #slots: Slots;

  constructor(options: QuerySlotsOptions = {}) {
    this.perReader = options.perReader ?? 4;
    this.total = options.total ?? 16;
    this.perProjectTokens = options.perProjectTokens ?? 8;
    this.allTokens = options.allTokens ??
      Math.max(1, this.total - this.perReader);
    this.#slots = new Slots([{
      most: this.perReader,
      why:
        `Cannot run more than ${this.perReader} queries at once for one reader: wait for one to end`,
    }, {
      most: this.perProjectTokens,
      why:
        `Cannot run more than ${this.perProjectTokens} queries at once with one project's read tokens: wait for one to end`,
    }, {
      most: this.allTokens,
      why:
        `Cannot run more than ${this.allTokens} queries at once with read tokens: the rest are kept for signed-in readers; try again in a moment`,
    }], {
      most: this.total,
      why:
        `Cannot run more than ${this.total} queries at once on this dashboard: try again in a moment`,
    });
  }

  /**
   * Takes a slot for `reader` (`account:<email>`, or `token:<id>` with the
   * token's `projectId`): the function that gives it back (once, however
   * often it is called), or why there is none.
   *
   * @example
   * ```ts
   * const slot = slots.take(`account:${email}`);
   * if (typeof slot === "string") return tooMany(slot);
   * try { return await query(); } finally { slot(); }
   * ```
   */
  take(reader: string, projectId?: string): (() => void) | string {
    // An account is counted at the first level only.
    return this.#slots.take(
      projectId === undefined
        ? [reader]
        : [reader, `project:${projectId}`, "tokens"],
    );
  }
}

/** Counts one holder fewer for `key`, forgetting it at none. */
function giveBack(counts: Map<string, number>, key: string): void {
  const left = (counts.get(key) ?? 1) - 1;
  if (left > 0) counts.set(key, left);
  else counts.delete(key);
}

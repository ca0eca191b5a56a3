/**
 * One-shot timers driven by hand, for code that takes an `after(ms, fire)`
 * (queue/ticker.ts and those built on it): a test sees what is armed and
 * fires it when it chooses, instead of sleeping.
 *
 * @module
 */

/** What {@linkcode manualTimers} hands to a test. */
export interface ManualTimers {
  /** The delays of the timers due, in the order they were armed. */
  readonly armed: number[];
  /** Timers cancelled so far. */
  readonly cancelled: number;
  /** The `after` to pass to the code under test. */
  after(ms: number, fire: () => void): () => void;
  /** Runs the timers due (not those they arm in turn). */
  fire(): void;
}

/**
 * One-shot timers driven by hand.
 *
 * @example
 * ```ts
 * const timers = manualTimers();
 * const ticker = new BusyTicker(250, () => true, tick, timers.after);
 * ticker.wake();
 * timers.armed; // [250]
 * timers.fire(); // runs tick, and arms the next
 * ```
 */
export function manualTimers(): ManualTimers {
  let due: { ms: number; fire: () => void }[] = [];
  let cancelled = 0;
  return {
    get armed() {
      return due.map((d) => d.ms);
    },
    get cancelled() {
      return cancelled;
    },
    after(ms, fire) {
      const one = { ms, fire };
      due.push(one);
      return () => {
        if (!due.includes(one)) return;
        cancelled++;
        due = due.filter((d) => d !== one);
      };
    },
    fire() {
      const now = due;
      due = [];
      for (const d of now) d.fire();
    },
  };
}

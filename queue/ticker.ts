/**
 * A timer that runs only while there is work: a service at rest has no
 * reason to wake a few times a second, and on this runtime each wake-up
 * costs a hundred microseconds or more of CPU (BENCHMARKS.md). The rate
 * counters' two loops (the producer's rider tick and the server's sync),
 * the body deadlines' sweep and the error log's flush run on it.
 *
 * @module
 */

/** Runs `fire` once after `ms`; returns a function that cancels it. */
export type After = (ms: number, fire: () => void) => () => void;

/** The default {@linkcode After}: a `setTimeout`. */
export function timeout(ms: number, fire: () => void): () => void {
  const timer = setTimeout(fire, ms);
  return () => clearTimeout(timer);
}

/**
 * Runs `tick` every `ms` while `busy()` holds after a tick; once it does
 * not, the ticker rests until {@linkcode BusyTicker.wake} is called.
 *
 * @example
 * ```ts
 * const ticker = new BusyTicker(250, () => queue.length > 0, () => drain());
 * queue.push(item);
 * ticker.wake(); // the first tick in 250 ms
 * ```
 */
export class BusyTicker {
  #ms: number;
  #busy: () => boolean;
  #tick: () => void;
  #after: After;
  #cancel: (() => void) | undefined;
  #stopped = false;

  constructor(
    ms: number,
    busy: () => boolean,
    tick: () => void,
    after: After = timeout,
  ) {
    this.#ms = ms;
    this.#busy = busy;
    this.#tick = tick;
    this.#after = after;
  }

  /** Arms the next tick, unless one is due or the ticker is stopped. */
  wake(): void {
    if (this.#cancel || this.#stopped) return;
    this.#cancel = this.#after(this.#ms, () => {
      this.#cancel = undefined;
      this.#tick();
      if (this.#busy()) this.wake();
    });
  }

  /** Cancels the tick due, if any, and every later one. */
  stop(): void {
    this.#stopped = true;
    this.#cancel?.();
    this.#cancel = undefined;
  }
}

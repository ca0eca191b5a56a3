/**
 * What bodies still arriving may cost (docs/design.md#bodies-in-flight): a
 * budget of bytes shared by every request that is reading its body, and a
 * deadline by which a body must have arrived whole.
 *
 * A request reserves its bytes before it reads anything: the declared
 * `Content-Length`, or the body limit when it declares none or is gzip (its
 * decompressed size is what is kept), and at least what the runtime's read
 * holds while it waits (routes/body.ts, `READ_COST`). Past the budget it is refused at once,
 * so a flood of stalled bodies holds at most the budget, not a body per
 * connection. A read still unfinished at its deadline is answered `408
 * request_timeout`, but its bytes stay reserved until the read itself ends:
 * the runtime keeps a connection open while a read of its body is pending
 * (measured on Deno 2.9, even after the answer and a `cancel()`), so what the
 * read holds is only freed once the client goes. Deadlines are checked by
 * {@linkcode BodyGuard.sweep} on a coarse timer rather than by one timer per
 * request, which keeps the common case (a body that is already there) to a
 * few counter updates; the timer runs only while a body is being read.
 *
 * @module
 */
import { type After, BusyTicker } from "../queue/ticker.ts";
import { type HttpError, requestTimeout } from "./errors.ts";

/** Options of {@linkcode BodyGuard}. */
export interface BodyGuardOptions {
  /** Bytes that bodies being read may reserve together. */
  budgetBytes: number;
  /** Time a body has to arrive whole, from the start of its reading. */
  timeoutMs: number;
  /** Clock. @default {Date.now} */
  now?: () => number;
}

/** One body being read: its bytes reserved and its deadline. */
export interface Reservation {
  readonly bytes: number;
  readonly deadline: number;
  /** Set once the deadline passed and the read was answered `408`. */
  expired: boolean;
  /** Fails the wait for the read; set by {@linkcode BodyGuard.within}. */
  fail?: (error: HttpError) => void;
}

/**
 * The budget and deadlines of the bodies being read.
 *
 * @example
 * ```ts
 * const guard = new BodyGuard({ budgetBytes: 32 << 20, timeoutMs: 10_000 });
 * guard.start();
 * const held = guard.reserve(1024); // null past the budget: answer 503
 * if (held) await guard.within(held, req.arrayBuffer()); // released when read ends
 * guard.stop();
 * ```
 */
export class BodyGuard {
  readonly budgetBytes: number;
  readonly timeoutMs: number;
  #now: () => number;
  #reserved = 0;
  #open = new Set<Reservation>();
  #ticker: BusyTicker | undefined;

  constructor(options: BodyGuardOptions) {
    this.budgetBytes = options.budgetBytes;
    this.timeoutMs = options.timeoutMs;
    this.#now = options.now ?? Date.now;
  }

  /** Bytes reserved by the bodies being read now. */
  get reservedBytes(): number {
    return this.#reserved;
  }

  /** Number of bodies being read now. */
  get reading(): number {
    return this.#open.size;
  }

  /**
   * Reserves `bytes` for one body, or returns `null` when that would pass the
   * budget. A body alone is always taken, so a budget below the body limit
   * never refuses every request.
   */
  reserve(bytes: number): Reservation | null {
    if (this.#reserved > 0 && this.#reserved + bytes > this.budgetBytes) {
      return null;
    }
    this.#reserved += bytes;
    const held: Reservation = {
      bytes,
      deadline: this.#now() + this.timeoutMs,
      expired: false,
    };
    this.#open.add(held);
    this.#ticker?.wake();
    return held;
  }

  /** Gives back what `held` reserved; safe to call twice. */
  release(held: Reservation): void {
    if (this.#open.delete(held)) this.#reserved -= held.bytes;
  }

  /**
   * Settles like `read`, unless the deadline of `held` passes first: then it
   * rejects with `408 request_timeout`. `held` is released when `read`
   * settles, whichever came first; `read` stays observed, so its later
   * failure is no unhandled rejection.
   */
  within<T>(held: Reservation, read: Promise<T>): Promise<T> {
    // One promise settled by whichever comes first (a promise settles
    // once): cheaper than racing `read` against a second one.
    return new Promise<T>((resolve, reject) => {
      held.fail = reject;
      read.then((value) => {
        this.release(held);
        resolve(value);
      }, (error) => {
        this.release(held);
        reject(error);
      });
    });
  }

  /** Fails every read past its deadline; returns how many it failed. */
  sweep(): number {
    const now = this.#now();
    let failed = 0;
    for (const held of this.#open) {
      if (held.deadline > now || held.expired) continue;
      held.expired = true;
      failed++;
      held.fail?.(requestTimeout(this.timeoutMs));
    }
    return failed;
  }

  /**
   * Sweeps on a timer, a quarter of the timeout apart (between 10 ms and
   * 1 s), so a stalled body ends within 1.25 × the timeout at most. The
   * timer runs only while some body is being read; `after` schedules it
   * (default: a `setTimeout`).
   */
  start(after?: After): void {
    if (this.#ticker !== undefined) return;
    const every = Math.min(1000, Math.max(10, this.timeoutMs / 4));
    this.#ticker = new BusyTicker(
      every,
      () => this.#open.size > 0,
      () => this.sweep(),
      after,
    );
    if (this.#open.size > 0) this.#ticker.wake();
  }

  /** Stops the timer of {@linkcode BodyGuard.start}. */
  stop(): void {
    this.#ticker?.stop();
    this.#ticker = undefined;
  }
}

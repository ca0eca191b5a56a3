/**
 * The pace of a sender (client/delivery.ts): a token bucket that keeps it
 * under the service's per-address rate limit, and the pause of the whole
 * sender after a retryable failure, doubled by each failure of a request
 * sent after the previous one. The module doc of client/delivery.ts says
 * why the pause is shared and why the sender resumes without a burst.
 *
 * @module
 */
/** Options of {@linkcode createPace}: those of a sender that set its pace. */
export interface PaceOptions {
  /** Requests per second of the service's per-address limit. @default {20} */
  rate?: number;
  /** The service's burst; the bucket keeps a tenth of it in reserve. @default {50} */
  burst?: number;
  /** Pause after a first failure. @default {500} */
  retryBaseMs?: number;
  /** Longest pause (unless `Retry-After` says more). @default {30000} */
  retryMaxMs?: number;
  /** Randomness of the jitter, in [0, 1). @default {Math.random} */
  random?: () => number;
  /** Clock, in milliseconds. */
  now: () => number;
}

/** The pace of a sender (see the module doc). */
export interface Pace {
  /**
   * Milliseconds before the next request may go; at 0 it takes its token.
   * With `whole`, for beacons as the page goes away (nothing is sent after
   * them), the bucket's reserve may be spent too: the service's whole burst
   * less what was spent and not yet refilled. Never while paused.
   */
  take(whole?: boolean): number;
  /** Fits the bucket under a service burst of `limit`, told by a `429`. */
  fit(limit: number): void;
  /** Pauses after a retryable failure of a request sent at `sentAt`. */
  pause(sentAt: number, retryAfter: number): void;
  /** A request went through: the backoff starts over. */
  succeed(): void;
}

/** The bucket for a service burst of `limit`: a tenth kept in reserve. */
function capacity(limit: number): number {
  return Math.max(1, limit - Math.ceil(limit / 10));
}

/**
 * The pace of a sender, `now` included.
 *
 * @example
 * ```ts
 * const pace = createPace({ rate: 20, burst: 50, now: Date.now });
 * if (pace.take() === 0) send(job);
 * ```
 */
export function createPace(options: PaceOptions): Pace {
  const { now } = options;
  const rate = options.rate ?? 20;
  const baseMs = options.retryBaseMs ?? 500;
  const maxMs = options.retryMaxMs ?? 30000;
  const random = options.random ?? Math.random;
  let limit = options.burst ?? 50;
  let burst = capacity(limit);
  let tokens = burst;
  let filledAt = now();
  let pausedUntil = 0;
  let failures = 0;
  let lastFailureAt = -Infinity;
  return {
    take(whole) {
      const t = now();
      tokens = Math.min(burst, tokens + (t - filledAt) * rate / 1000);
      filledAt = t;
      const reserve = whole ? limit - burst : 0;
      const wait = Math.max(
        pausedUntil - t,
        (1 - tokens - reserve) * 1000 / rate,
      );
      if (wait <= 0) tokens--;
      return wait;
    },
    fit(served) {
      limit = Math.min(limit, served);
      burst = capacity(limit);
    },
    pause(sentAt, retryAfter) {
      const t = now();
      if (sentAt > lastFailureAt) failures++;
      lastFailureAt = t;
      const backoff = Math.min(maxMs, baseMs * 2 ** (failures - 1));
      pausedUntil = Math.max(
        pausedUntil,
        t + Math.max(retryAfter, backoff / 2 + random() * backoff / 2),
      );
      // Resume at the steady rate, with no burst: the bucket holds one token
      // when the pause ends.
      tokens = 1;
      filledAt = pausedUntil;
    },
    succeed() {
      failures = 0;
    },
  };
}

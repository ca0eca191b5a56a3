/**
 * Token buckets per address, decided in memory on every request with no KV
 * round trip: a bucket of capacity `burst` refilled at `rps` tokens per
 * second.
 *
 * The bucket is kept in its GCRA form: one number per address, the
 * theoretical arrival time (TAT) of its next request. An address may send when
 * its TAT is at most `(burst - 1) / rps` ahead of now, and each request moves
 * the TAT on by `1 / rps`; a TAT in the past is a full bucket. One number
 * instead of an object per address keeps memory and garbage small under a
 * flood of distinct addresses.
 *
 * Buckets live in two generations so that idle addresses cost nothing: a full
 * bucket is the same as none, so an address whose TAT has passed is simply
 * forgotten when its generation is dropped.
 *
 * This module knows nothing of KV: an address that uses a good part of its
 * bucket is reported through `onBusy`, so that the shared counters can count
 * it across instances, and those counters take back what other instances
 * admitted through {@linkcode Buckets.charge}.
 *
 * @module
 */
import type { BucketKey } from "./address.ts";

/** How often the older generation of buckets is dropped. */
const GENERATION_MS = 500;
/** Tokens in use from which an address is reported busy, by default. */
const DEFAULT_BUSY_TOKENS = 5;
/** Buckets kept at most, by default. */
const DEFAULT_MAX_BUCKETS = 100_000;

/** Options of {@linkcode Buckets}. */
export interface BucketsOptions {
  /** Tokens added per second. */
  rps: number;
  /** Bucket capacity. */
  burst: number;
  /** Clock. @default {Date.now} */
  now?: () => number;
  /** Buckets kept at most; past it the longest idle go first. @default {100000} */
  maxBuckets?: number;
  /** Tokens in use (this request included) from which `onBusy` is told. @default {5} */
  busyTokens?: number;
  /**
   * Told of each admitted request of an address with at least `busyTokens`
   * tokens in use; `inUse` counts the tokens in use before this request.
   * @default nothing
   */
  onBusy?: (key: BucketKey, inUse: number, now: number) => void;
}

/**
 * The buckets of every address seen lately.
 *
 * @example
 * ```ts
 * const buckets = new Buckets({ rps: 20, burst: 50 });
 * buckets.take("203.0.113.7"); // 0 while the bucket has a token
 * ```
 */
export class Buckets {
  #now: () => number;
  #maxBuckets: number;
  #onBusy: ((key: BucketKey, inUse: number, now: number) => void) | undefined;
  /** Milliseconds per token. */
  #interval: number;
  /** How far ahead of now a TAT may be for a request to pass. */
  #tolerance: number;
  /** How far ahead of now a TAT is when `busyTokens` tokens are in use. */
  #busyAt: number;
  /**
   * TATs of the addresses seen in the current generation and the one before.
   * Every {@linkcode GENERATION_MS} the older map is dropped, after the
   * addresses in it whose bucket is still refilling (TAT ahead of now) have
   * been carried into the current one: a full bucket is the same as none.
   */
  #current = new Map<BucketKey, number>();
  #previous = new Map<BucketKey, number>();
  #generationStart: number;

  constructor(options: BucketsOptions) {
    this.#now = options.now ?? Date.now;
    this.#maxBuckets = options.maxBuckets ?? DEFAULT_MAX_BUCKETS;
    this.#onBusy = options.onBusy;
    this.#interval = 1000 / options.rps;
    this.#tolerance = (options.burst - 1) * this.#interval;
    this.#busyAt = (options.busyTokens ?? DEFAULT_BUSY_TOKENS) *
      this.#interval;
    this.#generationStart = this.#now();
  }

  /** Buckets held in memory. */
  get size(): number {
    return this.#current.size + this.#previous.size;
  }

  /**
   * Takes a token for `key`: returns 0 when admitted, otherwise the whole
   * seconds (at least 1) until a token is available.
   */
  take(key: BucketKey): number {
    const now = this.#now();
    const tat = Math.max(this.#lookup(key, now) ?? now, now);
    const ahead = tat - now;
    if (ahead > this.#tolerance) {
      return Math.max(1, Math.ceil((ahead - this.#tolerance) / 1000));
    }
    this.#current.set(key, tat + this.#interval);
    if (ahead + this.#interval >= this.#busyAt) {
      this.#onBusy?.(key, Math.round(ahead / this.#interval), now);
    }
    return 0;
  }

  /** The TAT of `key`, or `undefined` when it has no bucket (a full one). */
  peek(key: BucketKey): number | undefined {
    return this.#current.get(key) ?? this.#previous.get(key);
  }

  /**
   * Takes `tokens` from the bucket of `key`, for requests admitted
   * elsewhere; an address without a bucket is left alone.
   */
  charge(key: BucketKey, tokens: number): void {
    const now = this.#now();
    const tat = this.#lookup(key, now);
    if (tat !== undefined) {
      this.#current.set(key, Math.max(tat, now) + tokens * this.#interval);
    }
  }

  /**
   * Finds the TAT of `key`, moving it into the current generation. Starts a
   * new generation every {@linkcode GENERATION_MS}, or early when the current
   * one holds `maxBuckets / 2` addresses; under such a flood of addresses the
   * older generation is dropped but for its buckets with more than
   * `busyTokens` in use (at most `maxBuckets / 4` of them): memory stays
   * bounded, and a client that floods new addresses does not reset its own
   * bucket.
   */
  #lookup(key: BucketKey, now: number): number | undefined {
    const flooded = this.#current.size >= this.#maxBuckets / 2;
    if (flooded || now - this.#generationStart >= GENERATION_MS) {
      const next = new Map<BucketKey, number>();
      if (!flooded) {
        for (const [k, tat] of this.#previous) {
          if (tat > now) next.set(k, tat);
        }
      } else {
        // The fullest buckets go first: those still well in use (the
        // clients the limit is for) are carried over, up to a quarter of
        // the cap, so that flooding new addresses resets no one's bucket.
        const busy = now + this.#busyAt;
        const room = this.#maxBuckets / 4;
        for (const [k, tat] of this.#previous) {
          if (next.size >= room) break;
          if (tat > busy) next.set(k, tat);
        }
      }
      this.#previous = this.#current;
      this.#current = next;
      this.#generationStart = now;
    }
    const tat = this.#current.get(key);
    if (tat !== undefined) return tat;
    const old = this.#previous.get(key);
    if (old !== undefined) {
      this.#previous.delete(key);
      this.#current.set(key, old);
    }
    return old;
  }
}

/**
 * Per-client rate limiting of `POST /api/v1/logs`: the client's address
 * (address.ts), a token bucket per address decided in memory (buckets.ts),
 * and counters that hold the limit across instances sharing one KV
 * (shared.ts). This module composes them into the {@linkcode RateLimiter}
 * that the route admits requests with and that rides the producer's commits.
 *
 * @module
 */
import type { CommitRider } from "../../queue/producer.ts";
import { HttpError } from "../errors.ts";
import { bucketKey, clientBucket } from "./address.ts";
import { Buckets } from "./buckets.ts";
import { SharedCounters } from "./shared.ts";

/** Options of {@linkcode RateLimiter}. */
export interface RateLimiterOptions {
  /** Tokens added per second. */
  rps: number;
  /** Bucket capacity. */
  burst: number;
  /** Trusted proxy hops in `X-Forwarded-For`; 0 ignores the header. @default {0} */
  trustProxy?: number;
  /** Clock. @default {Date.now} */
  now?: () => number;
  /** Length of a counter epoch. @default {60000} */
  epochMs?: number;
  /** Tokens in use from which an IP's requests are counted in KV. @default {5} */
  writeThreshold?: number;
  /** Buckets kept at most; past it the longest idle go first. @default {100000} */
  maxBuckets?: number;
  /** IPs whose counters one sync reads at most. @default {1000} */
  maxSyncKeys?: number;
  /** Busy IPs counted in KV at once at most. @default {20000} */
  maxCounted?: number;
}

/**
 * The error of an address with no token left: answered `429 rate_limited`
 * with the headers that tell the client when to retry.
 *
 * @example
 * ```ts
 * throw rateLimited(2, 50); // Retry-After: 2, RateLimit-Limit: 50
 * ```
 */
export function rateLimited(
  retryAfter: number,
  limit: number,
  remaining = 0,
): HttpError {
  return new HttpError(
    429,
    "rate_limited",
    `Cannot accept more requests from this address now: retry in ${retryAfter} s`,
    undefined,
    {
      "Retry-After": String(retryAfter),
      "RateLimit-Limit": String(limit),
      "RateLimit-Remaining": String(remaining),
      "RateLimit-Reset": String(retryAfter),
    },
  );
}

/**
 * The rate limiter: an `Admission` for the route and a `CommitRider` for the
 * producer.
 *
 * @example
 * ```ts
 * const limiter = new RateLimiter({ rps: 20, burst: 50 });
 * limiter.take("203.0.113.7"); // 0 while the bucket has a token
 * ```
 */
export class RateLimiter implements CommitRider {
  #burst: number;
  #trustProxy: number;
  #buckets: Buckets;
  #counters: SharedCounters;

  constructor(options: RateLimiterOptions) {
    this.#burst = options.burst;
    this.#trustProxy = options.trustProxy ?? 0;
    const counters = new SharedCounters({
      now: options.now,
      epochMs: options.epochMs,
      maxSyncKeys: options.maxSyncKeys,
      maxCounted: options.maxCounted,
    });
    this.#counters = counters;
    this.#buckets = new Buckets({
      rps: options.rps,
      burst: options.burst,
      now: options.now,
      maxBuckets: options.maxBuckets,
      busyTokens: options.writeThreshold,
      onBusy: (key, inUse, now) => counters.count(key, inUse, now),
    });
  }

  /** Buckets held in memory. */
  get size(): number {
    return this.#buckets.size;
  }

  /** Busy addresses whose requests are counted for other instances. */
  get countedSize(): number {
    return this.#counters.size;
  }

  /** The `Admission` of the route: takes a token or throws `429`. */
  admit(req: Request, info: { remoteAddr?: Deno.NetAddr }): void {
    const wait = this.#buckets.take(
      clientBucket(req, info, this.#trustProxy),
    );
    if (wait > 0) throw rateLimited(wait, this.#burst);
  }

  /**
   * Takes a token for client key `key`: returns 0 when admitted, otherwise
   * the whole seconds (at least 1) until a token is available.
   */
  take(key: string): number {
    return this.#buckets.take(bucketKey(key));
  }

  /** Whether counters wait for a commit. */
  pending(): boolean {
    return this.#counters.pending();
  }

  /** Adds the waiting counters (at most `budget`) to a commit. */
  ride(op: Deno.AtomicOperation, budget: number): (ok: boolean) => void {
    return this.#counters.ride(op, budget);
  }

  /**
   * Calls `wake` whenever counters come to wait, or a first busy address to
   * be counted, where none did.
   */
  watch(wake: () => void): void {
    this.#counters.watch(wake);
  }

  /**
   * Reads the counters of the addresses using their bucket and takes from
   * each bucket what other instances admitted since the last sync. Called
   * every few hundred milliseconds by the server while
   * {@linkcode countedSize} is above 0; needs no call on a single instance.
   */
  sync(kv: Deno.Kv): Promise<void> {
    return this.#counters.sync(kv, this.#buckets);
  }

  /** Deletes the counters of epochs no instance adds to any more. */
  cleanup(kv: Deno.Kv): Promise<void> {
    return this.#counters.cleanup(kv);
  }
}

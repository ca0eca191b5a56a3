/**
 * Per-client-IP rate limiting (CONTRACT §3): a token bucket of capacity
 * `burst` refilled at `rps` tokens per second, decided in memory on every
 * POST with no KV round trip.
 *
 * Across instances that share one KV, each IP has an atomic counter per
 * epoch (`rate_limits/<epoch>/<ip>`), summed inside the producer's group
 * commit. Every `syncIntervalMs` an instance reads the counters of the IPs
 * that are using their bucket and takes from its own bucket what the other
 * instances admitted meanwhile. Counters are written only for IPs that have
 * used `writeThreshold` tokens in the epoch, so that the many clients sending
 * a few entries cost no KV writes at all.
 *
 * @module
 */
import { rateLimitEpochPrefix, rateLimitKey } from "../db/keys.ts";
import type { CommitRider } from "../queue/producer.ts";
import { HttpError } from "./errors.ts";

/** How often the older generation of buckets is dropped. */
const GENERATION_MS = 500;

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
  /** Tokens an IP uses in an epoch before its counter is written to KV. @default {5} */
  writeThreshold?: number;
  /** Buckets kept at most; past it the longest idle go first. @default {100000} */
  maxBuckets?: number;
  /** IPs whose counters one sync reads at most. @default {1000} */
  maxSyncKeys?: number;
}

interface Bucket {
  tokens: number;
  /** Time of `tokens`. */
  at: number;
  epoch: number;
  /** Tokens used in `epoch`. */
  used: number;
  /** Counts shared with other instances, once `used` reaches the threshold. */
  shared?: Shared;
}

/** The KV-counted part of a bucket: only for addresses that use their bucket. */
interface Shared {
  /** Used tokens not yet handed to a commit. */
  unsent: number;
  /** Used tokens in a commit in flight. */
  sending: number;
  /** Used tokens committed to KV. */
  sent: number;
  /** Largest count of other instances' tokens seen in the epoch. */
  others: number;
}

/** Thrown when an IP has no token left: answered `429 rate_limited`. */
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
 * limiter.take("203.0.113.7"); // true while the bucket has a token
 * ```
 */
export class RateLimiter implements CommitRider {
  #rps: number;
  #burst: number;
  #trustProxy: number;
  #now: () => number;
  #epochMs: number;
  #threshold: number;
  #maxBuckets: number;
  #maxSyncKeys: number;
  /**
   * Buckets used in the current generation and in the one before. Every
   * {@linkcode GENERATION_MS} the older map is dropped, after the buckets in
   * it that are not full again have been carried into the current one: a full
   * bucket is the same as no bucket. Memory holds the addresses of about the
   * last second plus those still refilling, with no per-request eviction.
   */
  #current = new Map<string, Bucket>();
  #previous = new Map<string, Bucket>();
  #generationStart: number;
  /** IPs with tokens to send in the next commit. */
  #unsent = new Set<string>();
  /** Buckets whose counts are shared in KV this epoch: the ones `sync` reads. */
  #hot = new Map<string, Bucket>();

  constructor(options: RateLimiterOptions) {
    this.#rps = options.rps;
    this.#burst = options.burst;
    this.#trustProxy = options.trustProxy ?? 0;
    this.#now = options.now ?? Date.now;
    this.#epochMs = options.epochMs ?? 60_000;
    this.#threshold = options.writeThreshold ?? 5;
    this.#maxBuckets = options.maxBuckets ?? 100_000;
    this.#maxSyncKeys = options.maxSyncKeys ?? 1000;
    this.#generationStart = this.#now();
  }

  /** Buckets held in memory. */
  get size(): number {
    return this.#current.size + this.#previous.size;
  }

  /** The `Admission` of the route: takes a token or throws `429`. */
  admit(req: Request, info: { remoteAddr?: Deno.NetAddr }): void {
    const ip = clientKey(req, info.remoteAddr, this.#trustProxy);
    const wait = this.take(ip);
    if (wait > 0) throw rateLimited(wait, this.#burst);
  }

  /**
   * Takes a token for client key `ip`: returns 0 when admitted, otherwise the
   * whole seconds (at least 1) until a token is available.
   */
  take(ip: string): number {
    const now = this.#now();
    const epoch = Math.floor(now / this.#epochMs);
    let bucket = this.#lookup(ip, now);
    if (bucket === undefined) {
      bucket = { tokens: this.#burst, at: now, epoch, used: 0 };
      this.#current.set(ip, bucket);
    } else {
      this.#refill(bucket, now);
      if (bucket.epoch !== epoch) {
        bucket.epoch = epoch;
        bucket.used = 0;
        delete bucket.shared;
        this.#unsent.delete(ip);
        this.#hot.delete(ip);
      }
    }
    if (bucket.tokens < 1) {
      return Math.max(1, Math.ceil((1 - bucket.tokens) / this.#rps));
    }
    bucket.tokens -= 1;
    bucket.used++;
    if (bucket.used === this.#threshold) {
      bucket.shared = { unsent: bucket.used, sending: 0, sent: 0, others: 0 };
      this.#hot.set(ip, bucket);
      this.#unsent.add(ip);
    } else if (bucket.shared) {
      bucket.shared.unsent++;
      this.#unsent.add(ip);
    }
    return 0;
  }

  /** Whether counters wait for a commit. */
  pending(): boolean {
    return this.#unsent.size > 0;
  }

  /** Adds the waiting counters (at most `budget`) to a commit. */
  ride(op: Deno.AtomicOperation, budget: number): (ok: boolean) => void {
    const riding: [string, Shared, number][] = [];
    for (const ip of this.#unsent) {
      if (riding.length >= budget) break;
      this.#unsent.delete(ip);
      const bucket = this.#hot.get(ip);
      const shared = bucket?.shared;
      if (bucket === undefined || shared === undefined || shared.unsent === 0) {
        continue;
      }
      const n = shared.unsent;
      op.sum(rateLimitKey(bucket.epoch, ip), BigInt(n));
      shared.unsent = 0;
      shared.sending += n;
      riding.push([ip, shared, n]);
    }
    return (ok) => {
      for (const [ip, shared, n] of riding) {
        shared.sending -= n;
        if (ok) shared.sent += n;
        else {
          shared.unsent += n;
          this.#unsent.add(ip);
        }
      }
    };
  }

  /**
   * Reads the counters of the IPs using their bucket and takes from each
   * bucket what other instances admitted since the last sync. Called every
   * `syncIntervalMs` by the server; needs no call on a single instance.
   */
  async sync(kv: Deno.Kv): Promise<void> {
    const now = this.#now();
    const epoch = Math.floor(now / this.#epochMs);
    const hot: [string, Bucket][] = [];
    for (const [ip, bucket] of this.#hot) {
      const held = this.#current.get(ip) ?? this.#previous.get(ip);
      if (bucket.epoch !== epoch || held !== bucket) this.#hot.delete(ip);
      else hot.push([ip, bucket]);
    }
    hot.sort((a, b) => a[1].tokens - b[1].tokens);
    hot.length = Math.min(hot.length, this.#maxSyncKeys);
    const reads = [];
    for (let i = 0; i < hot.length; i += 10) {
      const chunk = hot.slice(i, i + 10);
      reads.push(
        kv.getMany<Deno.KvU64[]>(
          chunk.map(([ip]) => rateLimitKey(epoch, ip)),
        ).then((entries) => {
          chunk.forEach(([, bucket], j) => {
            const shared = bucket.shared;
            if (bucket.epoch !== epoch || shared === undefined) return;
            const total = Number(entries[j]?.value?.value ?? 0n);
            // What this instance may have in the total: sent and in flight.
            const others = total - shared.sent - shared.sending;
            if (others > shared.others) {
              bucket.tokens -= others - shared.others;
              shared.others = others;
            }
          });
        }),
      );
    }
    await Promise.all(reads);
  }

  /** Deletes the counters of epochs that ended before the previous one. */
  async cleanup(kv: Deno.Kv): Promise<void> {
    const epoch = Math.floor(this.#now() / this.#epochMs);
    for (const old of [epoch - 2, epoch - 3]) {
      for (;;) {
        const op = kv.atomic();
        let n = 0;
        for await (
          const entry of kv.list({ prefix: rateLimitEpochPrefix(old) }, {
            limit: 500,
          })
        ) {
          op.delete(entry.key);
          n++;
        }
        if (n === 0) break;
        await op.commit();
      }
    }
  }

  #refill(bucket: Bucket, now: number): void {
    if (now > bucket.at) {
      bucket.tokens = Math.min(
        this.#burst,
        bucket.tokens + (now - bucket.at) * this.#rps / 1000,
      );
      bucket.at = now;
    }
  }

  /**
   * Finds the bucket of `ip`, moving it into the current generation. Starts a
   * new generation every {@linkcode GENERATION_MS}, or early when the current
   * one holds `maxBuckets / 2` buckets; under such a flood of addresses the
   * older generation is dropped whole, full or not: the price of bounded
   * memory.
   */
  #lookup(ip: string, now: number): Bucket | undefined {
    const full = this.#current.size >= this.#maxBuckets / 2;
    if (full || now - this.#generationStart >= GENERATION_MS) {
      const next = new Map<string, Bucket>();
      if (!full) {
        for (const [key, bucket] of this.#previous) {
          this.#refill(bucket, now);
          if (bucket.tokens < this.#burst || bucket.shared) {
            next.set(key, bucket);
          }
        }
      }
      this.#previous = this.#current;
      this.#current = next;
      this.#generationStart = now;
    }
    const bucket = this.#current.get(ip);
    if (bucket !== undefined) return bucket;
    const old = this.#previous.get(ip);
    if (old !== undefined) {
      this.#previous.delete(ip);
      this.#current.set(ip, old);
    }
    return old;
  }
}

/**
 * The key a client is limited under: its IPv4 address, or the /64 prefix of
 * its IPv6 address. The peer address, unless `trustProxy` hops are trusted,
 * in which case the address those proxies saw, from `X-Forwarded-For`.
 */
export function clientKey(
  req: Request,
  peer: Deno.NetAddr | undefined,
  trustProxy: number,
): string {
  const address = peer?.hostname ?? "unknown";
  if (trustProxy > 0) {
    const header = req.headers.get("x-forwarded-for");
    if (header !== null) {
      const candidate = trustProxy === 1
        ? header.slice(header.lastIndexOf(",") + 1).trim()
        : header.split(",").at(-trustProxy)?.trim() ??
          header.split(",")[0]!.trim();
      const key = ipKey(candidate);
      if (key !== null) return key;
    }
  }
  return ipKey(address) ?? address;
}

const OCTET = "(?:25[0-5]|2[0-4]\\d|1\\d\\d|[1-9]?\\d)";
const IPV4 = new RegExp(`^${OCTET}(?:\\.${OCTET}){3}$`);

/**
 * Normalizes an IP address to its limiting key: IPv4 as is, IPv6 as its
 * first four groups (the /64), IPv4-mapped IPv6 as IPv4. `null` when the
 * text is not an IP address.
 *
 * @example
 * ```ts
 * ipKey("2001:db8:1:2:3:4:5:6"); // "2001:db8:1:2::/64"
 * ```
 */
export function ipKey(text: string): string | null {
  if (IPV4.test(text)) return text;
  let address = text.startsWith("[") && text.endsWith("]")
    ? text.slice(1, -1)
    : text;
  address = address.split("%")[0]!.toLowerCase();
  if (!/^[0-9a-f:.]+$/.test(address) || !address.includes(":")) return null;
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/.exec(address);
  if (mapped) return ipKey(mapped[1]!);
  const halves = address.split("::");
  if (halves.length > 2) return null;
  const head = halves[0] ? halves[0].split(":") : [];
  const tail = halves.length === 2 && halves[1] ? halves[1].split(":") : [];
  if (tail.at(-1)?.includes(".")) tail.splice(-1, 1, "0", "0");
  const missing = 8 - head.length - tail.length;
  if (missing < 0 || (halves.length === 1 && missing !== 0)) return null;
  const groups = [...head, ...Array(missing).fill("0"), ...tail];
  if (!groups.every((g) => /^[0-9a-f]{1,4}$/.test(g))) return null;
  return groups.slice(0, 4).map((g) => parseInt(g, 16).toString(16)).join(":") +
    "::/64";
}

/**
 * Per-client-IP rate limiting (CONTRACT §3): a token bucket of capacity
 * `burst` refilled at `rps` tokens per second, decided in memory on every
 * POST with no KV round trip.
 *
 * The bucket is kept in its GCRA form: one number per address, the
 * theoretical arrival time (TAT) of its next request. An address may send when
 * its TAT is at most `(burst - 1) / rps` ahead of now, and each request moves
 * the TAT on by `1 / rps`; a TAT in the past is a full bucket. One number
 * instead of an object per address keeps memory and garbage small under a
 * flood of distinct addresses.
 *
 * Across instances that share one KV, each IP has an atomic counter per
 * epoch (`rate_limits/<epoch>/<ip>`), summed inside the producer's group
 * commit. Every `syncIntervalMs` an instance reads the counters of the IPs
 * that are using their bucket and takes from its own bucket what the other
 * instances admitted meanwhile. Counters are written only for IPs with at
 * least `writeThreshold` tokens in use, so that the many clients sending a few
 * entries cost no KV writes at all.
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
  /** Tokens in use from which an IP's requests are counted in KV. @default {5} */
  writeThreshold?: number;
  /** Buckets kept at most; past it the longest idle go first. @default {100000} */
  maxBuckets?: number;
  /** IPs whose counters one sync reads at most. @default {1000} */
  maxSyncKeys?: number;
}

/** The KV-counted state of an address that uses its bucket, for one epoch. */
interface Shared {
  epoch: number;
  /** Admitted requests not yet handed to a commit. */
  unsent: number;
  /** Admitted requests in a commit in flight. */
  sending: number;
  /** Admitted requests committed to KV. */
  sent: number;
  /** Largest count of other instances' requests seen in the epoch. */
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
 * limiter.take("203.0.113.7"); // 0 while the bucket has a token
 * ```
 */
export class RateLimiter implements CommitRider {
  #burst: number;
  #trustProxy: number;
  #now: () => number;
  #epochMs: number;
  #maxBuckets: number;
  #maxSyncKeys: number;
  /** Milliseconds per token. */
  #interval: number;
  /** How far ahead of now a TAT may be for a request to pass. */
  #tolerance: number;
  /** How far ahead of now a TAT is when `writeThreshold` tokens are in use. */
  #hotAt: number;
  /**
   * TATs of the addresses seen in the current generation and the one before.
   * Every {@linkcode GENERATION_MS} the older map is dropped, after the
   * addresses in it whose bucket is still refilling (TAT ahead of now) have
   * been carried into the current one: a full bucket is the same as none.
   */
  #current = new Map<string, number>();
  #previous = new Map<string, number>();
  #generationStart: number;
  /** Addresses whose requests are counted in KV this epoch. */
  #shared = new Map<string, Shared>();
  /** Addresses with counts to send in the next commit. */
  #unsent = new Set<string>();

  constructor(options: RateLimiterOptions) {
    this.#burst = options.burst;
    this.#trustProxy = options.trustProxy ?? 0;
    this.#now = options.now ?? Date.now;
    this.#epochMs = options.epochMs ?? 60_000;
    this.#maxBuckets = options.maxBuckets ?? 100_000;
    this.#maxSyncKeys = options.maxSyncKeys ?? 1000;
    this.#interval = 1000 / options.rps;
    this.#tolerance = (options.burst - 1) * this.#interval;
    this.#hotAt = (options.writeThreshold ?? 5) * this.#interval;
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
    const tat = Math.max(this.#lookup(ip, now) ?? now, now);
    const ahead = tat - now;
    if (ahead > this.#tolerance) {
      return Math.max(1, Math.ceil((ahead - this.#tolerance) / 1000));
    }
    this.#current.set(ip, tat + this.#interval);
    if (ahead + this.#interval >= this.#hotAt) this.#count(ip, now, ahead);
    return 0;
  }

  /** Counts an admitted request of a busy address for the next commit. */
  #count(ip: string, now: number, ahead: number): void {
    const epoch = Math.floor(now / this.#epochMs);
    let shared = this.#shared.get(ip);
    if (shared === undefined || shared.epoch !== epoch) {
      // Becoming busy: count the tokens already in use with this request.
      shared = {
        epoch,
        unsent: Math.round(ahead / this.#interval),
        sending: 0,
        sent: 0,
        others: 0,
      };
      this.#shared.set(ip, shared);
    }
    shared.unsent++;
    this.#unsent.add(ip);
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
      const shared = this.#shared.get(ip);
      if (shared === undefined || shared.unsent === 0) continue;
      const n = shared.unsent;
      op.sum(rateLimitKey(shared.epoch, ip), BigInt(n));
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
    const busy: [string, Shared, number][] = [];
    for (const [ip, shared] of this.#shared) {
      const tat = this.#current.get(ip) ?? this.#previous.get(ip);
      if (shared.epoch !== epoch || tat === undefined) {
        if (shared.unsent === 0 && shared.sending === 0) {
          this.#shared.delete(ip);
        }
      } else busy.push([ip, shared, tat]);
    }
    // The busiest first: the furthest TAT has the fewest tokens left.
    busy.sort((a, b) => b[2] - a[2]);
    busy.length = Math.min(busy.length, this.#maxSyncKeys);
    const reads = [];
    for (let i = 0; i < busy.length; i += 10) {
      const chunk = busy.slice(i, i + 10);
      reads.push(
        kv.getMany<Deno.KvU64[]>(
          chunk.map(([ip]) => rateLimitKey(epoch, ip)),
        ).then((entries) => {
          chunk.forEach(([ip, shared], j) => {
            if (shared.epoch !== epoch) return;
            const total = Number(entries[j]?.value?.value ?? 0n);
            // What this instance may have in the total: sent and in flight.
            const others = total - shared.sent - shared.sending;
            if (others <= shared.others) return;
            const taken = (others - shared.others) * this.#interval;
            shared.others = others;
            const tat = this.#lookup(ip, this.#now());
            if (tat !== undefined) {
              this.#current.set(ip, Math.max(tat, this.#now()) + taken);
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

  /**
   * Finds the TAT of `ip`, moving it into the current generation. Starts a
   * new generation every {@linkcode GENERATION_MS}, or early when the current
   * one holds `maxBuckets / 2` addresses; under such a flood of addresses the
   * older generation is dropped whole, full or not: the price of bounded
   * memory.
   */
  #lookup(ip: string, now: number): number | undefined {
    const flooded = this.#current.size >= this.#maxBuckets / 2;
    if (flooded || now - this.#generationStart >= GENERATION_MS) {
      const next = new Map<string, number>();
      if (!flooded) {
        for (const [key, tat] of this.#previous) {
          if (tat > now) next.set(key, tat);
        }
      }
      this.#previous = this.#current;
      this.#current = next;
      this.#generationStart = now;
    }
    const tat = this.#current.get(ip);
    if (tat !== undefined) return tat;
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

/**
 * What every dashboard answer carries and every request passes: security
 * headers with a Content-Security-Policy that runs only the scripts marked
 * with this answer's nonce (and the modules they import); the refusal (`403`)
 * of any state-changing request sent from another origin; the refusal of a
 * `Host` the dashboard does not serve; a body read only up to a limit and
 * within a time; and the limit on sign-in attempts per address, per network
 * and, for those that cost a password hash, in all (shared out by turns).
 *
 * @module
 */
import { randomToken } from "./session.ts";

/** Methods that change nothing, so they need no origin check. */
const SAFE_METHODS = new Set(["GET", "HEAD", "OPTIONS"]);

/**
 * A fresh nonce for one answer's scripts.
 *
 * @example
 * ```ts
 * const nonce = createNonce(); // 22 URL-safe characters
 * ```
 */
export function createNonce(): string {
  // base64url: every one of the 128 random bits kept, never "=".
  return randomToken(16);
}

/**
 * The Content-Security-Policy of a page: scripts only from this answer's
 * nonce (`'strict-dynamic'` lets them import the app's other modules), styles
 * and images only from the app, no plugins, no framing, forms only to the app.
 *
 * @example
 * ```ts
 * contentSecurityPolicy("abc"); // "default-src 'none'; script-src 'nonce-abc' 'strict-dynamic'; ..."
 * ```
 */
export function contentSecurityPolicy(nonce: string): string {
  return [
    "default-src 'none'",
    `script-src 'nonce-${nonce}' 'strict-dynamic'`,
    "style-src 'self'",
    "img-src 'self' data:",
    "connect-src 'self'",
    "form-action 'self'",
    "frame-ancestors 'none'",
    "base-uri 'none'",
    "object-src 'none'",
  ].join("; ");
}

/** Headers added to every dashboard answer. */
export function securityHeaders(
  nonce: string,
  https: boolean,
): Record<string, string> {
  return {
    "Content-Security-Policy": contentSecurityPolicy(nonce),
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "same-origin",
    "Cross-Origin-Opener-Policy": "same-origin",
    "Cross-Origin-Resource-Policy": "same-origin",
    "Permissions-Policy": "camera=(), microphone=(), geolocation=()",
    ...(https ? { "Strict-Transport-Security": "max-age=31536000" } : {}),
  };
}

/**
 * Whether the request arrived over HTTPS, directly or through a proxy that
 * says so (`X-Forwarded-Proto`): the session cookie is then `Secure`.
 */
export function isHttps(req: Request): boolean {
  return new URL(req.url).protocol === "https:" ||
    req.headers.get("x-forwarded-proto")?.split(",")[0]?.trim() === "https";
}

/**
 * Why a request must be refused as coming from another origin, or `null`
 * when it may proceed. Safe methods always proceed. Otherwise the browser's
 * `Sec-Fetch-Site` must say `same-origin`, and an `Origin` header must name
 * this host (the scheme is not compared, so that a TLS-terminating proxy in
 * front works). A request with neither header comes from no browser; it
 * still needs the form's CSRF token.
 *
 * @example
 * ```ts
 * crossOriginRefusal(new Request("http://a/x", { method: "POST", headers: { Origin: "http://b" } }));
 * // "Cannot accept a change sent from \"http://b\": expected this dashboard's own origin"
 * ```
 */
export function crossOriginRefusal(req: Request): string | null {
  if (SAFE_METHODS.has(req.method)) return null;
  const site = req.headers.get("sec-fetch-site");
  if (site !== null && site !== "same-origin") {
    return `Cannot accept a change sent from another site (Sec-Fetch-Site: ${site})`;
  }
  const origin = req.headers.get("origin");
  if (origin !== null) {
    const host = req.headers.get("host") ?? new URL(req.url).host;
    let originHost: string | null = null;
    try {
      originHost = origin === "null" ? null : new URL(origin).host;
    } catch { /* not a URL: refused below */ }
    if (originHost !== host) {
      return `Cannot accept a change sent from "${origin}": expected this dashboard's own origin`;
    }
  }
  return null;
}

/** Options of {@linkcode LoginLimiter}. */
export interface LoginLimiterOptions {
  /** Attempts an address (an IPv6 /64) may make at once. @default {5} */
  burst?: number;
  /** Time for one more attempt of an address to become available. @default {12000} */
  refillMs?: number;
  /**
   * Attempts the addresses of one network (an IPv4 /24, an IPv6 /48) may
   * make at once; never fewer than `burst`. @default {20}
   */
  networkBurst?: number;
  /**
   * Time for one more attempt of a network to become available; never more
   * than `refillMs`. @default {6000}
   */
  networkRefillMs?: number;
  /**
   * Attempts that cost a password hash all networks together may make at
   * once, the ceiling against hashing; never fewer than `networkBurst`.
   * @default {300}
   */
  totalBurst?: number;
  /**
   * Time for one more attempt that costs a hash, of all networks together;
   * never more than `networkRefillMs`. @default {200}
   */
  totalRefillMs?: number;
  /**
   * Addresses remembered at most, and networks remembered at most; past it
   * the oldest are forgotten. @default {10000}
   */
  maxAddresses?: number;
  /** Clock. @default {Date.now} */
  now?: () => number;
}

/** The 8 groups of an IPv6 address, lower case, `::` expanded. */
function ipv6Groups(plain: string): string[] {
  const [head = "", tail = ""] = plain.toLowerCase().split("::");
  const left = head === "" ? [] : head.split(":");
  if (!plain.includes("::")) return left;
  const right = tail === "" ? [] : tail.split(":");
  return [
    ...left,
    ...Array(Math.max(0, 8 - left.length - right.length)).fill("0"),
    ...right,
  ];
}

/**
 * An address without brackets or zone; an IPv4-mapped IPv6 address
 * (`::ffff:a.b.c.d`) as its IPv4 address.
 */
function plainAddress(address: string): string {
  const plain = address.replace(/^\[|\]$/g, "").replace(/%.*$/, "");
  const mapped = /^(?:0{0,4}:){0,5}(?:0{0,4}:)?ffff:(\d+\.\d+\.\d+\.\d+)$/i
    .exec(plain);
  return mapped ? mapped[1]! : plain;
}

/** The first `count` groups of an IPv6 address, as a prefix of `bits`. */
function ipv6Prefix(plain: string, count: number, bits: number): string {
  const prefix = ipv6Groups(plain).slice(0, count)
    .map((g) => g.replace(/^0+(?=.)/, ""));
  while (prefix.length < count) prefix.push("0");
  return `${prefix.join(":")}::/${bits}`;
}

/**
 * What one sign-in address counts as: an IPv4 address itself (also when
 * written IPv4-mapped, `::ffff:a.b.c.d`), an IPv6 address its /64 (the
 * block one subscriber holds, so that rotating through it gains nothing).
 *
 * @example
 * ```ts
 * addressBucket("2001:db8:1:2::99"); // "2001:db8:1:2::/64"
 * addressBucket("198.51.100.9"); // "198.51.100.9"
 * ```
 */
export function addressBucket(address: string): string {
  const plain = plainAddress(address);
  return plain.includes(":") ? ipv6Prefix(plain, 4, 64) : plain;
}

/**
 * What one sign-in network counts as: an IPv4 address its /24, an IPv6
 * address its /48 (the block one site is given, 65,536 /64s), so that the
 * addresses one holder can rotate through share one bucket. Anything else
 * (no address known) counts as itself.
 *
 * @example
 * ```ts
 * networkBucket("2001:db8:1:2::99"); // "2001:db8:1::/48"
 * networkBucket("198.51.100.9"); // "198.51.100.0/24"
 * ```
 */
export function networkBucket(address: string): string {
  const plain = plainAddress(address);
  if (plain.includes(":")) return ipv6Prefix(plain, 3, 48);
  const v4 = /^(\d+\.\d+\.\d+)\.\d+$/.exec(plain);
  return v4 ? `${v4[1]}.0/24` : plain;
}

/**
 * A bucket of `burst` attempts refilling one every `refillMs`, kept in GCRA
 * form: per key, the moment it will be full again.
 */
class Buckets {
  readonly #full = new Map<string, number>();
  constructor(
    readonly burst: number,
    readonly refillMs: number,
    readonly max: number,
  ) {}

  get size(): number {
    return this.#full.size;
  }

  /**
   * When `key` is full again after one more attempt, and the seconds to
   * wait for that attempt first (`0`: allowed now).
   */
  peek(key: string, now: number): { next: number; wait: number } {
    const next = Math.max(this.#full.get(key) ?? now, now) + this.refillMs;
    return { next, wait: waitSeconds(next - now, this.burst * this.refillMs) };
  }

  /** Records the attempt `peek` allowed; the oldest key goes past `max`. */
  commit(key: string, next: number): void {
    this.#full.delete(key);
    if (this.#full.size >= this.max) {
      this.#full.delete(this.#full.keys().next().value!);
    }
    this.#full.set(key, next);
  }
}

/** What {@linkcode LoginLimiter.take} is told of an attempt. */
export interface LoginAttempt {
  /**
   * Whether checking it costs a password hash (scrypt): a stored account's
   * password, or an email that names no account. The built-in account's
   * check is one SHA-256 and takes nothing from the ceiling.
   * @default {true}
   */
  hashes?: boolean;
}

/**
 * Sign-in attempts, counted per client address (an IPv6 /64, see
 * {@linkcode addressBucket}) 5 at once, then one per 12 s, and per network
 * (an IPv4 /24 or IPv6 /48, see {@linkcode networkBucket}) 20 at once, then
 * one per 6 s; an attempt that costs a password hash also takes one from
 * the ceiling of all networks together, 300 at once, then one per 200 ms,
 * shared out by turns. All must allow it. Kept in memory, per process; at
 * most `maxAddresses` addresses and as many networks are remembered (the
 * oldest are forgotten first).
 *
 * The numbers come from what an attempt costs: a wrong password for an
 * account is one scrypt hash, 0.2 s to 0.4 s of one core (0.4 s of CPU
 * time measured on a busy two-core machine), and at most two run at once
 * (`MAX_CONCURRENT_HASHES`), so the process hashes about 5 attempts a
 * second. The ceiling refills at that rate, so that the queue of attempts
 * waiting for a hash never grows faster than it drains; its 300 at once
 * are 60 s of both hashes' work. One network refills at a thirtieth of
 * that (one hash per 6 s, 7% of one core): however many addresses it
 * rotates through (a /48 holds 65,536 /64s), one network holds at most a
 * thirtieth of the ceiling. Its 20 at once let a shared office or NAT sign
 * in side by side. The built-in account's password is compared through
 * SHA-256 alone, so its attempts are counted per address and per network
 * only: no number of guessers can spend the administrator's way in.
 *
 * Turns: a network may spend the last `totalBurst - networkBurst` (280) of
 * the ceiling only when it is its turn, that is when it had no attempt
 * that cost a hash for the time the ceiling takes to refill whole (60 s);
 * otherwise it waits for its turn or for the ceiling to refill to within
 * `networkBurst` (20) of full. Each network thus takes at most one of those
 * 280 a minute while the ceiling refills 300: fewer than 279 networks
 * taking turns in a minute can never empty it, however they time their
 * attempts, and a network that has not been guessing finds an attempt
 * left; with more, every network gets one a minute, an equal share,
 * instead of the quickest taking them all. A network alone, within its own
 * 20, never meets the rule.
 *
 * @example
 * ```ts
 * const limiter = new LoginLimiter();
 * limiter.take("198.51.100.9"); // 0: allowed
 * limiter.take("198.51.100.9", { hashes: false }); // 0: the built-in account
 * ```
 */
export class LoginLimiter {
  #address: Buckets;
  #network: Buckets;
  #total: Buckets;
  /** Per network, when its next turn comes. */
  #turns: Buckets;
  #now: () => number;

  constructor(options: LoginLimiterOptions = {}) {
    const max = options.maxAddresses ?? 10_000;
    // A wider bucket never allows less than a narrower one it contains.
    this.#address = new Buckets(
      options.burst ?? 5,
      options.refillMs ?? 12_000,
      max,
    );
    this.#network = new Buckets(
      Math.max(options.networkBurst ?? 20, this.#address.burst),
      Math.min(options.networkRefillMs ?? 6_000, this.#address.refillMs),
      max,
    );
    this.#total = new Buckets(
      Math.max(options.totalBurst ?? 300, this.#network.burst),
      Math.min(options.totalRefillMs ?? 200, this.#network.refillMs),
      1,
    );
    this.#turns = new Buckets(
      1,
      this.#total.burst * this.#total.refillMs,
      max,
    );
    this.#now = options.now ?? Date.now;
  }

  /** Addresses remembered now. */
  get size(): number {
    return this.#address.size;
  }

  /** Networks remembered now. */
  get networks(): number {
    return this.#network.size;
  }

  /**
   * Takes one attempt for `address`: `0` when allowed, else the seconds to
   * wait before the next one. A refused attempt takes nothing.
   */
  take(address: string, attempt: LoginAttempt = {}): number {
    const now = this.#now();
    const network = networkBucket(address);
    const keys = [addressBucket(address), network];
    const buckets = [this.#address, this.#network];
    if (attempt.hashes ?? true) {
      keys.push("");
      buckets.push(this.#total);
    }
    const seen = buckets.map((bucket, i) => bucket.peek(keys[i]!, now));
    const wait = Math.max(
      ...seen.map((s) => s.wait),
      this.#turnWait(network, seen[2], now),
    );
    if (wait > 0) return wait;
    buckets.forEach((bucket, i) => bucket.commit(keys[i]!, seen[i]!.next));
    if (seen[2] !== undefined) {
      this.#turns.commit(network, now + this.#turns.refillMs);
    }
    return 0;
  }

  /**
   * Seconds `network` waits for its share of the ceiling: `0` when no hash
   * is asked for (`total` absent), when the ceiling stays within
   * `networkBurst` of full after this attempt, or when it is the network's
   * turn; else until its turn or that refill, whichever comes first.
   */
  #turnWait(
    network: string,
    total: { next: number } | undefined,
    now: number,
  ): number {
    if (total === undefined) return 0;
    const past = total.next - now -
      this.#network.burst * this.#total.refillMs;
    if (past <= 0) return 0;
    const turn = this.#turns.peek(network, now).wait;
    return turn === 0 ? 0 : Math.max(1, Math.min(turn, Math.ceil(past / 1000)));
  }
}

/** Seconds to wait for a bucket `ahead` ms from full whose size is `span` ms. */
function waitSeconds(ahead: number, span: number): number {
  return ahead > span ? Math.max(1, Math.ceil((ahead - span) / 1000)) : 0;
}

/**
 * The address a sign-in attempt counts against: the socket's peer, or with
 * `trustProxy` hops, the address the outermost trusted proxy saw.
 */
export function clientAddress(
  req: Request,
  peer: Deno.NetAddr | undefined,
  trustProxy: number,
): string {
  if (trustProxy > 0) {
    const hops = req.headers.get("x-forwarded-for")?.split(",")
      .map((s) => s.trim()).filter((s) => s !== "");
    const seen = hops?.at(-trustProxy) ?? hops?.[0];
    if (seen) return seen;
  }
  return peer?.hostname ?? "unknown";
}

/** Host names every dashboard answers at, whatever its settings: loopback. */
const LOOPBACK_HOSTS = new Set(["localhost", "127.0.0.1", "[::1]"]);

/**
 * The host name of a `Host` header (or URL host), lower case, without its
 * port; `null` when it is not a plausible host.
 *
 * @example
 * ```ts
 * hostName("LocalHost:8001"); // "localhost"
 * hostName("[::1]:8001"); // "[::1]"
 * ```
 */
export function hostName(host: string): string | null {
  const text = host.trim().toLowerCase();
  const match = /^(\[[0-9a-f:.]+\]|[a-z0-9._-]+)(?::\d{1,5})?$/.exec(text);
  return match ? match[1]!.replace(/\.$/, "") : null;
}

/**
 * Why a request must be refused as addressed to a host this dashboard does
 * not serve, or `null` when it may proceed. A page of another site whose
 * name was made to resolve to this machine (DNS rebinding) sends its own
 * name as `Host`; only loopback names (any port) and the configured public
 * hosts (`DASHBOARD_PUBLIC_HOST`) are served.
 *
 * @example
 * ```ts
 * hostRefusal(new Request("http://evil.example/"), []);
 * // "Cannot serve \"evil.example\": this dashboard answers at localhost, 127.0.0.1, [::1] only (set DASHBOARD_PUBLIC_HOST to add its public name)"
 * ```
 */
export function hostRefusal(
  req: Request,
  publicHosts: readonly string[],
): string | null {
  const header = req.headers.get("host") ?? new URL(req.url).host;
  const name = hostName(header);
  if (
    name !== null && (LOOPBACK_HOSTS.has(name) || publicHosts.includes(name))
  ) {
    return null;
  }
  const served = [...LOOPBACK_HOSTS, ...publicHosts].join(", ");
  return `Cannot serve "${
    header.slice(0, 100)
  }": this dashboard answers at ${served} only (set DASHBOARD_PUBLIC_HOST to add its public name)`;
}

/** Time a request's body may take to arrive whole, by default. */
export const BODY_TIME_MS = 10_000;

/** Thrown by {@linkcode readBodyWithin} when a body is not whole in time. */
export class BodyTimeoutError extends Error {
  override name = "BodyTimeoutError";
}

/** Thrown by {@linkcode readBodyWithin} when a body ends before it is whole. */
export class BodyIncompleteError extends Error {
  override name = "BodyIncompleteError";
}

/**
 * Reads a request's body, at most `limit` bytes within `timeMs`: the bytes,
 * or `null` as soon as the body declares or turns out to be longer (the
 * rest is never read, and the stream is cancelled). Forms are small; a
 * 200 MB body posted to a form must cost no more than its first `limit`
 * bytes, and one that trickles must not hold them longer than `timeMs`
 * ({@linkcode BodyTimeoutError}). A body its client cuts short throws
 * {@linkcode BodyIncompleteError}.
 *
 * @example
 * ```ts
 * const bytes = await readBodyWithin(req, 64 * 1024);
 * if (bytes === null) return new Response("Too large", { status: 413 });
 * ```
 */
export async function readBodyWithin(
  req: Request,
  limit: number,
  timeMs: number = BODY_TIME_MS,
): Promise<Uint8Array<ArrayBuffer> | null> {
  const declared = req.headers.get("content-length");
  if (declared !== null && !(Number(declared) <= limit)) {
    await req.body?.cancel().catch(() => {});
    return null;
  }
  if (req.body === null) return new Uint8Array(0);
  const reader = req.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () =>
        reject(
          new BodyTimeoutError(
            `Cannot read the body: not whole within ${timeMs} ms`,
          ),
        ),
      timeMs,
    );
  });
  late.catch(() => {});
  try {
    for (;;) {
      let step: ReadableStreamReadResult<Uint8Array>;
      try {
        step = await Promise.race([reader.read(), late]);
      } catch (error) {
        await reader.cancel().catch(() => {});
        if (error instanceof BodyTimeoutError) throw error;
        throw new BodyIncompleteError(
          "Cannot read the body: it ended before it was whole",
          { cause: error },
        );
      }
      if (step.done) break;
      size += step.value.byteLength;
      if (size > limit) {
        await reader.cancel().catch(() => {});
        return null;
      }
      chunks.push(step.value);
    }
  } finally {
    clearTimeout(timer);
  }
  const bytes = new Uint8Array(size);
  let at = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, at);
    at += chunk.byteLength;
  }
  return bytes;
}

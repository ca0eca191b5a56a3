/**
 * What every dashboard answer carries and every request passes: security
 * headers with a Content-Security-Policy that runs only the scripts marked
 * with this answer's nonce (and the modules they import); the refusal (`403`)
 * of any state-changing request sent from another origin; the refusal of a
 * `Host` the dashboard does not serve; a body read only up to a limit and
 * within a time; and
 * the per-address limit on sign-in attempts.
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
  /** Attempts all addresses together may make at once. @default {60} */
  totalBurst?: number;
  /** Time for one more attempt of all addresses together. @default {1000} */
  totalRefillMs?: number;
  /** Addresses remembered at most; past it the oldest are forgotten. @default {10000} */
  maxAddresses?: number;
  /** Clock. @default {Date.now} */
  now?: () => number;
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
  const plain = address.replace(/^\[|\]$/g, "").replace(/%.*$/, "");
  if (!plain.includes(":")) return plain;
  const mapped = /^(?:0{0,4}:){0,5}(?:0{0,4}:)?ffff:(\d+\.\d+\.\d+\.\d+)$/i
    .exec(plain);
  if (mapped) return mapped[1]!;
  const [head = "", tail = ""] = plain.toLowerCase().split("::");
  const left = head === "" ? [] : head.split(":");
  const right = plain.includes("::")
    ? (tail === "" ? [] : tail.split(":"))
    : [];
  const groups = plain.includes("::")
    ? [
      ...left,
      ...Array(Math.max(0, 8 - left.length - right.length)).fill("0"),
      ...right,
    ]
    : left;
  const prefix = groups.slice(0, 4).map((g) => g.replace(/^0+(?=.)/, ""));
  while (prefix.length < 4) prefix.push("0");
  return `${prefix.join(":")}::/64`;
}

/**
 * Sign-in attempts: per client address (an IPv6 /64, see
 * {@linkcode addressBucket}) a bucket of `burst` attempts that refills one
 * every `refillMs`, and one bucket for all addresses together (`totalBurst`,
 * `totalRefillMs`), the ceiling that bounds the hashing a spread-out guesser
 * can cause. GCRA form: one time per bucket, the moment it will be full
 * again. Kept in memory, per process; at most `maxAddresses` addresses are
 * remembered (the oldest are forgotten first).
 */
export class LoginLimiter {
  #burst: number;
  #refillMs: number;
  #totalBurst: number;
  #totalRefillMs: number;
  #max: number;
  #now: () => number;
  #full = new Map<string, number>();
  #totalFull = 0;

  constructor(options: LoginLimiterOptions = {}) {
    this.#burst = options.burst ?? 5;
    this.#refillMs = options.refillMs ?? 12_000;
    this.#totalBurst = options.totalBurst ?? 60;
    this.#totalRefillMs = options.totalRefillMs ?? 1_000;
    this.#max = options.maxAddresses ?? 10_000;
    this.#now = options.now ?? Date.now;
  }

  /** Addresses remembered now. */
  get size(): number {
    return this.#full.size;
  }

  /**
   * Takes one attempt for `address`: `0` when allowed, else the seconds to
   * wait before the next one.
   */
  take(address: string): number {
    const now = this.#now();
    const bucket = addressBucket(address);
    const full = Math.max(this.#full.get(bucket) ?? now, now);
    const next = full + this.#refillMs;
    const wait = waitSeconds(next - now, this.#burst * this.#refillMs);
    const totalNext = Math.max(this.#totalFull, now) + this.#totalRefillMs;
    const totalWait = waitSeconds(
      totalNext - now,
      this.#totalBurst * this.#totalRefillMs,
    );
    if (wait > 0 || totalWait > 0) return Math.max(wait, totalWait);
    this.#totalFull = totalNext;
    this.#full.delete(bucket);
    if (this.#full.size >= this.#max) {
      this.#full.delete(this.#full.keys().next().value!);
    }
    this.#full.set(bucket, next);
    return 0;
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

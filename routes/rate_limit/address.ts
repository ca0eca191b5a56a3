/**
 * The address a client is limited under: IPv4 per address, IPv6 per /64
 * prefix (one subscriber usually holds a whole /64, so limiting a single
 * IPv6 address would let a client rotate through billions of them).
 *
 * The address is the socket's peer. `X-Forwarded-For` is read only when the
 * operator says how many proxy hops in front of the service are trusted
 * (`TRUST_PROXY`); otherwise any client could forge the header to dodge its
 * limit.
 *
 * @module
 */

const OCTET = "(?:25[0-5]|2[0-4]\\d|1\\d\\d|[1-9]?\\d)";
const IPV4 = new RegExp(`^${OCTET}(?:\\.${OCTET}){3}$`);
/** Groups of 16 bits in an IPv6 address. */
const IPV6_GROUPS = 8;
/** Groups kept in an IPv6 limiting key: the /64 prefix. */
const IPV6_PREFIX_GROUPS = 4;

/**
 * The bucket of a client: an IPv4 address as its 32-bit number, anything
 * else (an IPv6 /64, an unknown peer) as its limiting key: a number needs
 * no text made for each request before the bucket map is looked up
 * (BENCHMARKS.md#earlier-findings).
 */
export type BucketKey = string | number;

/**
 * The key a client is limited under: its IPv4 address, or the /64 prefix of
 * its IPv6 address. The peer address, unless `trustProxy` hops are trusted,
 * in which case the address those proxies saw, from `X-Forwarded-For`.
 * `info.remoteAddr` is read only when the peer address is used: `Deno.serve`
 * makes it on demand.
 *
 * @example
 * ```ts
 * const remoteAddr = { transport: "tcp" as const, hostname: "10.0.0.1", port: 1 };
 * const req = new Request("http://x/", {
 *   headers: { "X-Forwarded-For": "198.51.100.1" },
 * });
 * clientKey(req, { remoteAddr }, 0); // "10.0.0.1"
 * clientKey(req, { remoteAddr }, 1); // "198.51.100.1"
 * ```
 */
export function clientKey(
  req: Request,
  info: { readonly remoteAddr?: Deno.NetAddr },
  trustProxy: number,
): string {
  return bucketText(clientBucket(req, info, trustProxy));
}

/**
 * The bucket of a client: {@linkcode clientKey} as a {@linkcode BucketKey}.
 *
 * @example
 * ```ts
 * clientBucket(req, { remoteAddr }, 0); // 167772161, for "10.0.0.1"
 * ```
 */
export function clientBucket(
  req: Request,
  info: { readonly remoteAddr?: Deno.NetAddr },
  trustProxy: number,
): BucketKey {
  if (trustProxy > 0) {
    const header = req.headers.get("x-forwarded-for");
    if (header !== null) {
      const candidate = trustProxy === 1
        ? header.slice(header.lastIndexOf(",") + 1).trim()
        : header.split(",").at(-trustProxy)?.trim() ??
          header.split(",")[0]!.trim();
      const n = ipv4Number(candidate);
      if (n >= 0) return n;
      const key = ipKey(candidate);
      if (key !== null) return bucketKey(key);
    }
  }
  const address = info.remoteAddr?.hostname ?? "unknown";
  const n = ipv4Number(address);
  return n >= 0 ? n : bucketKey(ipKey(address) ?? address);
}

/**
 * The 32-bit number of an IPv4 address written as four decimal octets
 * (0-255, no leading zeros), or -1 when `text` is not one.
 *
 * @example
 * ```ts
 * ipv4Number("10.0.0.1"); // 167772161
 * ipv4Number("10.0.0.01"); // -1
 * ```
 */
export function ipv4Number(text: string): number {
  const length = text.length;
  if (length < 7 || length > 15) return -1;
  let value = 0;
  let octet = 0;
  let digits = 0;
  let dots = 0;
  for (let i = 0; i < length; i++) {
    const c = text.charCodeAt(i);
    if (c === 46) {
      if (digits === 0 || ++dots > 3) return -1;
      value = value * 256 + octet;
      octet = 0;
      digits = 0;
    } else if (c >= 48 && c <= 57) {
      if (digits === 1 && octet === 0) return -1; // a leading zero
      octet = octet * 10 + c - 48;
      if (++digits > 3 || octet > 255) return -1;
    } else return -1;
  }
  if (dots !== 3 || digits === 0) return -1;
  return value * 256 + octet;
}

/**
 * The bucket of a limiting key (an IPv4 address becomes its number).
 *
 * @example
 * ```ts
 * bucketKey("10.0.0.1"); // 167772161
 * bucketKey("2001:db8:0:0::/64"); // "2001:db8:0:0::/64"
 * ```
 */
export function bucketKey(key: string): BucketKey {
  const n = ipv4Number(key);
  return n >= 0 ? n : key;
}

/**
 * The limiting key of a bucket, as text (what the shared counters are kept
 * under in KV).
 *
 * @example
 * ```ts
 * bucketText(167772161); // "10.0.0.1"
 * ```
 */
export function bucketText(key: BucketKey): string {
  return typeof key === "string"
    ? key
    : `${key >>> 24}.${(key >>> 16) & 255}.${(key >>> 8) & 255}.${key & 255}`;
}

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
  // An embedded IPv4 address (`::1.2.3.4`) stands for the last two groups.
  if (tail.at(-1)?.includes(".")) tail.splice(-1, 1, "0", "0");
  const missing = IPV6_GROUPS - head.length - tail.length;
  if (missing < 0 || (halves.length === 1 && missing !== 0)) return null;
  const groups = [...head, ...Array(missing).fill("0"), ...tail];
  if (!groups.every((g) => /^[0-9a-f]{1,4}$/.test(g))) return null;
  return groups.slice(0, IPV6_PREFIX_GROUPS)
    .map((g) => parseInt(g, 16).toString(16)).join(":") + "::/64";
}

/**
 * Where a webhook may point (server-side request forgery): a delivery must
 * not reach the service's own machine or its private network unless the
 * operator allows it with `ALERT_PRIVATE_TARGETS=allow`. The URL's host is
 * checked when a rule is added, and the addresses its name resolves to are
 * checked again before each delivery (docs/alerts.md#webhook-targets); what
 * a name resolves to is never shown.
 *
 * @module
 */
import { InvalidValueError } from "../db/validation.ts";

/** Thrown when a webhook URL is malformed or points at a refused address. */
export class WebhookTargetError extends InvalidValueError {
  override name = "WebhookTargetError";
}

/** Resolves a host name to addresses of one record type. */
export type Resolver = (
  host: string,
  type: "A" | "AAAA",
) => Promise<string[]>;

/**
 * Thrown when a webhook's host resolves to no address now (no records, a
 * resolver error, no answer in time): unlike a refused address, a later
 * attempt may succeed.
 */
export class WebhookUnresolvedError extends Error {
  override name = "WebhookUnresolvedError";
}

/** What a delivery's history says of a name that resolves to a refused address. */
export const REFUSED_RESOLVED = "refused: not a public address";

/** Time one resolution of a webhook's host may take. */
const RESOLVE_TIMEOUT_MS = 5000;

/** Longest webhook URL accepted. */
const MAX_URL_CHARS = 2048;

/**
 * IPv4 ranges refused, as [first octets, prefix length]: the IANA IPv4
 * special-purpose registry (docs/alerts.md#webhook-targets).
 */
const PRIVATE_V4: [number[], number][] = [
  [[0], 8], // "this network", 0.0.0.0
  [[10], 8], // private
  [[100, 64], 10], // carrier-grade NAT
  [[127], 8], // loopback
  [[169, 254], 16], // link-local (cloud metadata)
  [[172, 16], 12], // private
  [[192, 0, 0], 24], // IETF protocol assignments
  [[192, 0, 2], 24], // documentation (TEST-NET-1)
  [[192, 88, 99], 24], // 6to4 relay anycast (deprecated)
  [[192, 168], 16], // private
  [[198, 18], 15], // benchmarking
  [[198, 51, 100], 24], // documentation (TEST-NET-2)
  [[203, 0, 113], 24], // documentation (TEST-NET-3)
  [[224], 4], // multicast
  [[240], 4], // reserved, broadcast
];

/**
 * IPv6 ranges refused inside global unicast (2000::/3), as [first groups,
 * prefix length]; everything outside 2000::/3 is refused as well.
 */
const PRIVATE_V6: [number[], number][] = [
  [[0x2001], 23], // IETF protocol assignments (Teredo, ORCHID, …), all of it
  [[0x2001, 0x0db8], 32], // documentation
  [[0x2002], 16], // 6to4: an IPv4 address inside, 127.0.0.1 included
  [[0x3fff, 0], 20], // documentation
];

function parseV4(host: string): number[] | null {
  const parts = host.split(".");
  if (parts.length !== 4) return null;
  const octets = parts.map((p) => /^\d{1,3}$/.test(p) ? Number(p) : NaN);
  return octets.every((o) => o >= 0 && o <= 255) ? octets : null;
}

function v4InRange(octets: number[], base: number[], bits: number): boolean {
  const value = (octets[0]! << 24 | octets[1]! << 16 | octets[2]! << 8 |
    octets[3]!) >>> 0;
  const start = ((base[0] ?? 0) << 24 | (base[1] ?? 0) << 16 |
    (base[2] ?? 0) << 8) >>> 0;
  const mask = bits === 0 ? 0 : (~0 << (32 - bits)) >>> 0;
  return ((value & mask) >>> 0) === ((start & mask) >>> 0);
}

/** The 8 groups of an IPv6 address, or `null` when it is not one. */
function parseV6(host: string): number[] | null {
  let text = host.replace(/^\[|\]$/g, "").toLowerCase();
  const zone = text.indexOf("%");
  if (zone >= 0) text = text.slice(0, zone);
  if (!text.includes(":")) return null;
  // A trailing dotted IPv4 part (::ffff:127.0.0.1) becomes two groups.
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (dotted) {
    const v4 = parseV4(dotted[1]!);
    if (!v4) return null;
    text = text.slice(0, dotted.index) +
      ((v4[0]! << 8) | v4[1]!).toString(16) + ":" +
      ((v4[2]! << 8) | v4[3]!).toString(16);
  }
  const halves = text.split("::");
  if (halves.length > 2) return null;
  const read = (s: string) => s === "" ? [] : s.split(":");
  const head = read(halves[0]!);
  const tail = halves.length === 2 ? read(halves[1]!) : [];
  const missing = 8 - head.length - tail.length;
  if (halves.length === 1 ? missing !== 0 : missing < 1) return null;
  const groups = [
    ...head,
    ...Array(halves.length === 2 ? missing : 0)
      .fill("0"),
    ...tail,
  ];
  const values = groups.map((g) =>
    /^[0-9a-f]{1,4}$/.test(g) ? parseInt(g, 16) : NaN
  );
  return values.every((v) => !Number.isNaN(v)) ? values : null;
}

function isPrivateV4(octets: number[]): boolean {
  return PRIVATE_V4.some(([base, bits]) => v4InRange(octets, base, bits));
}

function v6InRange(groups: number[], base: number[], bits: number): boolean {
  for (let i = 0; i * 16 < bits; i++) {
    const width = Math.min(16, bits - i * 16);
    const mask = (0xffff << (16 - width)) & 0xffff;
    if ((groups[i]! & mask) !== ((base[i] ?? 0) & mask)) return false;
  }
  return true;
}

/**
 * Only global unicast (2000::/3) may be reached, less its special-purpose
 * blocks. Outside it lie `::`, `::1`, the IPv4-mapped, -compatible and
 * -translated forms (::/8), NAT64 (64:ff9b::/96, 64:ff9b:1::/48), discard
 * (100::/64), unique local (fc00::/7), link-local (fe80::/10) and multicast
 * (ff00::/8): none is a public IPv6 address, whatever IPv4 address it embeds.
 */
function isPrivateV6(g: number[]): boolean {
  if (!v6InRange(g, [0x2000], 3)) return true;
  return PRIVATE_V6.some(([base, bits]) => v6InRange(g, base, bits));
}

/**
 * Whether `address` (IPv4 or IPv6, brackets allowed, any textual form) is
 * in a special-purpose range — loopback, private, link-local, carrier-grade
 * NAT, documentation, benchmarking, multicast, reserved, unspecified, or an
 * IPv6 form that embeds an IPv4 address; `null` when it is not an IP address
 * at all.
 *
 * @example
 * ```ts
 * isPrivateAddress("10.1.2.3"); // true
 * isPrivateAddress("[::ffff:127.0.0.1]"); // true
 * isPrivateAddress("[2001:db8::1]"); // true
 * isPrivateAddress("93.184.215.14"); // false
 * isPrivateAddress("example.com"); // null
 * ```
 */
export function isPrivateAddress(address: string): boolean | null {
  const v4 = parseV4(address);
  if (v4) return isPrivateV4(v4);
  const v6 = parseV6(address);
  if (v6) return isPrivateV6(v6);
  return null;
}

/**
 * Checks a webhook URL when a rule is added: `http` or `https`, and unless
 * `allowPrivate`, a host that is neither a refused address nor a name of
 * this machine (`localhost`). Returns the URL as normalized by the URL
 * parser (which turns `0x7f.1` into `127.0.0.1` before it is checked).
 *
 * @example
 * ```ts
 * checkWebhookUrl("https://hooks.slack.com/services/T/B/X", { allowPrivate: false });
 * checkWebhookUrl("http://127.0.0.1:9000/", { allowPrivate: false }); // throws
 * ```
 */
export function checkWebhookUrl(
  url: string,
  options: { allowPrivate: boolean },
): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new WebhookTargetError(
      `Cannot use webhook "${url}": expected an absolute http or https URL`,
    );
  }
  if (parsed.protocol !== "http:" && parsed.protocol !== "https:") {
    throw new WebhookTargetError(
      `Cannot use webhook "${url}": expected an http or https URL`,
    );
  }
  if (parsed.href.length > MAX_URL_CHARS) {
    throw new WebhookTargetError(
      `Cannot use a webhook URL over ${MAX_URL_CHARS} characters`,
    );
  }
  if (!options.allowPrivate) {
    const host = parsed.hostname.toLowerCase().replace(/\.$/, "");
    if (
      isPrivateAddress(host) === true || host === "localhost" ||
      host.endsWith(".localhost")
    ) {
      throw new WebhookTargetError(
        `Cannot use webhook "${url}": "${parsed.hostname}" is not a public address: loopback, private, reserved or documentation (set ALERT_PRIVATE_TARGETS=allow to permit it)`,
      );
    }
  }
  return parsed.href;
}

/**
 * The runtime's resolver; a record type with no answer gives no address.
 * A slow name server must not hold the alert loop: the lookup is given up
 * after {@linkcode RESOLVE_TIMEOUT_MS}.
 */
export const resolveDns: Resolver = async (host, type) => {
  try {
    return await Deno.resolveDns(host, type, {
      signal: AbortSignal.timeout(RESOLVE_TIMEOUT_MS),
    });
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return [];
    throw error;
  }
};

/**
 * Checks where a delivery is about to go: unless `allowPrivate`, every
 * address the host resolves to must be public (a name that resolves to a
 * refused address throws {@linkcode REFUSED_RESOLVED}, without the address;
 * one that resolves to nothing throws
 * {@linkcode WebhookUnresolvedError}).
 */
export async function checkResolvedTarget(
  url: string,
  options: { allowPrivate: boolean; resolve?: Resolver },
): Promise<void> {
  const href = checkWebhookUrl(url, options);
  if (options.allowPrivate) return;
  const host = new URL(href).hostname;
  if (isPrivateAddress(host) !== null) return; // a literal, checked above
  const resolve = options.resolve ?? resolveDns;
  const settled = await Promise.allSettled([
    resolve(host, "A"),
    resolve(host, "AAAA"),
  ]);
  const addresses = settled.flatMap((r) =>
    r.status === "fulfilled" ? r.value : []
  );
  // A lookup that failed (not one that found no records) could have named a
  // private address: closed, not judged on the other one.
  if (addresses.length === 0 || settled.some((r) => r.status === "rejected")) {
    throw new WebhookUnresolvedError(`Cannot resolve webhook host "${host}"`);
  }
  // The message names no address: a rule's history must not tell a member
  // what the service's internal names resolve to.
  if (addresses.some((a) => isPrivateAddress(a) !== false)) {
    throw new WebhookTargetError(REFUSED_RESOLVED);
  }
}

/**
 * The signature of a server client, on WebCrypto alone so that it runs in
 * Deno, Node 20+, Bun and browsers: the uppercase hex HMAC-SHA256, keyed with
 * the project secret, of `projectId + params + timestamp`, where `params` is
 * the compact JSON of `{level, projectId, device, context, data}` in that
 * order and `timestamp` the integer Unix time in milliseconds sent in the
 * `timestamp` header. A member left undefined is left out of `params`, which
 * the server accepts for `device` and `context`.
 *
 * @module
 */

/** One log entry, as sent in the body of `POST /api/v1/logs`. */
export interface Entry {
  /** `info`, `warning`, `error`, `critical` or a level the project declares. */
  level: string;
  projectId: string;
  /** The content: conventionally `title`, `message` and further members. */
  data: Record<string, unknown>;
  /** The sending device or server. */
  device?: Record<string, unknown> | string;
  /** Metadata for filtering: `environment`, `service`, `userId`... */
  context?: Record<string, unknown>;
  /** Application id of a mobile client. */
  appid?: string;
}

/** The headers that carry a signature. */
export interface SignatureHeaders {
  timestamp: string;
  signature: string;
}

const encoder = new TextEncoder();

/**
 * Uppercase hex HMAC-SHA256 of `text`, keyed with `secret`.
 *
 * @example
 * ```ts
 * const signature = await sign(secret, projectId + params + timestamp);
 * ```
 */
export async function sign(secret: string, text: string): Promise<string> {
  const key = await crypto.subtle.importKey(
    "raw",
    encoder.encode(secret),
    { name: "HMAC", hash: "SHA-256" },
    false,
    ["sign"],
  );
  const mac = new Uint8Array(
    await crypto.subtle.sign("HMAC", key, encoder.encode(text)),
  );
  let hex = "";
  for (const byte of mac) hex += (byte < 16 ? "0" : "") + byte.toString(16);
  return hex.toUpperCase();
}

/**
 * The signed `params`: compact JSON of the five signed members, in order.
 * Sending this text as the body (with `appid` added at the end when there is
 * one) keeps the signed text and the sent text the same.
 *
 * @example
 * ```ts
 * signedParams({ level: "info", projectId: "p1", data: { title: "Hi" } });
 * // '{"level":"info","projectId":"p1","data":{"title":"Hi"}}'
 * ```
 */
export function signedParams(entry: Entry): string {
  return JSON.stringify({
    level: entry.level,
    projectId: entry.projectId,
    device: entry.device,
    context: entry.context,
    data: entry.data,
  });
}

/**
 * Signs `entry` at `timestamp` (Unix milliseconds, now by default) and returns
 * the `timestamp` and `signature` headers to send with it.
 *
 * @example
 * ```ts
 * const entry = { level: "error", projectId, data: { title: "Export failed" } };
 * const headers = await signEntry(secret, entry);
 * await fetch(endpoint, {
 *   method: "POST",
 *   headers: { "Content-Type": "application/json", ...headers },
 *   body: signedParams(entry),
 * });
 * ```
 */
export async function signEntry(
  secret: string,
  entry: Entry,
  timestamp: number = Date.now(),
): Promise<SignatureHeaders> {
  const time = String(Math.floor(timestamp));
  return {
    timestamp: time,
    signature: await sign(secret, entry.projectId + signedParams(entry) + time),
  };
}

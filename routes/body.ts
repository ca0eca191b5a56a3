/**
 * Reading a request body under a byte limit: never more than the limit is
 * buffered, whether the client sends `Content-Length` or not, and for gzip
 * both the compressed and the decompressed size are bounded.
 *
 * @module
 */
import { gunzipSync } from "node:zlib";
import type { BodyGuard } from "./body_guard.ts";
import {
  HttpError,
  incompleteBody,
  invalidJson,
  malformedBody,
  payloadTooLarge,
  unavailable,
  unsupportedMediaType,
} from "./errors.ts";

/**
 * What one body still arriving holds besides its bytes, reserved from the
 * guard's budget at least: the runtime reads a request body into a buffer
 * of 64 KiB per read, and a read that waits for a stalled client keeps it
 * (measured on Deno 2.9: about 140 KB of RSS per connection whose body
 * stalled while being read, whatever its size).
 */
export const READ_COST = 128 * 1024;

/** The media types a body may have, as the 415 message names them. */
const ACCEPTED = `"application/json" or "text/plain"`;

/**
 * Checks `Content-Type`: `application/json` or `text/plain` (which browsers
 * and `navigator.sendBeacon` send without a preflight), any parameters, but a
 * charset other than UTF-8 is refused.
 */
export function checkContentType(value: string | null): void {
  if (value === null) {
    throw unsupportedMediaType(
      `Cannot read a body without "Content-Type": expected ${ACCEPTED}`,
    );
  }
  const [type = "", ...params] = value.split(";");
  const media = type.trim().toLowerCase();
  if (media !== "application/json" && media !== "text/plain") {
    throw unsupportedMediaType(
      `Cannot read "Content-Type" "${media}": expected ${ACCEPTED}`,
    );
  }
  for (const param of params) {
    const [name = "", raw = ""] = param.split("=");
    if (name.trim().toLowerCase() !== "charset") continue;
    const charset = raw.trim().replace(/^"|"$/g, "").toLowerCase();
    if (charset !== "utf-8" && charset !== "utf8") {
      throw unsupportedMediaType(
        `Cannot read charset "${charset}": expected "utf-8"`,
      );
    }
  }
}

/** Reads `Content-Encoding`: `true` for gzip, `false` for none or identity. */
export function isGzip(value: string | null): boolean {
  if (value === null) return false;
  const encoding = value.trim().toLowerCase();
  if (encoding === "" || encoding === "identity") return false;
  if (encoding === "gzip" || encoding === "x-gzip") return true;
  throw unsupportedMediaType(
    `Cannot decode "Content-Encoding" "${encoding}": expected "gzip" or "identity"`,
  );
}

/** Options of {@linkcode readBody}. */
export interface ReadBodyOptions {
  /** Largest body, after decompression. */
  limit: number;
  /** Budget and deadline of the bodies being read. @default none */
  guard?: BodyGuard;
}

/**
 * Reads the whole body of `req`, at most `limit` bytes (after decompression),
 * and throws `payload_too_large` as soon as more arrives. With a guard, the
 * body's bytes are reserved first (`503 unavailable` past the budget, before
 * anything is read) and the body must arrive within the guard's timeout
 * (`408 request_timeout`). A body cut short by the client (the connection
 * ends first, or a chunked body lacks its last chunk) is `400
 * incomplete_body`.
 *
 * @example
 * ```ts
 * const bytes = await readBody(req, { limit: 65536, guard });
 * ```
 */
export async function readBody(
  req: Request,
  options: ReadBodyOptions,
): Promise<Uint8Array> {
  const { limit, guard } = options;
  const gzip = isGzip(req.headers.get("content-encoding"));
  const declared = req.headers.get("content-length");
  const length = declared === null ? NaN : Number(declared);
  if (length > limit) {
    await req.body?.cancel().catch(() => {});
    throw payloadTooLarge(limit);
  }
  // The server never delivers more than Content-Length bytes; a gzip body
  // keeps its decompressed size, up to the limit. A sized body is read
  // without touching `req.body`: making its stream object is a large share
  // of what a request costs the server (BENCHMARKS.md#earlier-findings).
  const sized = !gzip && Number.isInteger(length);
  if (!sized && req.body === null) return new Uint8Array(0);
  const held = guard?.reserve(Math.max(sized ? length : limit, READ_COST));
  if (held === null) {
    await req.body?.cancel().catch(() => {});
    throw unavailable("Cannot read the body now: too many bodies are arriving");
  }
  let read: Promise<Uint8Array>;
  if (sized) {
    read = req.arrayBuffer().then((buffer) => new Uint8Array(buffer));
  } else {
    // A gzip body is read compressed (at most `limit` bytes) and inflated
    // afterwards, into at most `limit` bytes: a bomb stops there, instead
    // of being inflated whole by a decompression stream.
    read = collect(req.body!.getReader(), limit);
    if (gzip) read = read.then((compressed) => gunzip(compressed, limit));
  }
  try {
    return await (held ? guard!.within(held, read) : read);
  } catch (error) {
    if (error instanceof HttpError) throw error;
    if (isCutShort(error)) throw incompleteBody();
    if (isMalformed(error)) throw malformedBody();
    throw error;
  }
}

/**
 * Inflates a gzip body into at most `limit` bytes: `payload_too_large` as
 * soon as more would come out, `invalid_json` when it is not gzip.
 */
function gunzip(compressed: Uint8Array, limit: number): Uint8Array {
  try {
    return gunzipSync(compressed, { maxOutputLength: limit });
  } catch (error) {
    if ((error as { code?: string }).code === "ERR_BUFFER_TOO_LARGE") {
      throw payloadTooLarge(limit);
    }
    throw invalidJson(`Cannot decompress the body: not valid gzip data`);
  }
}

/**
 * Whether `error`, thrown while reading a request body, is the runtime's
 * refusal of the body's framing: a chunk size line or chunk extension it
 * will not parse (measured on Deno 2.9: a plain `Error` whose message
 * starts "invalid HTTP", for a chunk line of more than about 4 KB).
 */
function isMalformed(error: unknown): boolean {
  return error instanceof Error && /^invalid HTTP/i.test(error.message);
}

/**
 * Whether `error`, thrown while reading a request body, means that the client
 * ended the request before its body was whole. The runtime then fails the
 * read with `BadResource` (measured on Deno 2.9 for a half-closed connection
 * with a short `Content-Length` and for a chunked body without its last
 * chunk); the other classes are those of a connection that is gone.
 */
function isCutShort(error: unknown): boolean {
  const errors = Deno.errors;
  return error instanceof errors.BadResource ||
    error instanceof errors.Interrupted ||
    error instanceof errors.UnexpectedEof ||
    error instanceof errors.ConnectionReset ||
    error instanceof errors.ConnectionAborted ||
    error instanceof errors.BrokenPipe ||
    error instanceof errors.Http;
}

/**
 * Reads `reader` to its end, `payload_too_large` past `limit` bytes. Each
 * chunk is copied out: the runtime hands chunks over as views of a 64 KiB
 * buffer each, so a body trickled one byte per chunk would otherwise keep
 * 64 KiB per byte (measured on Deno 2.9: 2,000 one-byte chunks on each of
 * 4 connections held 379 MB).
 */
async function collect(
  reader: ReadableStreamDefaultReader<Uint8Array>,
  limit: number,
): Promise<Uint8Array> {
  let body: Uint8Array = new Uint8Array(0);
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    if (size + value.length > limit) {
      await reader.cancel().catch(() => {});
      throw payloadTooLarge(limit);
    }
    if (size === 0 && body.length === 0) {
      // The first chunk is often the whole body: kept only if it fills its
      // buffer, else copied.
      body = value.byteLength === value.buffer.byteLength
        ? value
        : value.slice();
      size = value.length;
      continue;
    }
    if (size + value.length > body.length) {
      const grown = new Uint8Array(
        Math.min(limit, Math.max(2 * body.length, size + value.length)),
      );
      grown.set(body.subarray(0, size));
      body = grown;
    }
    body.set(value, size);
    size += value.length;
  }
  return body.subarray(0, size);
}

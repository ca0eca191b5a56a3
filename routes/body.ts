/**
 * Reading a request body under a byte limit: never more than the limit is
 * buffered, whether the client sends `Content-Length` or not, and for gzip
 * both the compressed and the decompressed size are bounded.
 *
 * @module
 */
import {
  invalidJson,
  payloadTooLarge,
  unsupportedMediaType,
} from "./errors.ts";

/**
 * Checks `Content-Type`: `application/json` or `text/plain` (which browsers
 * and `navigator.sendBeacon` send without a preflight), any parameters, but a
 * charset other than UTF-8 is refused.
 */
export function checkContentType(value: string | null): void {
  if (value === null) {
    throw unsupportedMediaType(
      `Cannot read a body without "Content-Type": expected "application/json"`,
    );
  }
  const [type = "", ...params] = value.split(";");
  const media = type.trim().toLowerCase();
  if (media !== "application/json" && media !== "text/plain") {
    throw unsupportedMediaType(
      `Cannot read "Content-Type" "${media}": expected "application/json"`,
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

/**
 * Reads the whole body of `req`, at most `limit` bytes (after decompression),
 * and throws `payload_too_large` as soon as more arrives.
 */
export async function readBody(
  req: Request,
  limit: number,
): Promise<Uint8Array> {
  const gzip = isGzip(req.headers.get("content-encoding"));
  const declared = req.headers.get("content-length");
  const length = declared === null ? NaN : Number(declared);
  if (length > limit) {
    await req.body?.cancel().catch(() => {});
    throw payloadTooLarge(limit);
  }
  if (req.body === null) return new Uint8Array(0);
  // Fast path: the server never delivers more than Content-Length bytes.
  if (!gzip && Number.isInteger(length)) {
    return new Uint8Array(await req.arrayBuffer());
  }
  let stream: ReadableStream<Uint8Array> = req.body;
  if (gzip) {
    stream = stream.pipeThrough(limitStream(limit))
      .pipeThrough(
        new DecompressionStream("gzip") as TransformStream<
          Uint8Array,
          Uint8Array
        >,
      );
  }
  return await collect(stream, limit);
}

class TooLarge extends Error {}

function limitStream(limit: number): TransformStream<Uint8Array, Uint8Array> {
  let seen = 0;
  return new TransformStream({
    transform(chunk, controller) {
      seen += chunk.length;
      if (seen > limit) throw new TooLarge();
      controller.enqueue(chunk);
    },
  });
}

async function collect(
  stream: ReadableStream<Uint8Array>,
  limit: number,
): Promise<Uint8Array> {
  const reader = stream.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      size += value.length;
      if (size > limit) {
        await reader.cancel().catch(() => {});
        throw payloadTooLarge(limit);
      }
      chunks.push(value);
    }
  } catch (error) {
    if (error instanceof TooLarge) throw payloadTooLarge(limit);
    if (error instanceof TypeError) {
      throw invalidJson(`Cannot decompress the body: not valid gzip data`);
    }
    throw error;
  }
  if (chunks.length === 1) return chunks[0]!;
  const body = new Uint8Array(size);
  let at = 0;
  for (const chunk of chunks) {
    body.set(chunk, at);
    at += chunk.length;
  }
  return body;
}

/**
 * Building the endpoint's responses: the CORS headers every answer carries
 * (docs/design.md#cors), JSON bodies, and the JSON error answer
 * (docs/design.md#errors).
 *
 * @module
 */
import type { ErrorLog } from "./error_log.ts";
import { errorBody, HttpError } from "./errors.ts";

/** Headers a browser may read on any answer of the endpoint. */
const EXPOSED =
  "Retry-After, RateLimit-Limit, RateLimit-Remaining, RateLimit-Reset";

/**
 * The CORS headers of every answer on the endpoint: the request's `Origin`
 * echoed, so that a browser can read errors too, and credentials allowed
 * beside it, so that requests in credentials mode (`fetch` with
 * `credentials: "include"`, `navigator.sendBeacon`) are not dropped
 * (docs/design.md#cors). Never `*`: browsers refuse it with credentials.
 *
 * @example
 * ```ts
 * corsHeaders("https://app.example.com")["Access-Control-Allow-Credentials"]; // "true"
 * ```
 */
export function corsHeaders(origin: string | null): Record<string, string> {
  return origin === null
    ? { "Vary": "Origin", "Access-Control-Expose-Headers": EXPOSED }
    : {
      "Access-Control-Allow-Origin": origin,
      "Access-Control-Allow-Credentials": "true",
      "Vary": "Origin",
      "Access-Control-Expose-Headers": EXPOSED,
    };
}

/**
 * A JSON response with `headers` added, set one by one after construction
 * (BENCHMARKS.md#earlier-findings: giving them to the constructor was no
 * better).
 */
export function jsonResponse(
  body: string | null,
  status: number,
  headers: Record<string, string>,
): Response {
  const res = new Response(body, {
    status,
    headers: body === null ? undefined : { "Content-Type": "application/json" },
  });
  const list = res.headers;
  for (const name in headers) list.set(name, headers[name]!);
  return res;
}

/**
 * The JSON error answer of `error`, with the CORS headers of a request from
 * `origin` and the error's own headers (`Retry-After`, `Allow`, ...).
 */
export function errorResponse(
  error: HttpError,
  origin: string | null,
): Response {
  return jsonResponse(errorBody(error), error.status, {
    ...corsHeaders(origin),
    ...error.headers,
  });
}

/**
 * The answer to any error thrown while serving the endpoint: an
 * {@linkcode HttpError} as itself; anything else logged to `errorLog` and
 * answered `503 unavailable` with `Retry-After: 1`, so that clients retry
 * rather than drop the entry (docs/design.md#errors).
 *
 * @example
 * ```ts
 * app.onError((error, c) => answerError(error, c.req.header("origin") ?? null, errorLog));
 * ```
 */
export function answerError(
  error: unknown,
  origin: string | null,
  errorLog: ErrorLog,
): Response {
  if (error instanceof HttpError) return errorResponse(error, origin);
  errorLog.report(error);
  return errorResponse(
    new HttpError(
      503,
      "unavailable",
      "Cannot handle the request now",
      undefined,
      { "Retry-After": "1" },
    ),
    origin,
  );
}

/**
 * The errors the endpoint answers with. Each carries its HTTP status and the
 * `code` (docs/design.md#errors); `app.onError` turns them into the JSON error body.
 *
 * @module
 */

/** One failing path of a validation error. */
export interface Issue {
  path: string;
  message: string;
}

/** An error with a status and an error code, answered as JSON. */
export class HttpError extends Error {
  override name = "HttpError";
  constructor(
    readonly status: 400 | 404 | 405 | 408 | 413 | 415 | 429 | 503,
    readonly code: string,
    message: string,
    readonly issues?: Issue[],
    readonly headers?: Record<string, string>,
  ) {
    super(message);
  }
}

/** `400 invalid_json`: the body is not a UTF-8 JSON object. */
export function invalidJson(message: string): HttpError {
  return new HttpError(400, "invalid_json", message);
}

/** `400 invalid_body`: the JSON does not describe a log entry. */
export function invalidBody(issues: Issue[]): HttpError {
  return new HttpError(
    400,
    "invalid_body",
    `Cannot accept the entry: ${issues.length} invalid ${
      issues.length === 1 ? "field" : "fields"
    }`,
    issues,
  );
}

/**
 * `400 incomplete_body`: the connection ended (or the chunked body stopped)
 * before the body the request announced was complete: the client's fault.
 */
export function incompleteBody(): HttpError {
  return new HttpError(
    400,
    "incomplete_body",
    "Cannot read the body: the request ended before the body was complete",
  );
}

/**
 * `400 invalid_body` for a body whose framing the runtime refused (a chunk
 * size line or chunk extension it will not parse): the client's fault.
 */
export function malformedBody(): HttpError {
  return new HttpError(
    400,
    "invalid_body",
    "Cannot read the body: its chunked framing is malformed",
    [{
      path: "(body)",
      message:
        "A chunk size line is malformed or too long (a chunk extension of kilobytes is refused)",
    }],
  );
}

/** `408 request_timeout`: the body did not arrive within `timeoutMs`. */
export function requestTimeout(timeoutMs: number): HttpError {
  return new HttpError(
    408,
    "request_timeout",
    `Cannot wait for the body: it did not arrive within ${timeoutMs} ms`,
  );
}

/** `415 unsupported_media_type`. */
export function unsupportedMediaType(message: string): HttpError {
  return new HttpError(415, "unsupported_media_type", message);
}

/** `413 payload_too_large`, naming the limit. */
export function payloadTooLarge(limit: number): HttpError {
  return new HttpError(
    413,
    "payload_too_large",
    `Cannot accept a body over ${limit} bytes`,
  );
}

/** `503 unavailable` with `Retry-After`. */
export function unavailable(message: string, retryAfter = 1): HttpError {
  return new HttpError(503, "unavailable", message, undefined, {
    "Retry-After": String(retryAfter),
  });
}

/** Builds the JSON error body (docs/design.md#errors). */
export function errorBody(error: HttpError): string {
  return JSON.stringify({
    status: "error",
    error: {
      code: error.code,
      message: error.message,
      ...(error.issues ? { issues: error.issues } : {}),
    },
  });
}

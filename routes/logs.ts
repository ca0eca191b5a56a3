/**
 * `POST /api/v1/logs` and its CORS preflight: the synchronous checks
 * (docs/design.md#synchronous-checks), then the group commit. Nothing here
 * looks up a project or a credential: authentication happens after queueing,
 * so no answer depends on whether a project, origin, app id or secret is
 * valid.
 *
 * @module
 */
import { Hono } from "hono";
import {
  CommitFailedError,
  type GroupCommitter,
  OverloadedError,
} from "../queue/producer.ts";
import { type QueuedEntry, SIGNED_MEMBERS } from "../domain/entry.ts";
import { createId } from "../domain/ids.ts";
import { checkContentType, readBody } from "./body.ts";
import type { BodyGuard } from "./body_guard.ts";
import { HttpError, invalidBody, invalidJson, unavailable } from "./errors.ts";
import { scanJson } from "../domain/json.ts";
import { corsHeaders, jsonResponse } from "./responses.ts";
import { validateEntry } from "./schema.ts";

/** Deepest nesting accepted, the top-level object counting as 1. */
export const MAX_DEPTH = 32;

/** The members stored as the sender wrote them, checked for exactness. */
const STORED_AS_SENT: ReadonlySet<string> = new Set([
  "data",
  "context",
  "device",
]);

const QUEUED = '{"status":"queued"}';
const decoder = new TextDecoder("utf-8", { fatal: true });

/** Decides, before anything else, whether a POST may proceed (rate limit). */
export interface Admission {
  /** Throws an {@linkcode HttpError} (429) when the request is refused. */
  admit(req: Request, info: { remoteAddr?: Deno.NetAddr }): void;
}

/** Options of {@linkcode logsRoute}. */
export interface LogsRouteOptions {
  producer: GroupCommitter;
  /** Largest body, after decompression. */
  maxBodyBytes: number;
  /** Clock. @default {Date.now} */
  now?: () => number;
  /** Rate limiter. @default none */
  admission?: Admission;
  /**
   * Budget and deadline of the bodies being read (`503` past the budget,
   * `408` past the deadline). @default none
   */
  bodies?: BodyGuard;
}

/** Environment of the app: the peer address, passed in by `Deno.serve`. */
export interface Env {
  Bindings: { remoteAddr?: Deno.NetAddr };
}

/**
 * The Hono sub-app serving `/api/v1/logs`.
 *
 * @example
 * ```ts
 * app.route("/api/v1/logs", logsRoute({ producer, maxBodyBytes: 65536 }));
 * ```
 */
export function logsRoute(options: LogsRouteOptions): Hono<Env> {
  const app = new Hono<Env>();
  const post = postHandler(options);

  app.post("/", (c) => post(c.req.raw, c.env ?? {}));
  app.options("/", (c) => {
    const headers = corsHeaders(c.req.header("origin") ?? null);
    headers["Access-Control-Allow-Methods"] = "POST, OPTIONS";
    headers["Access-Control-Allow-Headers"] =
      "Content-Type, Content-Encoding, timestamp, signature";
    headers["Access-Control-Max-Age"] = "86400";
    return jsonResponse(null, 204, headers);
  });

  app.all("/", () => {
    throw new HttpError(
      405,
      "method_not_allowed",
      "Cannot serve this method: expected POST or OPTIONS",
      undefined,
      { "Allow": "POST, OPTIONS" },
    );
  });

  return app;
}

/**
 * `POST /api/v1/logs` itself: the synchronous checks, then the group
 * commit. Throws an {@linkcode HttpError} for every refusal; the app's
 * error handler answers it.
 */
function postHandler(
  options: LogsRouteOptions,
): (req: Request, info: { remoteAddr?: Deno.NetAddr }) => Promise<Response> {
  const now = options.now ?? Date.now;
  return async (req, info) => {
    const receivedAt = now();
    options.admission?.admit(req, info);
    checkContentType(req.headers.get("content-type"));
    const bytes = await readBody(req, {
      limit: options.maxBodyBytes,
      ...(options.bodies ? { guard: options.bodies } : {}),
    });
    // Everything the checks build stays in this call: only the entry is
    // kept while the request waits for its commit.
    const entry = queuedEntry(bytes, req.headers, receivedAt);
    try {
      await options.producer.submit(entry);
    } catch (error) {
      if (error instanceof OverloadedError) throw unavailable(error.message);
      if (error instanceof CommitFailedError) {
        throw unavailable("Cannot queue the entry now: storage is unavailable");
      }
      throw error;
    }
    return jsonResponse(QUEUED, 200, corsHeaders(entry.origin ?? null));
  };
}

/**
 * The entry of a request whose body was read: checks 10-14 of
 * docs/design.md#synchronous-checks, each throwing its {@linkcode HttpError}.
 */
function queuedEntry(
  bytes: Uint8Array,
  headers: Headers,
  receivedAt: number,
): QueuedEntry {
  let text: string;
  try {
    text = decoder.decode(bytes);
  } catch {
    throw invalidJson("Cannot decode the body: not valid UTF-8");
  }
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch (error) {
    throw invalidJson(
      `Cannot parse the body as JSON: ${(error as Error).message}`,
    );
  }
  if (typeof body !== "object" || body === null || Array.isArray(body)) {
    throw invalidJson("Cannot accept the body: expected a JSON object");
  }
  const signature = headers.get("signature");
  // The members' own text is kept only for a signature check.
  const scan = scanJson(text, MAX_DEPTH, signature !== null, STORED_AS_SENT);
  if (scan.duplicate !== undefined) {
    throw invalidJson(
      `Cannot accept the body: member "${scan.duplicate}" appears more than once`,
    );
  }
  if (scan.tooDeepIn !== undefined) {
    throw invalidBody([{
      path: scan.tooDeepIn || "(body)",
      message: `Nesting is deeper than ${MAX_DEPTH} levels`,
    }]);
  }
  const valid = validateEntry(body as Record<string, unknown>);
  // A 200 stores what was sent: what a parse would change is refused too.
  if (Array.isArray(valid) || scan.inexact !== undefined) {
    throw invalidBody([
      ...(Array.isArray(valid) ? valid : []),
      ...(scan.inexact ?? []),
    ]);
  }
  const { level, projectId, data, device, context, appid } = valid;
  const origin = headers.get("origin");
  // Members in the stored line's order, the line first: the consumer cuts
  // the line from this entry's JSON (db/storage/lines.ts, lineFromQueued).
  const entry = { id: createId(receivedAt), level, data } as QueuedEntry;
  if (device !== undefined) entry.device = device;
  if (context !== undefined) entry.context = context;
  if (appid != null) entry.appid = appid;
  if (origin !== null) entry.origin = origin;
  entry.receivedAt = receivedAt;
  entry.projectId = projectId;
  if (signature !== null) {
    entry.signature = signature;
    entry.timestamp = headers.get("timestamp") ?? "";
    entry.raw = {};
    for (const name of SIGNED_MEMBERS) {
      const span = scan.spans!.get(name);
      if (span) entry.raw[name] = text.slice(span[0], span[1]);
    }
  }
  return entry;
}

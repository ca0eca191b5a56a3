/**
 * The HTTP application: the logs route, `404` for every other path, and the
 * one error handler that turns errors into the JSON error body, with CORS
 * headers so that a browser can read it.
 *
 * @module
 */
import { Hono } from "hono";
import { HttpError } from "./routes/errors.ts";
import { type Env, logsRoute, type LogsRouteOptions } from "./routes/logs.ts";
import { errorResponse } from "./routes/responses.ts";

/** Path of the one endpoint. */
export const LOGS_PATH = "/api/v1/logs";

/**
 * Builds the app. It opens nothing and reads no environment: everything it
 * needs is passed in.
 *
 * @example
 * ```ts
 * const app = createApp({ producer, maxBodyBytes: 65536 });
 * Deno.serve((req, info) => app.fetch(req, { remoteAddr: info.remoteAddr }));
 * ```
 */
export function createApp(options: LogsRouteOptions): Hono<Env> {
  const app = new Hono<Env>();
  app.route(LOGS_PATH, logsRoute(options));
  app.notFound(() =>
    errorResponse(
      new HttpError(
        404,
        "not_found",
        `Cannot find this path: the endpoint is POST ${LOGS_PATH}`,
      ),
      null,
    )
  );
  app.onError((error, c) => {
    if (!(error instanceof HttpError)) {
      console.error("Unexpected error:", error);
    }
    const known = error instanceof HttpError ? error : new HttpError(
      503,
      "unavailable",
      "Cannot handle the request now",
      undefined,
      { "Retry-After": "1" },
    );
    return errorResponse(known, c.req.header("origin") ?? null);
  });
  return app;
}

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
import { ErrorLog } from "./routes/error_log.ts";
import { answerError, errorResponse } from "./routes/responses.ts";

/** Path of the one endpoint. */
export const LOGS_PATH = "/api/v1/logs";

/** Options of {@linkcode createApp}. */
export interface AppOptions extends LogsRouteOptions {
  /**
   * Where unexpected errors are logged, rate-limited.
   * @default {new ErrorLog()} (stderr)
   */
  errorLog?: ErrorLog;
}

/**
 * Builds the app. It opens nothing and reads no environment: everything it
 * needs is passed in.
 *
 * @example
 * ```ts
 * const app = createApp({ producer, maxBodyBytes: 65536 });
 * Deno.serve((req, info) => app.fetch(req, info));
 * ```
 */
export function createApp(options: AppOptions): Hono<Env> {
  const app = new Hono<Env>();
  const errorLog = options.errorLog ?? new ErrorLog();
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
  app.onError((error, c) =>
    answerError(error, c.req.header("origin") ?? null, errorLog)
  );
  return app;
}

/**
 * The client library of the log ingestion service, for browsers, Deno,
 * Node 20+ and Bun, with no dependencies: `createLogger()` sends entries
 * paced under the service's rate limit, retried on `429`, `503` and network
 * errors, signed when given the project secret, and sent by beacon when a
 * page is left. `signEntry()` and `sign()` are the signature on its own, for
 * code that sends by itself.
 *
 * Deno imports this file; browsers, Node and Bun import the build,
 * `client/dist/logger.js` (or `logger.global.js` in a script tag, which
 * defines `LogIngest`), made by `deno task build:client`.
 *
 * @example
 * ```ts
 * import { createLogger } from "./client/mod.ts";
 *
 * const logger = createLogger({
 *   endpoint: "https://logs.example.com/api/v1/logs",
 *   projectId: Deno.env.get("PROJECT_ID")!,
 *   secret: Deno.env.get("SECRET"),
 *   context: { service: "billing", environment: "production" },
 * });
 * logger.captureErrors();
 * logger.info("Started", undefined, { version: "1.4.2" });
 * await logger.close();
 * ```
 *
 * @module
 */
export {
  type CaptureOptions,
  type ConsoleMethod,
  createLogger,
  type DeliveryError,
  type DeliveryOptions,
  type DeliveryStats,
  type LevelMethod,
  type Logger,
  type LoggerOptions,
  type Message,
} from "./logger.ts";
export {
  type Entry,
  sign,
  type SignatureHeaders,
  signedParams,
  signEntry,
} from "./sign.ts";

/**
 * A real HTTP server for the client library's tests: the app of a test
 * harness (in-memory KV, wall clock) behind `Deno.serve` on 127.0.0.1, port 0,
 * with the service's rate limiter; and waiting for entries to be stored.
 *
 * @module
 */
import type { LogRecord } from "../../domain/entry.ts";
import { RateLimiter } from "../../routes/rate_limit/mod.ts";
import { type Harness, harness, serve, wallClock } from "./harness.ts";

/** A server listening on a local port. */
export interface LiveServer {
  h: Harness;
  /** `http://127.0.0.1:PORT/api/v1/logs`. */
  endpoint: string;
  /**
   * Processes what was queued until `projectId` holds `count` entries or
   * `timeoutMs` has passed; returns the entries stored.
   */
  stored(
    projectId: string,
    count: number,
    timeoutMs?: number,
  ): Promise<LogRecord[]>;
  close(): Promise<void>;
}

// The client suites take the wall clock from here, beside the server.
export { wallClock } from "./harness.ts";

/**
 * Starts the app on a free port, limited to `rps` requests per second with a
 * burst of `burst` per client address.
 *
 * @example
 * ```ts
 * const server = await startServer({ rps: 20, burst: 50 });
 * try { ... } finally { await server.close(); }
 * ```
 */
export async function startServer(
  options: {
    rps: number;
    burst: number;
    /** Told of every request before it is handled. */
    onRequest?: (req: Request) => void;
    /** Clock of the rate limiter. @default {Date.now} */
    now?: () => number;
    /**
     * Skew a signed entry's timestamp may have against the server's wall
     * clock: a client on a faster clock needs more. @default the service's
     */
    maxSkewMs?: number;
  },
): Promise<LiveServer> {
  const h = await harness({
    clock: wallClock,
    ...(options.maxSkewMs === undefined
      ? {}
      : { config: { signatureMaxSkewMs: options.maxSkewMs } }),
    admission: new RateLimiter({
      rps: options.rps,
      burst: options.burst,
      ...(options.now ? { now: options.now } : {}),
    }),
  });
  const server = serve((req, info) => {
    options.onRequest?.(req);
    return h.app.fetch(req, { remoteAddr: info.remoteAddr });
  });
  return {
    h,
    endpoint: `http://127.0.0.1:${server.addr.port}/api/v1/logs`,
    async stored(projectId, count, timeoutMs = 30_000) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        await h.process();
        const logs = await h.logs(projectId);
        if (logs.length >= count || Date.now() > deadline) return logs;
        await new Promise((go) => setTimeout(go, 25));
      }
    },
    async close() {
      await server.shutdown();
      await h.close();
    },
  };
}

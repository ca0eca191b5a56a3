/**
 * Entry point: reads the configuration, opens KV, starts the queue pipeline
 * and the rate limiter's timers, and serves HTTP. Wiring only; everything
 * else receives what it needs.
 *
 * @module
 */
import { createApp, LOGS_PATH } from "./app.ts";
import { loadConfig } from "./config.ts";
import { openKv } from "./db/open.ts";
import { createPipeline } from "./queue/pipeline.ts";
import { RateLimiter } from "./routes/rate_limit/mod.ts";
import { BodyGuard } from "./routes/body_guard.ts";
import { ErrorLog } from "./routes/error_log.ts";
import { logsFastPath } from "./routes/logs.ts";
import { serveResilient } from "./server/serve.ts";

/** How often the rate limiter reads other instances' counters. */
const RATE_SYNC_MS = 250;
/** How often the rate limiter deletes the counters of ended epochs. */
const RATE_CLEANUP_MS = 60_000;

/** What the cron below runs; set once the pipeline exists, where no queue runs. */
let cronSweep: (() => Promise<void>) | undefined;

// Deno Deploy registers crons only while the entry module is first
// evaluated, before any `await`: this stays at top level, synchronous.
// Where no queue delivers wake-ups (Deno Deploy), the cron sweeps as well.
if (import.meta.main && "cron" in Deno) {
  try {
    Deno.cron("sweep pending batches", "* * * * *", async () => {
      await cronSweep?.();
    });
  } catch { /* cron unavailable: the interval sweeper still runs */ }
}

if (import.meta.main) {
  const config = loadConfig(Deno.env.toObject());
  const kv = await openKv(config.kvPath);
  const limiter = new RateLimiter({
    rps: config.rateLimitRps,
    burst: config.rateLimitBurst,
    trustProxy: config.trustProxy,
  });
  const pipeline = createPipeline({ kv, config, rider: limiter });
  pipeline.start();
  const timers = [
    setInterval(() => {
      pipeline.producer.poke();
      limiter.sync(kv).catch((e) =>
        console.error("Cannot sync rate counters:", e)
      );
    }, RATE_SYNC_MS),
    setInterval(() => {
      limiter.cleanup(kv).catch((e) =>
        console.error("Cannot delete old rate counters:", e)
      );
    }, RATE_CLEANUP_MS),
  ];
  if (!config.queue) {
    cronSweep = async () => {
      await pipeline.worker.sweep();
    };
  }
  const errorLog = new ErrorLog();
  const bodies = new BodyGuard({
    budgetBytes: config.maxBodyBudgetBytes,
    timeoutMs: config.bodyTimeoutMs,
  });
  bodies.start();
  timers.push(setInterval(() => errorLog.flush(), 1000));
  const routeOptions = {
    producer: pipeline.producer,
    maxBodyBytes: config.maxBodyBytes,
    admission: limiter,
    bodies,
    errorLog,
  };
  const app = createApp(routeOptions);
  const server = serveResilient({
    port: config.port,
    hostname: config.hostname,
    onListen: ({ hostname, port }, again) =>
      console.log(
        `Listening${
          again ? " again" : ""
        } on http://${hostname}:${port}/api/v1/logs`,
      ),
    onFailure: (error) =>
      errorLog.report(error, "Cannot accept connections, listening again"),
    // Only what escapes the app (a failing response body): logged, capped.
    onError: (error) => {
      errorLog.report(error);
      return new Response(null, { status: 500 });
    },
    // POST on the endpoint skips the router; the app serves the rest.
    handler: logsFastPath(
      { ...routeOptions, path: LOGS_PATH },
      (req, info) => app.fetch(req, { remoteAddr: info.remoteAddr }),
    ),
  });
  const shutdown = async () => {
    await server.shutdown();
    bodies.stop();
    timers.forEach(clearInterval);
    await pipeline.stop();
    kv.close();
    Deno.exit(0);
  };
  for (const signal of ["SIGINT", "SIGTERM"] as const) {
    try {
      Deno.addSignalListener(signal, shutdown);
    } catch { /* no signals on this platform (Deno Deploy) */ }
  }
}

/**
 * Entry point: reads the configuration, opens KV, starts the queue pipeline
 * (which commits the rate limiter's counters) and the limiter's timers, and
 * serves HTTP. A malformed variable, a database that cannot be opened and an
 * address that cannot be listened on (a port taken) stop start-up with one
 * line and exit code 1. Wiring only; everything else receives what it needs.
 *
 * @module
 */
import { createApp } from "./app.ts";
import { type Config, loadConfig } from "./config.ts";
import {
  dashboardBounds,
  type DashboardConfig,
  dashboardRequested,
  loadDashboardConfig,
} from "./dashboard/config.ts";
import { DASHBOARD_BASE, mountDashboard } from "./dashboard/mount.ts";
import { lockedAsLine } from "./db/locked.ts";
import { isLocalFile, openKv } from "./db/open.ts";
import { openSpaceGuard, type SpaceGuard } from "./db/space.ts";
import { logMergeFailure } from "./queue/merger.ts";
import { queryThreadOf } from "./db/query/thread.ts";
import { createPipeline } from "./queue/pipeline.ts";
import { BusyTicker } from "./queue/ticker.ts";
import { RateLimiter } from "./routes/rate_limit/mod.ts";
import { BodyGuard } from "./routes/body_guard.ts";
import { ErrorLog } from "./routes/error_log.ts";
import { listenOrExit, onStopSignals, serveResilient } from "./server/serve.ts";
import { createAlertLoop } from "./alerts/mod.ts";
import { measured, metricsHandler, RequestMetrics } from "./server/metrics.ts";

/**
 * How often the rate limiter reads other instances' counters, while some
 * address is busy enough to be counted (at rest: never).
 */
const RATE_SYNC_MS = 250;
/** How often the rate limiter deletes the counters of ended epochs. */
const RATE_CLEANUP_MS = 60_000;

/** What the cron below runs; set once the pipeline exists. */
let cronSweep: (() => Promise<void>) | undefined;
/** What the alerts cron runs; set once the alert loop exists. */
let cronAlerts: (() => Promise<unknown>) | undefined;

// Deno Deploy registers crons only while the entry module is first
// evaluated, before any `await`: this stays at top level, synchronous.
// Where intervals may not run between requests (Deno Deploy), the cron
// sweeps as well.
if (import.meta.main && "cron" in Deno) {
  try {
    Deno.cron("sweep pending batches", "* * * * *", async () => {
      await cronSweep?.();
    });
  } catch { /* cron unavailable: the interval sweeper still runs */ }
}
// Alerts are evaluated by an interval too; the cron keeps them going where
// intervals may not run between requests (docs/alerts.md).
if (import.meta.main && "cron" in Deno) {
  try {
    Deno.cron("evaluate alerts", "* * * * *", async () => {
      await cronAlerts?.();
    });
  } catch { /* cron unavailable: the alert interval still runs */ }
}

/**
 * Reads the configuration, opens KV and puts the disk space guard in place.
 * A malformed variable or a database that cannot be opened or written stops
 * start-up with one line naming the variable, not a stack trace.
 */
async function openStorage(): Promise<
  { config: Config; kv: Deno.Kv; space: SpaceGuard | null }
> {
  const config = loadConfig(Deno.env.toObject());
  const kv = await openKv(config.kvPath, { probeWrite: true });
  try {
    return { config, kv, space: await openSpaceGuard(config.kvPath) };
  } catch (error) {
    kv.close();
    throw error;
  }
}

if (import.meta.main) {
  const env = Deno.env.toObject();
  let dashboard: DashboardConfig | null = null;
  try {
    dashboard = dashboardRequested(env) ? loadDashboardConfig(env) : null;
  } catch (error) {
    console.error(error instanceof Error ? error.message : String(error));
    Deno.exit(1);
  }
  const { config, kv, space } = await openStorage().catch((error) => {
    console.error(error instanceof Error ? error.message : String(error));
    Deno.exit(1);
  });
  const limiter = new RateLimiter({
    rps: config.rateLimitRps,
    burst: config.rateLimitBurst,
    trustProxy: config.trustProxy,
  });
  // Reads of the file in a thread of their own
  // (docs/query.md#a-thread-of-its-own): the dashboard's searches, and the
  // consumer's stacks resolved through source maps.
  const queryThread = queryThreadOf(kv, config.kvPath, config.queryThread);
  const pipeline = createPipeline({
    kv,
    config,
    rider: limiter,
    lingerMs: config.commitLingerMs,
    ...(space ? { space } : {}),
    ...(config.mergeThread && isLocalFile(config.kvPath)
      ? { mergeThread: config.kvPath }
      : {}),
    ...(queryThread ? { resolveStacks: queryThread.resolveStacks } : {}),
  });
  pipeline.start();
  const rateSync = new BusyTicker(
    RATE_SYNC_MS,
    () => limiter.countedSize > 0,
    () =>
      void limiter.sync(kv).catch((e) =>
        console.error("Cannot sync rate counters:", lockedAsLine(e))
      ),
  );
  limiter.watch(() => rateSync.wake());
  const cleanup = setInterval(() => {
    limiter.cleanup(kv).catch((e) =>
      console.error("Cannot delete old rate counters:", lockedAsLine(e))
    );
  }, RATE_CLEANUP_MS);
  // Where intervals may not run while no request comes (Deno Deploy), the
  // cron registered at the top of this module sweeps as well.
  // A failed round is one line, not the runtime's stack trace of the cron.
  cronSweep = async () => {
    await pipeline.worker.sweep().catch((e) =>
      console.error("Cannot sweep pending batches:", lockedAsLine(e))
    );
    await pipeline.merger?.round().catch(logMergeFailure);
    // Counters of past epochs carry no expiry: their sweep, too.
    await limiter.cleanup(kv).catch((e) =>
      console.error("Cannot delete old rate counters:", lockedAsLine(e))
    );
  };
  // Alerts and metrics (docs/alerts.md, docs/metrics.md): beside the ingest
  // path, never in it.
  const alerts = createAlertLoop({
    kv,
    allowPrivate: config.alertPrivateTargets,
    ...(config.dashboardUrl ? { dashboardUrl: config.dashboardUrl } : {}),
    ...(queryThread ? { reads: queryThread } : {}),
  });
  alerts.start();
  cronAlerts = () =>
    alerts.tick().catch((e) => console.error("Alerts:", lockedAsLine(e)));
  const requests = new RequestMetrics();
  const metricsPort = config.metricsPort;
  const metricsServer = metricsPort === undefined
    ? null
    : listenOrExit(config.metricsHostname, metricsPort, () =>
      Deno.serve(
        {
          port: metricsPort,
          hostname: config.metricsHostname,
          onListen: ({ hostname, port }) =>
            console.log(`Metrics and health on http://${hostname}:${port}/`),
        },
        metricsHandler({
          kv,
          requests,
          // The worker's own sweeps are the consumer's sign of life.
          sweptAt: () => pipeline.worker.sweptAt,
          token: config.metricsToken,
        }),
      ));
  const errorLog = new ErrorLog();
  const bodies = new BodyGuard({
    budgetBytes: config.maxBodyBudgetBytes,
    timeoutMs: config.bodyTimeoutMs,
  });
  bodies.start();
  errorLog.start();
  const routeOptions = {
    producer: pipeline.producer,
    maxBodyBytes: config.maxBodyBytes,
    admission: limiter,
    bodies,
    errorLog,
  };
  const app = createApp(routeOptions);
  if (dashboard) {
    mountDashboard(app, {
      kv,
      ...(queryThread ? { reads: queryThread } : {}),
      password: dashboard.password,
      ...dashboardBounds(dashboard),
      trustProxy: config.trustProxy,
      allowPrivateTargets: config.alertPrivateTargets,
    });
  }
  const serve: Deno.ServeHandler<Deno.Addr> = (req, info) =>
    app.fetch(req, info);
  // Requests are observed for /metrics only when it is served.
  const service = metricsServer ? measured(serve, requests) : serve;
  // A port taken at start-up is one line and exit code 1, not a stack.
  const server = listenOrExit(
    config.hostname,
    config.port,
    () =>
      serveResilient({
        port: config.port,
        hostname: config.hostname,
        onListen: ({ hostname, port }, again) => {
          console.log(
            `Listening${
              again ? " again" : ""
            } on http://${hostname}:${port}/api/v1/logs`,
          );
          if (dashboard && !again) {
            console.log(
              `Dashboard on http://${hostname}:${port}${DASHBOARD_BASE}/`,
            );
          }
        },
        onFailure: (error) =>
          errorLog.report(error, "Cannot accept connections, listening again"),
        // Only what escapes the app (a failing response body): logged, capped.
        onError: (error) => {
          errorLog.report(error);
          return new Response(null, { status: 500 });
        },
        // The peer address is made on demand: `info` is passed as it is.
        handler: service,
      }),
  );
  const shutdown = async () => {
    await server.shutdown();
    await metricsServer?.shutdown();
    await alerts.stop();
    bodies.stop();
    clearInterval(cleanup);
    rateSync.stop();
    errorLog.stop();
    await pipeline.stop();
    await queryThread?.stop();
    kv.close();
    Deno.exit(0);
  };
  onStopSignals(shutdown);
}

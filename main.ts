/**
 * Entry point: reads the configuration, opens KV, starts the queue pipeline
 * and the rate limiter's timers, and serves HTTP. Wiring only; everything
 * else receives what it needs.
 *
 * @module
 */
import { createApp } from "./app.ts";
import { loadConfig } from "./config.ts";
import { dashboardRequested, loadDashboardConfig } from "./dashboard/config.ts";
import { DASHBOARD_BASE, mountDashboard } from "./dashboard/mount.ts";
import { openKv } from "./db/open.ts";
import { createPipeline } from "./queue/pipeline.ts";
import { RateLimiter } from "./routes/rate_limit.ts";

/** How often the rate limiter reads other instances' counters. */
const RATE_SYNC_MS = 250;

if (import.meta.main) {
  const env = Deno.env.toObject();
  const config = loadConfig(env);
  let dashboard = null;
  try {
    dashboard = dashboardRequested(env) ? loadDashboardConfig(env) : null;
  } catch (error) {
    console.error((error as Error).message);
    Deno.exit(1);
  }
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
    }, 60_000),
  ];
  if (!config.queue && "cron" in Deno) {
    // Where no queue delivers wake-ups (Deno Deploy), a cron sweeps as well.
    try {
      Deno.cron("sweep pending batches", "* * * * *", async () => {
        await pipeline.worker.sweep();
      });
    } catch { /* cron unavailable: the interval sweeper still runs */ }
  }
  const app = createApp({
    producer: pipeline.producer,
    maxBodyBytes: config.maxBodyBytes,
    admission: limiter,
  });
  const service = (req: Request, info: Deno.ServeHandlerInfo<Deno.Addr>) =>
    app.fetch(req, { remoteAddr: info.remoteAddr as Deno.NetAddr });
  const server = Deno.serve(
    {
      port: config.port,
      hostname: config.hostname,
      onListen: ({ hostname, port }) => {
        console.log(`Listening on http://${hostname}:${port}/api/v1/logs`);
        if (dashboard) {
          console.log(
            `Dashboard on http://${hostname}:${port}${DASHBOARD_BASE}/`,
          );
        }
      },
    },
    dashboard
      ? mountDashboard(service, {
        kv,
        password: dashboard.password,
        trustProxy: config.trustProxy,
      })
      : service,
  );
  const shutdown = async () => {
    await server.shutdown();
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

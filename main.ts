/**
 * Entry point: reads the configuration, opens KV, starts the queue pipeline
 * and the rate limiter's timers, and serves HTTP. Wiring only; everything
 * else receives what it needs.
 *
 * @module
 */
import { createApp } from "./app.ts";
import { type Config, loadConfig } from "./config.ts";
import { openKv } from "./db/open.ts";
import { openSpaceGuard, type SpaceGuard } from "./db/space.ts";
import { createPipeline } from "./queue/pipeline.ts";
import { RateLimiter } from "./routes/rate_limit.ts";

/** How often the rate limiter reads other instances' counters. */
const RATE_SYNC_MS = 250;

/**
 * Reads the configuration, opens KV and puts the disk space guard in place.
 * A malformed variable or a database that cannot be opened or written stops
 * start-up with one line naming the variable, not a stack trace.
 */
async function openStorage(): Promise<
  { config: Config; kv: Deno.Kv; space: SpaceGuard | null }
> {
  const config = loadConfig(Deno.env.toObject());
  const kv = await openKv(config.kvPath);
  try {
    return { config, kv, space: await openSpaceGuard(config.kvPath) };
  } catch (error) {
    kv.close();
    throw error;
  }
}

if (import.meta.main) {
  const { config, kv, space } = await openStorage().catch((error) => {
    console.error(error instanceof Error ? error.message : String(error));
    Deno.exit(1);
  });
  const limiter = new RateLimiter({
    rps: config.rateLimitRps,
    burst: config.rateLimitBurst,
    trustProxy: config.trustProxy,
  });
  const pipeline = createPipeline({
    kv,
    config,
    rider: limiter,
    ...(space ? { space } : {}),
  });
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
  if ("cron" in Deno) {
    // Where intervals may not run while no request comes (Deno Deploy), a
    // cron sweeps as well.
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
  const server = Deno.serve(
    {
      port: config.port,
      hostname: config.hostname,
      onListen: ({ hostname, port }) =>
        console.log(`Listening on http://${hostname}:${port}/api/v1/logs`),
    },
    (req, info) =>
      app.fetch(req, { remoteAddr: info.remoteAddr as Deno.NetAddr }),
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

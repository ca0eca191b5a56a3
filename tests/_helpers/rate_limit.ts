/**
 * A rate limiter whose counters reach KV: it writes every count it takes,
 * and rides on a pipeline over an in-memory KV, as the server wires it.
 *
 * @module
 */
import { createPipeline, type Pipeline } from "../../queue/pipeline.ts";
import {
  RateLimiter,
  type RateLimiterOptions,
} from "../../routes/rate_limit/mod.ts";
import { type FakeClock, fakeClock, testConfig } from "./harness.ts";

/** What {@linkcode withLimiterKv} hands to a test. */
export interface LimiterKv {
  kv: Deno.Kv;
  clock: FakeClock;
  /** 20 requests per second with a burst of 50, on `clock`. */
  limiter: RateLimiter;
  /** Commits the limiter's counters when flushed (it is not started). */
  pipeline: Pipeline;
}

/**
 * Runs `fn` with a limiter that writes every count to a fresh in-memory KV,
 * then stops the pipeline and closes the KV.
 *
 * @example
 * ```ts
 * await withLimiterKv({}, async ({ kv, limiter, pipeline }) => {
 *   limiter.take("198.51.100.1");
 *   await pipeline.producer.flush();
 * });
 * ```
 */
export async function withLimiterKv(
  options: { trustProxy?: number },
  fn: (l: LimiterKv) => Promise<void>,
): Promise<void> {
  const kv = await Deno.openKv(":memory:");
  const clock = fakeClock();
  const { limiter, pipeline } = limiterOnKv(kv, clock, {
    ...options,
    writeThreshold: 1,
  });
  try {
    await fn({ kv, clock, limiter, pipeline });
  } finally {
    await pipeline.stop();
    kv.close();
  }
}

/**
 * A limiter of 20 requests per second with a burst of 50 on `clock` (and
 * `options`), riding a pipeline over `kv` that hands no batch to a consumer,
 * as the server wires them.
 */
export function limiterOnKv(
  kv: Deno.Kv,
  clock: FakeClock,
  options: Partial<RateLimiterOptions> = {},
): { limiter: RateLimiter; pipeline: Pipeline } {
  const limiter = new RateLimiter({
    rps: 20,
    burst: 50,
    ...options,
    now: clock.now,
  });
  const pipeline = createPipeline({
    kv,
    config: testConfig(),
    now: clock.now,
    rider: limiter,
    handOver: false,
  });
  return { limiter, pipeline };
}

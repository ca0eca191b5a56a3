/**
 * The client library against the real server (`Deno.serve`, the service's
 * rate limiter, the queue and the consumer): a burst of 500 entries from one
 * signing logger, all stored exactly once with `429`s absorbed; the default
 * pacing never limited by the default limit.
 */
import assert from "node:assert/strict";
import { createLogger } from "../../client/mod.ts";
import { stats } from "../_helpers/harness.ts";
import { startServer } from "../_helpers/client_server.ts";

/** A `fetch` that counts the answers by status, and tells each one. */
function countingFetch(onStatus: (status: number) => void = () => {}) {
  const statuses = new Map<number, number>();
  const counted: typeof fetch = async (input, init) => {
    const res = await fetch(input, init);
    statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
    onStatus(res.status);
    return res;
  };
  return {
    fetch: counted,
    count: (status: number) => statuses.get(status) ?? 0,
  };
}

/**
 * Time running `factor` times faster than the wall clock, for the rate limiter
 * and the client alike: the service's and the client's defaults, in a
 * twentieth of the time. It stands still until `run()`, so that what happens
 * before (the other sender's requests, the client's first burst) takes no
 * time however slow the machine is.
 */
function fastTime(factor: number) {
  const start = Date.now();
  let runningSince: number | null = null;
  return {
    now: () =>
      runningSince === null
        ? start
        : start + (Date.now() - runningSince) * factor,
    run: () => {
      runningSince ??= Date.now();
    },
    setTimeout: (fn: () => void, ms: number) => setTimeout(fn, ms / factor),
    clearTimeout: (id: number) => clearTimeout(id),
  };
}

Deno.test("a burst of 500 entries from one client: all stored exactly once, 429s absorbed", async () => {
  // The defaults on both sides (20/s, burst 50), 20 times faster. Another
  // sender behind the same address has just used 40 of its 50 tokens, so the
  // client's first burst is refused in part.
  const speed = 20;
  const { run, ...time } = fastTime(speed);
  // The client signs with the fast clock, the server checks against the
  // wall clock: a skew of a day, so that a slow run is never refused.
  const server = await startServer({
    rps: 20,
    burst: 50,
    now: time.now,
    maxSkewMs: 24 * 60 * 60_000,
  });
  try {
    const project = await server.h.project([]);
    for (let i = 0; i < 40; i++) {
      // Refused as invalid, but every POST takes a token.
      const res = await fetch(server.endpoint, {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: "{}",
      });
      assert.equal(res.status, 400);
      await res.body?.cancel();
    }
    // Time runs from the first 429: the other sender's 40 requests and the
    // client's first 10 accepted ones take none, on any machine.
    const net = countingFetch((status) => {
      if (status === 429) run();
    });
    const errors: unknown[] = [];
    const logger = createLogger({
      endpoint: server.endpoint,
      projectId: project.id,
      secret: project.secret,
      context: { environment: "test" },
      fetch: net.fetch,
      ...time,
      // Requests still take real time: give them 10 real seconds.
      timeoutMs: 10_000 * speed,
      onError: (error) => errors.push(error),
    });
    const started = performance.now();
    for (let seq = 0; seq < 500; seq++) {
      logger.info("Burst", undefined, { seq });
    }
    assert.equal(await logger.close(20_000 * speed), true);
    const seconds = (performance.now() - started) / 1000;
    const logs = await server.stored(project.id, 500);
    const seqs = logs.map((log) => log.data.seq as number)
      .sort((a, b) => a - b);
    const result = logger.stats();
    console.log(
      `500-entry burst: ${result.sent} sent, ${logs.length} stored, ` +
        `${result.retried} retried (${net.count(429)} answered 429), ` +
        `${seconds.toFixed(2)} s (${
          (seconds * speed).toFixed(1)
        } s at the real rate)`,
    );
    assert.deepEqual(errors, []);
    assert.deepEqual(seqs, Array.from({ length: 500 }, (_, i) => i));
    assert.ok(logs.every((log) => log.auth === "signature"));
    assert.deepEqual(await stats(server.h.kv, project.id), {
      accepted: 500,
      rejected: {},
    });
    assert.ok(net.count(429) > 0, "the burst meets the limit");
    assert.equal(result.retried, net.count(429));
    assert.equal(result.sent, 500);
    assert.equal(net.count(200), 500);
    assert.equal(result.dropped + result.failed, 0);
    // 10 tokens left, then 20/s: at least 24.5 s at the real rate.
    assert.ok(seconds * speed >= 24, `${seconds * speed} s`);
  } finally {
    await server.close();
  }
});

Deno.test("with the defaults on both sides (20/s, burst 50), the client is never limited", async () => {
  const server = await startServer({ rps: 20, burst: 50 });
  try {
    const project = await server.h.project([]);
    const net = countingFetch();
    const logger = createLogger({
      endpoint: server.endpoint,
      projectId: project.id,
      secret: project.secret,
      fetch: net.fetch,
    });
    const started = performance.now();
    for (let seq = 0; seq < 60; seq++) logger.info("Paced", undefined, { seq });
    // Against a hang only: about 0.5 s of pacing, several on a busy machine.
    assert.equal(await logger.close(60_000), true);
    const ms = performance.now() - started;
    assert.equal(net.count(429), 0);
    assert.equal(net.count(200), 60);
    // 50 at once, then 10 more at 20/s.
    assert.ok(ms >= 450, `took ${ms} ms`);
    assert.equal((await server.stored(project.id, 60)).length, 60);
  } finally {
    await server.close();
  }
});

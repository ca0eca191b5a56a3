/**
 * A flood of `X-Forwarded-For` addresses behind a trusted proxy
 * (`TRUST_PROXY`): every request names a new client, so the limiter's tables
 * would grow with each one. They stay within their caps, and a client that
 * used its bucket keeps it through the flood.
 *
 * @module
 */
import assert from "node:assert/strict";
import { createApp } from "../../../app.ts";
import { HttpError } from "../../../routes/errors.ts";
import { RateLimiter } from "../../../routes/rate_limit/mod.ts";
import { fakeClock, harness, serve } from "../../_helpers/harness.ts";

const ACTIVE = "198.51.100.1";

/** A random address, IPv4 or IPv6 (a /64 of its own). */
function randomAddress(i: number): string {
  const word = () => Math.floor(Math.random() * 65536).toString(16);
  return i % 2 === 0
    ? `2001:${word()}:${word()}:${word()}::1`
    : `${1 + (i % 223)}.${i >> 16 & 255}.${i >> 8 & 255}.${i & 255}`;
}

function forwarded(address: string): Request {
  return new Request("http://x/api/v1/logs", {
    method: "POST",
    headers: { "X-Forwarded-For": address },
  });
}

/** How many of `n` requests of `address` the limiter admits. */
function admitted(limiter: RateLimiter, address: string, n: number): number {
  let ok = 0;
  for (let i = 0; i < n; i++) {
    try {
      limiter.admit(forwarded(address), {});
      ok++;
    } catch (error) {
      // A refusal is a 429; anything else fails the test.
      if (!(error instanceof HttpError) || error.status !== 429) throw error;
    }
  }
  return ok;
}

Deno.test("a flood of forwarded addresses keeps the limiter's tables within their caps and resets no used bucket", () => {
  const clock = fakeClock();
  const limiter = new RateLimiter({
    rps: 20,
    burst: 50,
    trustProxy: 1,
    now: clock.now,
    maxBuckets: 1000,
    maxCounted: 100,
  });
  assert.equal(admitted(limiter, ACTIVE, 60), 50);
  // 20,000 new addresses in 200 ms (each sending 6 requests, so that they
  // are busy and counted), 20 times the cap of buckets.
  for (let i = 0; i < 20_000; i++) {
    const address = randomAddress(i);
    // A new address has a full bucket of its own.
    assert.equal(admitted(limiter, address, 6), 6);
    if (i % 100 === 0) {
      clock.advance(1);
      assert.ok(limiter.size <= 1000, `${limiter.size} buckets`);
      assert.ok(limiter.countedSize <= 100, `${limiter.countedSize} counted`);
    }
  }
  // 200 ms refilled 4 tokens of the active client, not its whole bucket.
  assert.equal(admitted(limiter, ACTIVE, 50), 4);
});

Deno.test("over real sockets, a flood of forwarded addresses holds the buckets to the cap and the active client to its limit", async () => {
  const h = await harness();
  // The limiter's time stands still: however long the flood takes on this
  // machine, the active client's bucket gets no token back.
  const frozen = Date.now();
  const limiter = new RateLimiter({
    rps: 1,
    burst: 50,
    trustProxy: 1,
    maxBuckets: 2000,
    now: () => frozen,
  });
  const app = createApp({
    producer: h.pipeline.producer,
    maxBodyBytes: h.config.maxBodyBytes,
    admission: limiter,
  });
  const server = serve((req, info) => app.fetch(req, info));
  const url = `http://127.0.0.1:${server.addr.port}/api/v1/logs`;
  const body = '{"level":"info","projectId":"p","data":{}}';
  const post = async (address: string) => {
    const res = await fetch(url, {
      method: "POST",
      headers: {
        "Content-Type": "application/json",
        "X-Forwarded-For": `203.0.113.9, ${address}`,
      },
      body,
    });
    await res.body?.cancel();
    return res.status;
  };
  try {
    const first = [];
    for (let i = 0; i < 60; i++) first.push(await post(ACTIVE));
    assert.equal(first.filter((s) => s === 200).length, 50);
    let largest = 0;
    const rssBefore = Deno.memoryUsage().rss;
    let next = 0;
    const total = 8000;
    await Promise.all(Array.from({ length: 16 }, async () => {
      while (next < total) {
        const status = await post(randomAddress(next++));
        assert.equal(status, 200);
        largest = Math.max(largest, limiter.size);
      }
    }));
    const grew = (Deno.memoryUsage().rss - rssBefore) / 2 ** 20;
    console.log(
      `${total} forwarded addresses: at most ${largest} buckets, RSS +${
        grew.toFixed(1)
      } MB`,
    );
    assert.ok(largest <= 2000, `${largest} buckets`);
    // No time passed for the limiter: the active client's bucket is still
    // empty, where a bucket reset by the flood would admit all 20.
    const after = [];
    for (let i = 0; i < 20; i++) after.push(await post(ACTIVE));
    const ok = after.filter((s) => s === 200).length;
    assert.equal(ok, 0, `${ok} of 20 admitted after the flood`);
  } finally {
    await server.shutdown();
    await h.close();
  }
});

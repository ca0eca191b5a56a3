import assert from "node:assert/strict";
import { createApp } from "../../../app.ts";
import { rateLimitsPrefix } from "../../../db/keys.ts";
import type { Pipeline } from "../../../queue/pipeline.ts";
import { clientKey, ipKey } from "../../../routes/rate_limit/address.ts";
import { RateLimiter } from "../../../routes/rate_limit/mod.ts";
import { SharedCounters } from "../../../routes/rate_limit/shared.ts";
import { fakeClock, harness, randomEntry } from "../../_helpers/harness.ts";
import { limiterOnKv, withLimiterKv } from "../../_helpers/rate_limit.ts";

function limiterHarness(options: { trustProxy?: number } = {}) {
  const clock = fakeClock();
  const limiter = new RateLimiter({
    rps: 20,
    burst: 50,
    now: clock.now,
    ...options,
  });
  return harness({ clock, admission: limiter, pipeline: { rider: limiter } })
    .then((h) => ({ h, limiter, clock }));
}

Deno.test("a fresh address may send a burst of 50, the 51st answers 429", async () => {
  const { h } = await limiterHarness();
  try {
    for (let i = 0; i < 50; i++) {
      assert.equal((await h.post(randomEntry())).status, 200);
    }
    const res = await h.post(randomEntry(), {
      Origin: "https://app.example.com",
    });
    assert.equal(res.status, 429);
    const body = await res.json();
    assert.equal(body.error.code, "rate_limited");
    assert.ok(Number(res.headers.get("retry-after")) >= 1);
    assert.equal(res.headers.get("ratelimit-limit"), "50");
    assert.equal(res.headers.get("ratelimit-remaining"), "0");
    assert.ok(Number(res.headers.get("ratelimit-reset")) >= 1);
    assert.equal(
      res.headers.get("access-control-allow-origin"),
      "https://app.example.com",
    );
    assert.match(
      res.headers.get("access-control-expose-headers")!,
      /Retry-After/,
    );
  } finally {
    await h.close();
  }
});

Deno.test("tokens refill at 20 per second", async () => {
  const { h, clock } = await limiterHarness();
  try {
    for (let i = 0; i < 50; i++) await h.post(randomEntry());
    assert.equal((await h.post(randomEntry())).status, 429);
    clock.advance(1000);
    const statuses = [];
    for (let i = 0; i < 21; i++) {
      statuses.push((await h.post(randomEntry())).status);
    }
    assert.equal(statuses.filter((s) => s === 200).length, 20);
    assert.equal(statuses.at(-1), 429);
  } finally {
    await h.close();
  }
});

Deno.test("a client that keeps to 20 per second is never limited", async () => {
  const { h, clock } = await limiterHarness();
  try {
    for (let i = 0; i < 400; i++) {
      assert.equal((await h.post(randomEntry())).status, 200, `request ${i}`);
      clock.advance(50);
    }
  } finally {
    await h.close();
  }
});

Deno.test("over 10 s an address gets at most 20 x 10 + 50 accepted", () => {
  const clock = fakeClock();
  const limiter = new RateLimiter({ rps: 20, burst: 50, now: clock.now });
  let accepted = 0;
  for (let i = 0; i < 2000; i++) {
    if (limiter.take("198.51.100.1") === 0) accepted++;
    clock.advance(5);
  }
  // 10 s of refill plus the burst; the last request comes 5 ms before 10 s.
  assert.ok(accepted <= 250 && accepted >= 249, `accepted ${accepted}`);
});

Deno.test("every POST counts, invalid ones too; OPTIONS does not", async () => {
  const { h } = await limiterHarness();
  try {
    for (let i = 0; i < 10; i++) {
      const res = await h.app.request("/api/v1/logs", { method: "OPTIONS" }, {
        remoteAddr: { transport: "tcp", hostname: "203.0.113.7", port: 1 },
      });
      assert.equal(res.status, 204);
    }
    for (let i = 0; i < 50; i++) assert.equal((await h.post("{")).status, 400);
    assert.equal((await h.post(randomEntry())).status, 429);
  } finally {
    await h.close();
  }
});

Deno.test("addresses are limited separately, IPv6 per /64 prefix", async () => {
  const { h } = await limiterHarness();
  try {
    for (let i = 0; i < 50; i++) {
      await h.post(randomEntry(), {}, `2001:db8:aa:bb::${i.toString(16)}`);
    }
    assert.equal(
      (await h.post(randomEntry(), {}, "2001:db8:aa:bb:ffff::1")).status,
      429,
    );
    assert.equal(
      (await h.post(randomEntry(), {}, "2001:db8:aa:bc::1")).status,
      200,
    );
    assert.equal((await h.post(randomEntry(), {}, "203.0.113.8")).status, 200);
  } finally {
    await h.close();
  }
});

Deno.test("ipKey normalizes IPv4, IPv6 and mapped addresses", () => {
  assert.equal(ipKey("203.0.113.7"), "203.0.113.7");
  assert.equal(ipKey("256.0.0.1"), null);
  assert.equal(ipKey("::1"), "0:0:0:0::/64");
  assert.equal(ipKey("2001:DB8::1"), "2001:db8:0:0::/64");
  assert.equal(ipKey("[2001:db8:1:2:3:4:5:6]"), "2001:db8:1:2::/64");
  assert.equal(ipKey("fe80::1%eth0"), "fe80:0:0:0::/64");
  assert.equal(ipKey("::ffff:198.51.100.9"), "198.51.100.9");
  assert.equal(ipKey("2001:0db8:0000:0001::"), "2001:db8:0:1::/64");
  assert.equal(ipKey("not-an-ip"), null);
  assert.equal(ipKey("1:2:3:4:5:6:7:8:9"), null);
  assert.equal(ipKey("1::2::3"), null);
});

Deno.test("X-Forwarded-For is used only for the trusted number of hops", () => {
  const peer = {
    remoteAddr: { transport: "tcp" as const, hostname: "10.0.0.1", port: 1 },
  };
  const req = (xff?: string) =>
    new Request(
      "http://x/",
      xff ? { headers: { "X-Forwarded-For": xff } } : {},
    );
  assert.equal(clientKey(req("198.51.100.1"), peer, 0), "10.0.0.1");
  assert.equal(clientKey(req("198.51.100.1"), peer, 1), "198.51.100.1");
  assert.equal(
    clientKey(req("1.1.1.1, 198.51.100.1"), peer, 1),
    "198.51.100.1",
  );
  assert.equal(
    clientKey(req("1.1.1.1, 198.51.100.1, 10.0.0.2"), peer, 2),
    "198.51.100.1",
  );
  assert.equal(clientKey(req("forged"), peer, 1), "10.0.0.1");
  assert.equal(clientKey(req(), peer, 1), "10.0.0.1");
});

Deno.test("the peer address is read only when it is the one used", () => {
  let reads = 0;
  const info = {
    get remoteAddr() {
      reads++;
      return { transport: "tcp" as const, hostname: "10.0.0.1", port: 1 };
    },
  };
  const req = new Request("http://x/", {
    headers: { "X-Forwarded-For": "198.51.100.1" },
  });
  assert.equal(clientKey(req, info, 1), "198.51.100.1");
  assert.equal(reads, 0);
  assert.equal(clientKey(req, info, 0), "10.0.0.1");
  assert.equal(reads, 1);
});

Deno.test("idle buckets are dropped once full, so memory stays bounded", async (t) => {
  const ip = (i: number) =>
    `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`;
  await t.step("by refill: about a second of addresses is held", () => {
    const clock = fakeClock();
    const limiter = new RateLimiter({ rps: 20, burst: 50, now: clock.now });
    for (let i = 0; i < 100_000; i++) {
      limiter.take(ip(i));
      clock.advance(1);
    }
    // 1,000 new addresses a second, each full again 50 ms after its request.
    assert.ok(limiter.size <= 1001, `size ${limiter.size}`);
  });
  await t.step("by the cap, under a flood of addresses", () => {
    const clock = fakeClock();
    const limiter = new RateLimiter({
      rps: 20,
      burst: 50,
      now: clock.now,
      maxBuckets: 1000,
    });
    for (let i = 0; i < 100_000; i++) {
      limiter.take(ip(i));
      clock.advance(0.1);
    }
    assert.ok(limiter.size <= 1000, `size ${limiter.size}`);
  });
});

Deno.test("a partly used bucket is kept across generations until it has refilled", () => {
  const clock = fakeClock();
  const limiter = new RateLimiter({ rps: 20, burst: 50, now: clock.now });
  for (let i = 0; i < 50; i++) limiter.take("198.51.100.1");
  // Two seconds of other traffic: several generations come and go.
  for (let k = 0; k < 5; k++) {
    clock.advance(400);
    limiter.take(`198.51.100.${10 + k}`);
  }
  // 40 tokens back of 50: the first address gets 40, then is limited.
  for (let i = 0; i < 40; i++) assert.equal(limiter.take("198.51.100.1"), 0);
  assert.ok(limiter.take("198.51.100.1") >= 1);
});

async function twoInstances(sync: boolean): Promise<number> {
  const dir = await Deno.makeTempDir();
  const path = `${dir}/kv.sqlite`;
  const clock = fakeClock();
  const instances: {
    kv: Deno.Kv;
    limiter: RateLimiter;
    pipeline: Pipeline;
    app: ReturnType<typeof createApp>;
  }[] = [];
  for (let n = 0; n < 2; n++) {
    const kv = await Deno.openKv(path);
    const { limiter, pipeline } = limiterOnKv(kv, clock);
    const app = createApp({
      producer: pipeline.producer,
      maxBodyBytes: 65536,
      now: clock.now,
      admission: limiter,
    });
    instances.push({ kv, limiter, pipeline, app });
  }
  try {
    let accepted = 0;
    // 100 requests per second for 10 s, alternating between the instances,
    // each of which syncs its counters every 250 ms as the server does.
    for (let i = 0; i < 1000; i++) {
      const { app } = instances[i % 2]!;
      const res: Response = await app.request("/api/v1/logs", {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify(randomEntry()),
      }, {
        remoteAddr: { transport: "tcp", hostname: "198.51.100.77", port: 1 },
      });
      if (res.status === 200) accepted++;
      else assert.equal(res.status, 429);
      await res.body?.cancel();
      clock.advance(10);
      if (sync && i % 25 === 24) {
        for (const { limiter, kv, pipeline } of instances) {
          await pipeline.producer.flush();
          await limiter.sync(kv);
        }
      }
    }
    return accepted;
  } finally {
    for (const { kv, pipeline } of instances) {
      await pipeline.stop();
      kv.close();
    }
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("two instances on one KV file hold an address to 1.04 x its allowance over 10 s", async (t) => {
  const single = 20 * 10 + 50;
  await t.step("with counters synced every 250 ms", async () => {
    // Measured: 255 accepted (1.02 x), the same on every run: the clock is
    // driven by hand and every commit and sync is awaited in turn.
    const accepted = await twoInstances(true);
    assert.ok(accepted <= 1.04 * single, `accepted ${accepted}`);
    assert.ok(accepted >= single, `accepted ${accepted}`);
  });
  await t.step(
    "without syncing, each instance would admit its own allowance",
    async () => {
      // Measured: 498 accepted (1.99 x).
      const accepted = await twoInstances(false);
      assert.ok(accepted >= 1.9 * single, `accepted ${accepted}`);
    },
  );
});

Deno.test("old rate counters are deleted", async () => {
  await withLimiterKv({}, async ({ kv, clock, limiter, pipeline }) => {
    limiter.take("198.51.100.1");
    await pipeline.producer.flush();
    const count = async () => {
      let n = 0;
      for await (const _ of kv.list({ prefix: rateLimitsPrefix() })) n++;
      return n;
    };
    assert.equal(await count(), 1);
    clock.advance(60_000);
    await limiter.cleanup(kv);
    assert.equal(await count(), 1);
    clock.advance(60_000);
    await limiter.cleanup(kv);
    assert.equal(await count(), 0);
    // After a stop of ten minutes, the epochs it left behind go at once.
    limiter.take("198.51.100.2");
    await pipeline.producer.flush();
    assert.equal(await count(), 1);
    clock.advance(10 * 60_000);
    await limiter.cleanup(kv);
    assert.equal(await count(), 0);
  });
});

Deno.test("the limiter wakes its watchers only when counts come to wait where none did, and a sync after the epoch leaves nothing counted", async () => {
  await withLimiterKv({}, async ({ kv, clock, limiter, pipeline }) => {
    let woken = 0;
    limiter.watch(() => woken++);
    limiter.take("198.51.100.1");
    limiter.take("198.51.100.1");
    assert.equal(woken, 1);
    limiter.take("198.51.100.2");
    assert.equal(woken, 1, "counts already waited");
    await pipeline.producer.flush();
    assert.equal(limiter.pending(), false);
    limiter.take("198.51.100.1");
    assert.equal(woken, 2, "counts wait again after the commit");
    await pipeline.producer.flush();
    assert.ok(limiter.countedSize > 0);
    clock.advance(120_000);
    await limiter.sync(kv);
    assert.equal(limiter.countedSize, 0, "nothing left for a sync to read");
  });
});

Deno.test("counts handed back by a failed commit wake the watchers again", () => {
  const counters = new SharedCounters();
  let woken = 0;
  counters.watch(() => woken++);
  counters.count("198.51.100.1", 5, Date.now());
  assert.equal(woken, 1);
  const op = { sum: () => op } as unknown as Deno.AtomicOperation;
  const told = counters.ride(op, 10);
  assert.equal(counters.pending(), false);
  told(false);
  assert.equal(counters.pending(), true);
  assert.equal(woken, 2);
});

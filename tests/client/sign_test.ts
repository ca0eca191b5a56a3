/**
 * The client library's signatures: equal to the server's own, verified by
 * the consumer when a server logger sends through the app, resent unchanged
 * by retries (so that the service drops a second copy as `replayed`), and
 * signed again once too old.
 */
import assert from "node:assert/strict";
import { sign as serverSign } from "../../auth/signature.ts";
import {
  createLogger,
  type Entry,
  sign,
  signedParams,
  signEntry,
} from "../../client/mod.ts";
import {
  assertCounts,
  assertStoredOnce,
  type Harness,
  signEntry as serverSignEntry,
  withHarness,
} from "../_helpers/harness.ts";
import { queued, refused, until } from "../_helpers/client_fakes.ts";
import { fakeLogger } from "../_helpers/client_logger.ts";
import { wallClock } from "../_helpers/client_server.ts";

const SECRET = "s3cr3t-0123456789abcdef0123456789abcdef";

Deno.test("sign() gives the server's signature: uppercase hex HMAC-SHA256", async () => {
  for (
    const text of [
      "",
      "p1{}1767225600000",
      'p1{"level":"info","projectId":"p1","data":{"title":"Café ☕ 日本"}}1767225600000',
      "x".repeat(5000),
    ]
  ) {
    const signature = await sign(SECRET, text);
    assert.match(signature, /^[0-9A-F]{64}$/);
    assert.equal(signature, serverSign(SECRET, text));
  }
});

Deno.test("signEntry() signs projectId + the five members in order + the timestamp", async (t) => {
  const entries: Record<string, Entry> = {
    "every member": {
      appid: "com.example.app",
      data: { title: "Payment failed", orderId: 1234, note: "ünïcödé" },
      context: { environment: "production" },
      device: { host: "api-1" },
      projectId: "p1",
      level: "error",
    },
    "no device, no context": {
      level: "info",
      projectId: "p1",
      data: { title: "Hi" },
    },
    "a device string": {
      level: "warning",
      projectId: "p1",
      device: "api-1",
      data: { title: "Slow" },
    },
  };
  for (const [name, entry] of Object.entries(entries)) {
    await t.step(name, async () => {
      const headers = await signEntry(SECRET, entry, 1767225600000.7);
      const expected = serverSignEntry(
        SECRET,
        entry as unknown as Record<string, unknown>,
        1767225600000,
      );
      assert.deepEqual(headers, expected);
      assert.ok(
        signedParams(entry).startsWith(
          `{"level":"${entry.level}","projectId":"p1"`,
        ),
      );
      assert.ok(!signedParams(entry).includes("appid"));
    });
  }
});

/** A `fetch` that hands requests to the harness's app, from one address. */
function appFetch(h: Harness): typeof fetch {
  return ((input: string | URL | Request, init?: RequestInit) =>
    Promise.resolve(
      h.app.request(String(input), init, {
        remoteAddr: { transport: "tcp", hostname: "203.0.113.9", port: 4000 },
      }),
    )) as typeof fetch;
}

Deno.test("a server logger's entries are stored with auth signature", async () => {
  await withHarness(async (h) => {
    const project = await h.project([]);
    const logger = createLogger({
      endpoint: "http://logs.test/api/v1/logs",
      projectId: project.id,
      secret: project.secret,
      context: { service: "billing" },
      device: { host: "api-1" },
      fetch: appFetch(h),
    });
    logger.error("Payment failed", "Card declined", { orderId: 1234 });
    assert.equal(await logger.close(5000), true);
    const stored = await assertStoredOnce(h, project.id, "signature");
    assert.deepEqual(stored.data, {
      title: "Payment failed",
      message: "Card declined",
      orderId: 1234,
    });
    assert.deepEqual(stored.context, { service: "billing" });
  }, { clock: wallClock });
});

Deno.test("data changed after logging changes neither what is sent nor what is signed", async () => {
  await withHarness(async (h) => {
    const project = await h.project(["com.example.app"]);
    const logger = createLogger({
      endpoint: "http://logs.test/api/v1/logs",
      projectId: project.id,
      secret: project.secret,
      // An app id too: the body has one more member than the signed text.
      appid: "com.example.app.unknown",
      fetch: appFetch(h),
    });
    const data = { title: "Order", items: 1 };
    logger.info("Order", undefined, data);
    data.items = 2;
    assert.equal(await logger.close(5000), true);
    const stored = await assertStoredOnce(h, project.id, "signature");
    assert.equal(stored.data.items, 1);
    assert.equal(stored.appid, "com.example.app.unknown");
  }, { clock: wallClock });
});

Deno.test("a retry after a lost answer cannot store a signed entry twice", async () => {
  await withHarness(async (h) => {
    const project = await h.project([]);
    const forward = appFetch(h);
    let calls = 0;
    const logger = createLogger({
      endpoint: "http://logs.test/api/v1/logs",
      projectId: project.id,
      secret: project.secret,
      // The first request reaches the service, but its answer is lost.
      fetch: async (input, init) => {
        const res = await forward(input, init);
        if (calls++ > 0) return res;
        await res.body?.cancel();
        throw new TypeError("connection reset");
      },
      retryBaseMs: 1,
    });
    logger.critical("Disk full");
    assert.equal(await logger.close(5000), true);
    assert.equal(calls, 2);
    assert.equal(logger.stats().retried, 1);
    await h.process();
    assert.equal((await h.logs(project.id)).length, 1);
    await assertCounts(h, project.id, 1, { replayed: 1 });
  }, { clock: wallClock });
});

Deno.test("a retried signed entry is resent unchanged, and signed again past 4 minutes", async () => {
  const { time, net, logger } = fakeLogger(
    { secret: SECRET },
    (_, i) =>
      i === 0
        ? refused(503, "unavailable", { "Retry-After": "1" })
        : i === 1
        ? refused(429, "rate_limited", { "Retry-After": "300" })
        : queued(),
  );
  // Signing runs outside the fake clock: wait for each request in turn.
  const start = time.now();
  logger.info("x");
  await time.advance(0);
  await until(() => net.calls.length === 1);
  await time.advance(1000);
  await until(() => net.calls.length === 2);
  await time.advance(300_000);
  await until(() => net.calls.length === 3);
  await time.advance(100_000);
  const [first, second, third] = net.calls;
  assert.equal(net.calls.length, 3);
  assert.equal(first!.headers.get("content-type"), "application/json");
  assert.equal(first!.headers.get("timestamp"), String(start));
  assert.equal(second!.at, start + 1000);
  assert.equal(third!.at, start + 301_000);
  assert.equal(
    second!.headers.get("signature"),
    first!.headers.get("signature"),
  );
  assert.equal(
    second!.headers.get("timestamp"),
    first!.headers.get("timestamp"),
  );
  const fresh = third!.headers.get("timestamp")!;
  assert.equal(Number(fresh), third!.at);
  assert.equal(
    third!.headers.get("signature"),
    serverSign(SECRET, `p1${third!.body}${fresh}`),
  );
});

Deno.test("two equal entries in one millisecond get distinct timestamps and signatures", async () => {
  const { time, net, logger } = fakeLogger({ secret: SECRET });
  for (let i = 0; i < 3; i++) logger.error("Same");
  await time.advance(0);
  await until(() => net.calls.length === 3);
  // Signing is asynchronous: the three requests may go out in any order.
  const stamps = net.calls.map((call) => Number(call.headers.get("timestamp")))
    .sort((a, b) => a - b);
  assert.deepEqual(stamps, [time.now(), time.now() + 1, time.now() + 2]);
  const signatures = new Set(
    net.calls.map((call) => call.headers.get("signature")),
  );
  assert.equal(signatures.size, 3);
  for (const call of net.calls) {
    assert.equal(
      call.headers.get("signature"),
      serverSign(SECRET, `p1${call.body}${call.headers.get("timestamp")}`),
    );
  }
});

/**
 * The client library's delivery, on a fake `fetch` and a fake clock: the
 * entries it builds, the bounded queue, pacing, `flush()` and `close()`.
 * (Retries: tests/client/retry_test.ts.)
 */
import assert from "node:assert/strict";
import { queued, refused } from "../_helpers/client_fakes.ts";
import { ENDPOINT, fakeLogger as setup } from "../_helpers/client_logger.ts";

Deno.test("entries are sent as the service expects them, one request each", async () => {
  const { time, net, logger } = setup({
    context: { environment: "test" },
    device: { type: "server", host: "api-1" },
    appid: "com.example.app",
  });
  logger.info("Started", "All good", { version: "1.2" });
  logger.warning("Slow");
  logger.error("Failed", new TypeError("x is undefined"), { orderId: 7 });
  logger.critical("Down");
  logger.log("audit", { title: "Login", userId: "u1" });
  await time.advance(0);
  assert.equal(net.calls.length, 5);
  const first = net.calls[0]!;
  assert.equal(first.url, ENDPOINT);
  assert.equal(first.headers.get("content-type"), "application/json");
  assert.equal(first.headers.get("signature"), null);
  assert.equal(
    first.body,
    '{"level":"info","projectId":"p1","device":{"type":"server","host":"api-1"},' +
      '"context":{"environment":"test"},' +
      '"data":{"title":"Started","message":"All good","version":"1.2"},' +
      '"appid":"com.example.app"}',
  );
  const bodies = net.calls.map((call) => JSON.parse(call.body));
  assert.deepEqual(bodies.map((b) => b.level), [
    "info",
    "warning",
    "error",
    "critical",
    "audit",
  ]);
  assert.deepEqual(bodies[1].data, { title: "Slow" });
  assert.equal(bodies[2].data.message, "x is undefined");
  assert.match(bodies[2].data.stack, /TypeError: x is undefined/);
  assert.equal(bodies[2].data.orderId, 7);
  assert.deepEqual(bodies[4].data, { title: "Login", userId: "u1" });
  assert.equal(logger.stats().sent, 5);
});

Deno.test("an entry that cannot be serialized goes to onError and is not sent", async () => {
  const { time, net, errors, logger } = setup();
  const data: Record<string, unknown> = { title: "Loop" };
  data.self = data;
  logger.log("info", data);
  await time.advance(0);
  assert.equal(net.calls.length, 0);
  assert.equal(errors.length, 1);
  assert.equal(errors[0]!.code, "invalid_entry");
  assert.match(errors[0]!.message, /^Cannot serialize the entry: /);
});

Deno.test("the queue holds 1000 entries by default; past that the oldest is dropped and counted", async () => {
  const { time, net, logger } = setup({}, () => "hold");
  for (let i = 0; i < 1100; i++) logger.info(`e${i}`);
  await time.advance(0);
  // Four requests in flight (the default concurrency), 1000 waiting.
  assert.deepEqual(logger.stats(), {
    queued: 1000,
    inFlight: 4,
    sent: 0,
    retried: 0,
    dropped: 96,
    failed: 0,
    beaconed: 0,
  });
  const closed = logger.close(0);
  await time.advance(0);
  assert.equal(await closed, false);
  assert.equal(logger.stats().dropped, 1096);
  net.release();
  await time.advance(0);
});

Deno.test("a full queue drops its oldest entry, not the newest", async () => {
  const { time, net, logger, titles } = setup(
    { maxQueue: 3, concurrency: 1 },
    (_, i) => i === 0 ? "hold" : queued(),
  );
  for (const title of ["a", "b", "c", "d", "e"]) logger.info(title);
  await time.advance(0);
  // "a" is in flight; "b" was the oldest of the four waiting for three places.
  assert.equal(logger.stats().queued, 3);
  assert.equal(logger.stats().dropped, 1);
  net.release();
  await time.advance(0);
  assert.deepEqual(titles(), ["a", "c", "d", "e"]);
});

Deno.test("pacing: 45 at once (50 less a reserve of 5), then one every 50 ms (20/s)", async () => {
  const { time, logger, times } = setup();
  for (let i = 0; i < 100; i++) logger.info(`e${i}`);
  await time.advance(0);
  assert.equal(times().length, 45);
  assert.ok(times().every((t) => t === 0));
  await time.advance(1000);
  assert.equal(times().length, 65);
  await time.advance(1750);
  assert.equal(times().length, 100);
  assert.deepEqual(
    times().slice(45),
    Array.from({ length: 55 }, (_, i) => (i + 1) * 50),
  );
  assert.equal(logger.stats().sent, 100);
});

Deno.test("pacing is configurable, and an idle sender refills its burst", async () => {
  const { time, logger, times } = setup({ rate: 5, burst: 10 });
  for (let i = 0; i < 12; i++) logger.info(`e${i}`);
  await time.advance(1000);
  assert.deepEqual(times(), [0, 0, 0, 0, 0, 0, 0, 0, 0, 200, 400, 600]);
  await time.advance(10_000);
  for (let i = 0; i < 10; i++) logger.info(`again${i}`);
  await time.advance(0);
  assert.deepEqual(times().slice(12), Array(9).fill(11_000));
});

Deno.test("flush() resolves once everything queued was answered", async () => {
  const { time, net, logger } = setup({}, () => "hold");
  assert.equal(await logger.flush(), true, "nothing queued: at once");
  logger.info("a");
  logger.info("b");
  let flushed: boolean | undefined;
  logger.flush().then((idle) => flushed = idle);
  await time.advance(1000);
  assert.equal(flushed, undefined);
  net.release();
  await time.advance(0);
  assert.equal(flushed, true);
  assert.equal(logger.stats().sent, 2);
});

Deno.test("flush(timeoutMs) resolves false when entries are still out", async () => {
  const { time, net, logger } = setup({}, () => "hold");
  logger.info("a");
  let flushed: boolean | undefined;
  logger.flush(2000).then((idle) => flushed = idle);
  await time.advance(1999);
  assert.equal(flushed, undefined);
  await time.advance(1);
  assert.equal(flushed, false);
  net.release();
  await time.advance(0);
});

Deno.test("flush() waits for retries too", async () => {
  const { time, logger } = setup(
    {},
    (_, i) =>
      i === 0 ? refused(429, "rate_limited", { "Retry-After": "1" }) : queued(),
  );
  logger.info("a");
  let flushed: boolean | undefined;
  logger.flush().then((idle) => flushed = idle);
  await time.advance(999);
  assert.equal(flushed, undefined);
  await time.advance(1);
  assert.equal(flushed, true);
});

Deno.test("close() delivers what is queued, then takes no more entries", async () => {
  const { time, net, logger, titles } = setup({ rate: 1, burst: 1 });
  logger.info("a");
  logger.info("b");
  let closed: boolean | undefined;
  logger.close().then((idle) => closed = idle);
  logger.info("after close");
  await time.advance(999);
  assert.equal(closed, undefined);
  await time.advance(1);
  assert.equal(closed, true);
  assert.deepEqual(titles(), ["a", "b"]);
  logger.info("later");
  await time.advance(5000);
  assert.equal(net.calls.length, 2);
  assert.equal(logger.stats().dropped, 2);
  assert.equal(time.pending(), 0);
});

Deno.test("close(timeoutMs) drops what is still queued when time is up", async () => {
  const { time, net, logger } = setup({ concurrency: 1 }, () => "hold");
  for (let i = 0; i < 5; i++) logger.info(`e${i}`);
  let closed: boolean | undefined;
  logger.close(1000).then((idle) => closed = idle);
  await time.advance(1000);
  assert.equal(closed, false);
  assert.equal(logger.stats().queued, 0);
  assert.equal(logger.stats().dropped, 4);
  net.release();
  await time.advance(0);
  assert.equal(net.calls.length, 1);
  assert.equal(logger.stats().sent, 1);
  assert.equal(time.pending(), 0);
});

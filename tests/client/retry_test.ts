/**
 * The client library's retries, on a fake `fetch` and a fake clock: `429`,
 * `503` and network errors retried with backoff and jitter after
 * `Retry-After`, other `4xx` handed to `onError`, timeouts.
 */
import assert from "node:assert/strict";
import { queued, refused } from "../_helpers/client_fakes.ts";
import { fakeLogger as setup } from "../_helpers/client_logger.ts";

Deno.test("a 429 pauses every request for its Retry-After, then the entry is resent", async () => {
  const { time, net, logger, times, titles } = setup(
    {},
    (_, i) =>
      i === 0 ? refused(429, "rate_limited", { "Retry-After": "3" }) : queued(),
  );
  logger.info("first");
  await time.advance(0);
  logger.info("second");
  await time.advance(2999);
  assert.deepEqual(titles(), ["first"]);
  await time.advance(1);
  assert.deepEqual(titles(), ["first", "first"]);
  await time.advance(50);
  assert.deepEqual(titles(), ["first", "first", "second"]);
  assert.deepEqual(times(), [0, 3000, 3050]);
  assert.equal(net.calls[1]!.body, net.calls[0]!.body);
  const stats = logger.stats();
  assert.equal(stats.sent, 2);
  assert.equal(stats.retried, 1);
  assert.equal(stats.failed, 0);
});

Deno.test("after a 429 the sender resumes at its steady rate, without a burst", async () => {
  const { time, logger, times } = setup(
    {},
    (_, i) =>
      i === 0 ? refused(429, "rate_limited", { "Retry-After": "1" }) : queued(),
  );
  logger.info("refused");
  await time.advance(0);
  for (let i = 0; i < 4; i++) logger.info(`e${i}`);
  await time.advance(10_000);
  // The retry at the end of the pause, then one every 50 ms: no burst of 50.
  assert.deepEqual(times(), [0, 1000, 1050, 1100, 1150, 1200]);
});

Deno.test("a 429 naming a smaller burst (RateLimit-Limit) shrinks the bucket to fit", async () => {
  const { time, logger, times } = setup(
    {},
    (_, i) =>
      i === 0
        ? refused(429, "rate_limited", {
          "Retry-After": "1",
          "RateLimit-Limit": "10",
        })
        : queued(),
  );
  logger.info("refused");
  // Retried after a second, then idle long enough to refill any bucket.
  await time.advance(10_000);
  for (let i = 0; i < 12; i++) logger.info(`e${i}`);
  await time.advance(0);
  // 10 less a reserve of 1 at once, instead of 45.
  assert.deepEqual(times().slice(2), Array(9).fill(10_000));
  await time.advance(150);
  assert.deepEqual(times().slice(11), [10_050, 10_100, 10_150]);
});

Deno.test("Retry-After as an HTTP date is honoured too", async () => {
  const { time, logger, times } = setup(
    {},
    (call, i) =>
      i === 0
        ? refused(503, "unavailable", {
          "Retry-After": new Date(call.at + 7000).toUTCString(),
        })
        : queued(),
  );
  logger.info("x");
  await time.advance(10_000);
  assert.deepEqual(times(), [0, 7000]);
});

Deno.test("503s and network errors back off exponentially, with jitter, capped", async (t) => {
  await t.step("jitter at its lowest: half the doubled pause", async () => {
    const { time, logger, times } = setup(
      { retryBaseMs: 1000, retryMaxMs: 4000, random: () => 0 },
      (_, i) =>
        i < 5
          ? (i % 2 ? new TypeError("connection refused") : refused(
            503,
            "unavailable",
          ))
          : queued(),
    );
    logger.info("x");
    await time.advance(60_000);
    // Pauses of 500, 1000, 2000, 2000 (cap 4000 / 2), 2000.
    assert.deepEqual(times(), [0, 500, 1500, 3500, 5500, 7500]);
    assert.equal(logger.stats().retried, 5);
    assert.equal(logger.stats().sent, 1);
  });
  await t.step("jitter in the middle: three quarters of it", async () => {
    const { time, logger, times } = setup(
      { retryBaseMs: 1000, random: () => 0.5 },
      (_, i) => i < 3 ? refused(503, "unavailable") : queued(),
    );
    logger.info("x");
    await time.advance(60_000);
    assert.deepEqual(times(), [0, 750, 2250, 5250]);
  });
  await t.step("requests that fail together count as one failure", async () => {
    const { time, logger, times } = setup(
      { retryBaseMs: 1000 },
      (_, i) => i < 4 ? refused(503, "unavailable") : queued(),
    );
    for (let i = 0; i < 4; i++) logger.info(`e${i}`);
    await time.advance(60_000);
    // One pause of 500 ms, then the steady 20/s.
    assert.deepEqual(times(), [0, 0, 0, 0, 500, 550, 600, 650]);
    assert.equal(logger.stats().sent, 4);
  });
  await t.step("a Retry-After longer than the backoff wins", async () => {
    const { time, logger, times } = setup(
      { retryBaseMs: 100 },
      (_, i) =>
        i === 0
          ? refused(503, "unavailable", { "Retry-After": "2" })
          : queued(),
    );
    logger.info("x");
    await time.advance(5000);
    assert.deepEqual(times(), [0, 2000]);
  });
});

Deno.test("after maxRetries the entry is given up and goes to onError", async () => {
  const { time, errors, logger, times } = setup(
    { maxRetries: 2, retryBaseMs: 100 },
    () => new TypeError("connection refused"),
  );
  logger.info("x");
  await time.advance(60_000);
  assert.deepEqual(times(), [0, 50, 150]);
  assert.equal(errors.length, 1);
  assert.equal(errors[0]!.status, 0);
  assert.equal(errors[0]!.code, "network_error");
  assert.equal(
    errors[0]!.message,
    "Cannot send the entry: connection refused",
  );
  assert.equal(errors[0]!.entry?.data.title, "x");
  assert.deepEqual(
    { ...logger.stats() },
    {
      queued: 0,
      inFlight: 0,
      sent: 0,
      retried: 2,
      dropped: 0,
      failed: 1,
      beaconed: 0,
    },
  );
});

Deno.test("a 400 is not retried: onError gets the JSON error with its issues", async () => {
  const issues = [{ path: "data", message: '"data" must be an object' }];
  const { time, errors, logger, times } = setup(
    {},
    () => refused(400, "invalid_body", {}, issues),
  );
  logger.info("x");
  await time.advance(60_000);
  assert.deepEqual(times(), [0]);
  assert.equal(errors.length, 1);
  const error = errors[0]!;
  assert.equal(error.status, 400);
  assert.equal(error.code, "invalid_body");
  assert.equal(error.message, "Refused: invalid_body");
  assert.deepEqual(error.issues, issues);
  assert.equal(error.entry?.level, "info");
  assert.equal(logger.stats().failed, 1);
  assert.equal(logger.stats().retried, 0);
});

Deno.test("other 4xx answers are not retried either, JSON or not", async () => {
  const { time, errors, logger, times } = setup(
    {},
    (_, i) =>
      i === 0
        ? refused(413, "payload_too_large")
        : new Response("<html>Forbidden</html>", { status: 403 }),
  );
  logger.info("big");
  logger.info("blocked");
  await time.advance(60_000);
  assert.deepEqual(times(), [0, 0]);
  assert.deepEqual(errors.map((e) => [e.status, e.code, e.message]), [
    [413, "payload_too_large", "Refused: payload_too_large"],
    [403, "http_error", "Cannot send the entry: answered 403"],
  ]);
});

Deno.test("a body the service did not receive whole (408, 400 incomplete_body) is sent again", async () => {
  const { time, errors, logger, titles } = setup(
    { random: () => 0 },
    (_, i) =>
      i === 0
        ? refused(408, "request_timeout")
        : i === 1
        ? refused(400, "incomplete_body")
        : queued(),
  );
  logger.info("slow link");
  await time.advance(60_000);
  assert.deepEqual(titles(), ["slow link", "slow link", "slow link"]);
  assert.deepEqual(errors, []);
  assert.equal(logger.stats().sent, 1);
});

Deno.test("a request not answered within timeoutMs is aborted and retried", async () => {
  const { time, logger, times } = setup(
    { timeoutMs: 5000, retryBaseMs: 1000 },
    (_, i) => i === 0 ? "hold" : queued(),
  );
  logger.info("x");
  await time.advance(5000);
  assert.deepEqual(times(), [0]);
  await time.advance(500);
  assert.deepEqual(times(), [0, 5500]);
  assert.equal(logger.stats().sent, 1);
  assert.equal(time.pending(), 0);
});

/**
 * Beacons keep to the pace: a beacon's answer is never read, so one over the
 * service's rate limit (a bucket of 50, then 20/s) is refused and lost. A
 * browser logger on a stand-in page (`document` and `navigator.sendBeacon`
 * on the global scope, `visibilitychange` and `pagehide` dispatched on it)
 * and a fake clock: while the sender is paused after a `429` with
 * `Retry-After`, hiding the page sends nothing and the entries stay queued
 * for normal delivery; leaving it beacons at most the service's burst less
 * what the pace spent; with room in the bucket, hiding beacons what is
 * queued as before.
 *
 * @module
 */
import assert from "node:assert/strict";
import { type Answer, refused } from "../_helpers/client_fakes.ts";
import { fakeLogger } from "../_helpers/client_logger.ts";
import type { Logger } from "../../client/mod.ts";

/** The service's burst, as the fake answers name it (`RateLimit-Limit`). */
const BURST = 50;

/** A stand-in page on the global scope, and the beacons it was given. */
function fakePage() {
  const scope = globalThis as unknown as Record<string, unknown>;
  const nav = navigator as unknown as Record<string, unknown>;
  const document = { visibilityState: "visible" };
  const beacons: string[] = [];
  scope.document = document;
  nav.sendBeacon = (_url: string, body: string) => {
    beacons.push(body);
    return true;
  };
  const visibility = (state: string) => {
    document.visibilityState = state;
    globalThis.dispatchEvent(new Event("visibilitychange"));
  };
  return {
    beacons,
    hide: () => visibility("hidden"),
    show: () => visibility("visible"),
    leave: () => globalThis.dispatchEvent(new Event("pagehide")),
    remove() {
      delete scope.document;
      delete nav.sendBeacon;
    },
  };
}

/**
 * A browser logger on a stand-in page, answering with `answer`; `fn` runs
 * with them, then the logger is closed and the page taken away.
 */
async function onPage(
  answer: () => Answer,
  fn: (
    page: ReturnType<typeof fakePage>,
    t: ReturnType<typeof fakeLogger>,
  ) => Promise<void>,
): Promise<void> {
  const page = fakePage();
  const t = fakeLogger({}, answer);
  try {
    await fn(page, t);
  } finally {
    const closed = t.logger.close(0);
    await t.time.advance(0);
    await closed;
    page.remove();
  }
}

/** Logs `count` entries of about 300 bytes, titled `e0`, `e1`... */
function logMany(logger: Logger, count: number): void {
  for (let i = 0; i < count; i++) {
    logger.info(`e${i}`, undefined, { pad: "x".repeat(250) });
  }
}

/** `429 rate_limited` with `Retry-After: 30`, as the service over its limit. */
function limited(): Response {
  return refused(429, "rate_limited", {
    "Retry-After": "30",
    "RateLimit-Limit": String(BURST),
  });
}

Deno.test("while paused after a 429, hiding the page sends no beacon; the entries stay queued and go once the pause ends", async () => {
  let answer: () => Answer = limited;
  await onPage(() => answer(), async (page, { time, net, logger }) => {
    logMany(logger, 300);
    await time.advance(0);
    assert.equal(net.calls.length, 4, "four requests, each answered 429");
    assert.equal(logger.stats().queued, 300);
    // Before, 207 beacons went now, during the pause, all refused.
    page.hide();
    assert.equal(page.beacons.length, 0);
    page.leave();
    assert.equal(page.beacons.length, 0, "nor when leaving during the pause");
    assert.equal(logger.stats().queued, 300);
    assert.equal(logger.stats().beaconed, 0);
    // The page comes back: the entries are delivered normally, at the pace.
    page.show();
    answer = () => new Response('{"status":"queued"}');
    await time.advance(60_000);
    assert.equal(logger.stats().sent, 300);
    assert.equal(logger.stats().queued, 0);
  });
});

Deno.test("leaving the page beacons at most the service's burst less what the pace spent", async () => {
  await onPage(() => "hold", async (page, { time, net, logger }) => {
    logMany(logger, 300);
    await time.advance(0);
    assert.equal(net.calls.length, 4, "four requests in flight, unanswered");
    page.leave();
    // 4 requests and 46 beacons: the service's bucket of 50, and no more,
    // where 64 KiB alone let 203 beacons go.
    assert.equal(page.beacons.length, BURST - 4);
    assert.deepEqual(
      page.beacons.map((b) => JSON.parse(b).data.title),
      Array.from({ length: BURST - 4 }, (_, i) => `e${i + 4}`),
      "oldest first",
    );
    assert.equal(logger.stats().beaconed, BURST - 4);
    assert.equal(logger.stats().queued, 300 - BURST);
    page.leave();
    assert.equal(page.beacons.length, BURST - 4, "nothing more at once");
    net.release();
  });
});

Deno.test("hiding the page beacons what the pace allows now, no more; leaving then adds the bucket's reserve", async () => {
  await onPage(() => "hold", async (page, { time, logger }) => {
    logMany(logger, 300);
    await time.advance(0);
    page.hide();
    // The logger's bucket holds 45 (a tenth of 50 in reserve); 4 went.
    assert.equal(page.beacons.length, 41);
    assert.equal(logger.stats().queued, 300 - 4 - 41);
    page.leave();
    assert.equal(page.beacons.length, BURST - 4);
    assert.equal(logger.stats().beaconed, BURST - 4);
  });
});

Deno.test("with room in the bucket, the few entries queued when the page is hidden go by beacon, as before", async () => {
  await onPage(() => "hold", async (page, { time, net, logger }) => {
    logMany(logger, 7);
    await time.advance(0);
    assert.equal(net.calls.length, 4);
    assert.equal(logger.stats().queued, 3);
    page.show();
    assert.equal(page.beacons.length, 0, "not while visible");
    page.hide();
    assert.deepEqual(
      page.beacons.map((b) => JSON.parse(b).data.title),
      ["e4", "e5", "e6"],
    );
    assert.equal(logger.stats().beaconed, 3);
    assert.equal(logger.stats().queued, 0);
    net.release();
  });
});

/**
 * Leaving a page, without a browser: `watchPage` on a stand-in window sends
 * what is queued by beacon, oldest first, within the 64 KiB keepalive budget;
 * and requests in flight use `keepalive` while they fit that budget. (The
 * same in headless Chromium: tests/client/browser_test.ts.)
 */
import assert from "node:assert/strict";
import {
  createSender,
  type Job,
  KEEPALIVE_BUDGET,
  type SenderOptions,
} from "../../client/delivery.ts";
import { watchPage } from "../../client/page.ts";
import { fakeFetch, fakeTime } from "../_helpers/client_fakes.ts";

/** A job whose body is `bytes` long. */
function job(title: string, bytes = 1000): Job {
  const head = JSON.stringify({
    level: "info",
    projectId: "p1",
    data: { title, pad: "" },
  });
  const body = head.replace(
    '"pad":""',
    `"pad":"${"x".repeat(bytes - head.length)}"`,
  );
  assert.equal(body.length, bytes);
  return {
    entry: JSON.parse(body),
    body,
    params: body,
    bytes,
    attempts: 0,
  };
}

/**
 * A browser-like sender that lets one request out and holds it, so the rest
 * stays queued; its bucket is large, so that only the bytes bound beacons.
 * (How beacons keep to the pace: tests/client/beacon_pace_test.ts.)
 */
function setup(options: Partial<SenderOptions> = {}) {
  const time = fakeTime();
  const net = fakeFetch(time.now, () => "hold");
  const sender = createSender({
    endpoint: "https://logs.example.com/api/v1/logs",
    headers: () => ({ "Content-Type": "text/plain;charset=UTF-8" }),
    keepalive: true,
    concurrency: 1,
    burst: 1000,
    fetch: net.fetch,
    now: time.now,
    setTimeout: time.setTimeout,
    clearTimeout: time.clearTimeout,
    ...options,
  });
  const target = new EventTarget();
  let hidden = false;
  const beacons: string[] = [];
  let accept = Infinity;
  const unwatch = watchPage(sender, {
    target,
    hidden: () => hidden,
    sendBeacon: (body) => {
      if (beacons.length >= accept) return false;
      beacons.push(body);
      return true;
    },
  });
  return {
    time,
    net,
    sender,
    target,
    beacons,
    unwatch,
    hide: (value: boolean) => hidden = value,
    refuseAfter: (n: number) => accept = n,
    titles: () => beacons.map((b) => JSON.parse(b).data.title),
  };
}

Deno.test("on pagehide, queued entries go by beacon, oldest first, within 64 KiB", async () => {
  const s = setup();
  s.sender.push(job("in flight", 2000));
  for (let i = 0; i < 100; i++) s.sender.push(job(`e${i}`));
  await s.time.advance(0);
  assert.equal(s.net.calls.length, 1);
  assert.equal(s.net.calls[0]!.keepalive, true);
  assert.equal(s.sender.stats().queued, 100);
  s.target.dispatchEvent(new Event("pagehide"));
  // 64 KiB less the 2,000 bytes in flight leaves room for 63 entries of 1000 bytes.
  assert.equal(Math.floor((KEEPALIVE_BUDGET - 2000) / 1000), 63);
  assert.deepEqual(s.titles(), Array.from({ length: 63 }, (_, i) => `e${i}`));
  assert.equal(s.sender.stats().beaconed, 63);
  assert.equal(s.sender.stats().queued, 37);
  s.net.release();
  s.sender.stop();
});

Deno.test("when the page becomes hidden, queued entries go by beacon; not while visible", () => {
  const s = setup();
  for (let i = 0; i < 3; i++) s.sender.push(job(`e${i}`));
  s.target.dispatchEvent(new Event("visibilitychange"));
  assert.deepEqual(s.titles(), []);
  s.hide(true);
  s.target.dispatchEvent(new Event("visibilitychange"));
  assert.deepEqual(s.titles(), ["e1", "e2"]);
  s.net.release();
  s.sender.stop();
});

Deno.test("a beacon the browser refuses stops the sending; the rest stays queued", () => {
  const s = setup();
  for (let i = 0; i < 6; i++) s.sender.push(job(`e${i}`));
  s.refuseAfter(2);
  s.target.dispatchEvent(new Event("pagehide"));
  assert.deepEqual(s.titles(), ["e1", "e2"]);
  assert.equal(s.sender.stats().queued, 3);
  s.net.release();
  s.sender.stop();
});

Deno.test("after unwatching, leaving the page sends nothing", () => {
  const s = setup();
  s.sender.push(job("e0"));
  s.sender.push(job("e1"));
  s.unwatch();
  s.target.dispatchEvent(new Event("pagehide"));
  assert.deepEqual(s.beacons, []);
  s.net.release();
  s.sender.stop();
});

Deno.test("requests use keepalive while the bytes in flight fit 64 KiB", async () => {
  const s = setup({ rate: 1000, concurrency: 4 });
  for (let i = 0; i < 4; i++) s.sender.push(job(`e${i}`, 30_000));
  await s.time.advance(0);
  assert.deepEqual(s.net.calls.map((c) => c.keepalive), [
    true,
    true,
    false,
    false,
  ]);
  s.net.release();
  await s.time.advance(0);
  s.sender.push(job("after", 30_000));
  await s.time.advance(0);
  assert.equal(s.net.calls[4]!.keepalive, true);
  s.net.release();
  s.sender.stop();
});

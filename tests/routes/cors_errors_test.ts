/**
 * The endpoint's answers found wanting from outside: credentialed CORS, the
 * 415 message, and unexpected errors in bulk, which must not flood the
 * operator's log.
 */
import assert from "node:assert/strict";
import { createApp } from "../../app.ts";
import { ErrorLog, FLUSH_MS } from "../../routes/error_log.ts";
import { manualTimers } from "../_helpers/timers.ts";
import {
  fakeClock,
  type Harness,
  harness,
  ORIGIN,
  postBody,
  preflight,
  randomEntry,
  withHarness,
} from "../_helpers/harness.ts";

// ---------------------------------------------------------------------------
// CORS and media types

Deno.test("answers and preflights allow credentials beside the echoed origin, never with *", async (t) => {
  await withHarness(async (h) => {
    await t.step("on a 200", async () => {
      const res = await h.post(randomEntry(), { Origin: ORIGIN });
      await res.body?.cancel();
      assert.equal(res.status, 200);
      assert.equal(res.headers.get("access-control-allow-origin"), ORIGIN);
      assert.equal(res.headers.get("access-control-allow-credentials"), "true");
    });
    await t.step("on an error", async () => {
      const res = await h.post("{", { Origin: ORIGIN });
      await res.body?.cancel();
      assert.equal(res.status, 400);
      assert.equal(res.headers.get("access-control-allow-credentials"), "true");
    });
    await t.step("on the preflight", async () => {
      const res = await preflight(h.app, ORIGIN, "content-type");
      assert.equal(res.status, 204);
      assert.equal(res.headers.get("access-control-allow-origin"), ORIGIN);
      assert.equal(res.headers.get("access-control-allow-credentials"), "true");
    });
    await t.step("not without an Origin", async () => {
      const res = await h.post(randomEntry());
      await res.body?.cancel();
      assert.equal(res.headers.get("access-control-allow-origin"), null);
      assert.equal(res.headers.get("access-control-allow-credentials"), null);
    });
  });
});

Deno.test("the 415 message names both accepted media types", async (t) => {
  await withHarness(async (h) => {
    for (const type of ["text/html", null]) {
      await t.step(`Content-Type ${type}`, async () => {
        const res = await h.app.request("/api/v1/logs", {
          method: "POST",
          headers: type ? { "Content-Type": type } : {},
          body: type ? "{}" : null,
        });
        assert.equal(res.status, 415);
        const { error } = await res.json();
        assert.match(error.message, /"application\/json"/);
        assert.match(error.message, /"text\/plain"/);
      });
    }
  });
});

// ---------------------------------------------------------------------------
// Unexpected errors

Deno.test("a started error log flushes every second while an interval is open, and arms nothing at rest", () => {
  const clock = fakeClock();
  const lines: string[] = [];
  const timers = manualTimers();
  const log = new ErrorLog({
    intervalMs: 2_000,
    now: clock.now,
    write: (l) => lines.push(l),
    after: timers.after,
  });
  log.start();
  assert.deepEqual(timers.armed, [], "at rest nothing is armed");
  log.report(new Error("one"));
  log.report(new Error("two"));
  assert.deepEqual(timers.armed, [FLUSH_MS]);
  clock.advance(1_000);
  timers.fire();
  assert.deepEqual(timers.armed, [FLUSH_MS], "the interval is open: again");
  clock.advance(1_000);
  timers.fire();
  assert.equal(lines.length, 2, "the count written once the interval is over");
  assert.deepEqual(timers.armed, [], "no interval open: it rests");
  log.stop();
});

Deno.test("unexpected errors are logged one line per interval, with a count, never a stack", async () => {
  const clock = fakeClock();
  const lines: string[] = [];
  const log = new ErrorLog({
    intervalMs: 10_000,
    now: clock.now,
    write: (l) => lines.push(l),
  });
  for (let i = 0; i < 500; i++) log.report(new Error(`boom ${i}\u001b[2J`));
  assert.equal(lines.length, 1);
  assert.match(lines[0]!, /^Unexpected error: Error: boom 0\\u001b\[2J \(at /);
  assert.ok(!lines[0]!.includes("\n"), "one line");
  clock.advance(9_999);
  log.flush();
  assert.equal(lines.length, 1);
  clock.advance(1);
  log.flush();
  assert.equal(lines.length, 2);
  assert.match(
    lines[1]!,
    /^Unexpected error: 499 more in the last 10 s, the last: Error: boom 499/,
  );
  log.report(new Error("again"));
  assert.equal(lines.length, 3);
  assert.match(lines[2]!, /^Unexpected error: Error: again/);

  // Through the app: a hundred failing requests, one line.
  const h = await harness({ clock });
  const appLines: string[] = [];
  const app = createApp({
    producer: {
      submit: () => Promise.reject(new TypeError("broken")),
    } as unknown as Harness["pipeline"]["producer"],
    maxBodyBytes: 65536,
    errorLog: new ErrorLog({ now: clock.now, write: (l) => appLines.push(l) }),
  });
  try {
    for (let i = 0; i < 100; i++) {
      const res = await postBody(app, JSON.stringify(randomEntry()));
      assert.equal(res.status, 503);
      await res.body?.cancel();
    }
    assert.equal(appLines.length, 1);
    assert.match(appLines[0]!, /^Unexpected error: TypeError: broken/);
  } finally {
    await h.close();
  }
});

/**
 * Request bodies under faults found from outside: bodies cut short by the
 * client, bodies that stall, and a flood of stalled bodies against the byte
 * budget. In-process with a fake clock where the app decides; over real
 * sockets where only the runtime shows the behaviour.
 */
import assert from "node:assert/strict";
import { createApp } from "../../app.ts";
import { READ_COST } from "../../routes/body.ts";
import { BodyGuard } from "../../routes/body_guard.ts";
import { ErrorLog } from "../../routes/error_log.ts";
import {
  fakeClock,
  type Harness,
  harness,
  ORIGIN,
  postBody,
  randomEntry,
  withHarness,
  withServed,
} from "../_helpers/harness.ts";
import { readAnswer } from "../_helpers/raw_http.ts";
import { until } from "../_helpers/client_fakes.ts";
import { within } from "../_helpers/timeout.ts";
import { manualTimers } from "../_helpers/timers.ts";

const encoder = new TextEncoder();

/** An app on the harness's producer with a body guard and a captured log. */
function guardedApp(
  h: Harness,
  guard: BodyGuard,
  lines: string[] = [],
): ReturnType<typeof createApp> {
  return createApp({
    producer: h.pipeline.producer,
    maxBodyBytes: h.config.maxBodyBytes,
    now: h.clock.now,
    bodies: guard,
    errorLog: new ErrorLog({ now: h.clock.now, write: (l) => lines.push(l) }),
  });
}

/** A body that sends `first` and then neither ends nor fails until told. */
function stalledBody(first: Uint8Array) {
  let pulls = 0;
  let controller!: ReadableStreamDefaultController<Uint8Array>;
  const stream = new ReadableStream<Uint8Array>({
    start(c) {
      controller = c;
    },
    pull(c) {
      if (pulls++ === 0) c.enqueue(first);
    },
  });
  return {
    stream,
    pulls: () => pulls,
    /** The client goes away: the runtime fails the read. */
    fail: () => controller.error(new Deno.errors.BadResource("gone")),
  };
}

// ---------------------------------------------------------------------------
// Bodies cut short

Deno.test("a body cut short by the client answers 400 incomplete_body and logs nothing", async (t) => {
  await withHarness(async (h) => {
    const lines: string[] = [];
    const guard = new BodyGuard({
      budgetBytes: 1 << 20,
      timeoutMs: 10_000,
      now: h.clock.now,
    });
    const app = guardedApp(h, guard, lines);
    for (const length of ["100", null]) {
      await t.step(`Content-Length ${length}`, async () => {
        const body = stalledBody(encoder.encode('{"level":"info"'));
        const answer = postBody(
          app,
          body.stream,
          length ? { "Content-Length": length } : {},
        );
        await Promise.resolve();
        body.fail();
        const res = await answer;
        assert.equal(res.status, 400);
        assert.equal((await res.json()).error.code, "incomplete_body");
        assert.equal(guard.reservedBytes, 0);
      });
    }
    assert.deepEqual(lines, []);
  });
});

/** Sends `text` on a raw TCP connection and reads its answer. */
async function rawExchange(
  port: number,
  text: string,
  options: { halfClose?: boolean } = {},
): Promise<{ head: string; body: string; ms: number }> {
  const conn = await Deno.connect({ hostname: "127.0.0.1", port });
  try {
    const start = performance.now();
    await conn.write(encoder.encode(text));
    if (options.halfClose) await conn.closeWrite();
    const { head, body } = await readAnswer(conn);
    return {
      head,
      body,
      ms: performance.now() - start,
    };
  } finally {
    conn.close();
  }
}

/** Serves `app` on a loopback port for the length of `fn`. */
async function serving(
  app: ReturnType<typeof createApp>,
  fn: (port: number) => Promise<void>,
): Promise<void> {
  await withServed(
    (req, info) => app.fetch(req, { remoteAddr: info.remoteAddr }),
    fn,
  );
}

const REQUEST_HEAD = "POST /api/v1/logs HTTP/1.1\r\nHost: localhost\r\n" +
  "Content-Type: application/json\r\nOrigin: " + ORIGIN + "\r\n";

Deno.test("over a real socket, a half-closed short body answers 400 incomplete_body, never 503", async (t) => {
  await withHarness(async (h) => {
    const lines: string[] = [];
    const guard = new BodyGuard({ budgetBytes: 1 << 20, timeoutMs: 10_000 });
    const app = guardedApp(h, guard, lines);
    await serving(app, async (port) => {
      const cases = {
        "Content-Length larger than what arrives": REQUEST_HEAD +
          "Content-Length: 100\r\n\r\n" + '{"level":"info"',
        "chunked body without its last chunk": REQUEST_HEAD +
          "Transfer-Encoding: chunked\r\n\r\n" + 'f\r\n{"level":"info"\r\n',
      };
      for (const [name, text] of Object.entries(cases)) {
        await t.step(name, async () => {
          const answer = await within(
            5000,
            "the answer",
            rawExchange(port, text, { halfClose: true }),
          );
          assert.match(answer.head, /^HTTP\/1\.1 400 /);
          assert.equal(JSON.parse(answer.body).error.code, "incomplete_body");
          assert.match(
            answer.head,
            new RegExp(`access-control-allow-origin: ${ORIGIN}`, "i"),
          );
        });
      }
    });
    assert.deepEqual(lines, []);
  });
});

// ---------------------------------------------------------------------------
// Stalled bodies: deadline and budget

Deno.test("a body that stalls answers 408 request_timeout once its deadline passes", async () => {
  const clock = fakeClock();
  await withHarness(async (h) => {
    const guard = new BodyGuard({
      budgetBytes: 1 << 20,
      timeoutMs: 10_000,
      now: clock.now,
    });
    const app = guardedApp(h, guard);
    const body = stalledBody(encoder.encode('{"level":"info"'));
    let settled = false;
    const answer = postBody(app, body.stream, { "Content-Length": "1000" })
      .finally(() => settled = true);
    await until(() => guard.reservedBytes > 0);
    clock.advance(9_999);
    assert.equal(guard.sweep(), 0);
    // A turn of the event loop for a wrong answer to come, if one would.
    await new Promise((r) => setTimeout(r, 0));
    assert.equal(settled, false, "answered before the deadline");
    clock.advance(1);
    assert.equal(guard.sweep(), 1);
    const res = await answer;
    assert.equal(res.status, 408);
    const { error } = await res.json();
    assert.equal(error.code, "request_timeout");
    assert.match(error.message, /10000 ms/);
    assert.equal(res.headers.get("access-control-allow-origin"), null);
    // The runtime keeps the read pending while the client holds on: its
    // bytes (at least what a read holds) stay reserved until the client goes.
    assert.equal(guard.reservedBytes, READ_COST);
    body.fail();
    await until(() => guard.reservedBytes === 0);
  }, { clock });
});

Deno.test("past the body budget a request answers 503 with Retry-After before its body is read", async () => {
  const clock = fakeClock();
  await withHarness(async (h) => {
    const guard = new BodyGuard({
      budgetBytes: 2 * READ_COST,
      timeoutMs: 10_000,
      now: clock.now,
    });
    const app = guardedApp(h, guard);
    // A body being read reserves its size, and at least what the runtime's
    // read holds meanwhile.
    const first = stalledBody(encoder.encode("{"));
    const held = postBody(app, first.stream, { "Content-Length": "65536" });
    await until(() => guard.reservedBytes > 0);
    assert.equal(guard.reservedBytes, READ_COST);

    // A small body still fits beside the held one.
    const small = await h.post(randomEntry());
    assert.equal(small.status, 200);
    await small.body?.cancel();
    const text = JSON.stringify(randomEntry());
    const fits = await postBody(app, text, {
      "Content-Length": String(encoder.encode(text).length),
    });
    assert.equal(fits.status, 200);
    await fits.body?.cancel();

    const second = stalledBody(encoder.encode("{"));
    const heldToo = postBody(app, second.stream, {
      "Content-Length": "65536",
    });
    await until(() => guard.reservedBytes > READ_COST);
    assert.equal(guard.reservedBytes, 2 * READ_COST);

    const third = stalledBody(encoder.encode("{"));
    const refused = await postBody(app, third.stream, {
      "Content-Length": "1000",
      Origin: ORIGIN,
    });
    assert.equal(refused.status, 503);
    assert.equal(refused.headers.get("retry-after"), "1");
    assert.equal(refused.headers.get("access-control-allow-origin"), ORIGIN);
    assert.equal((await refused.json()).error.code, "unavailable");
    assert.equal(third.pulls(), 0, "the refused body was read");

    // A body without Content-Length is refused too.
    const chunked = await postBody(
      app,
      stalledBody(encoder.encode("{")).stream,
    );
    assert.equal(chunked.status, 503);
    await chunked.body?.cancel();

    first.fail();
    second.fail();
    assert.equal((await held).status, 400);
    assert.equal((await heldToo).status, 400);
    assert.equal(guard.reservedBytes, 0);
  }, { clock });
});

Deno.test("a single body larger than the whole budget is still read when nothing else is", () => {
  const guard = new BodyGuard({ budgetBytes: 1000, timeoutMs: 1000 });
  const held = guard.reserve(5000);
  assert.ok(held);
  assert.equal(guard.reserve(1), null);
  guard.release(held);
  guard.release(held);
  assert.equal(guard.reservedBytes, 0);
});

Deno.test("over a real socket, a stalled body is answered 408 once the shortened timeout has passed", async () => {
  const h = await harness();
  const guard = new BodyGuard({ budgetBytes: 1 << 20, timeoutMs: 300 });
  guard.start();
  const app = guardedApp(h, guard);
  try {
    await serving(app, async (port) => {
      // Against a hang only: about 0.3 s, several on a busy machine.
      const answer = await within(
        10_000,
        "the 408",
        rawExchange(
          port,
          REQUEST_HEAD + "Content-Length: 1000\r\n\r\n" + '{"level":"info"',
        ),
      );
      assert.match(answer.head, /^HTTP\/1\.1 408 /);
      assert.equal(JSON.parse(answer.body).error.code, "request_timeout");
      // Not before the timeout: the guard, not the socket, ended it.
      assert.ok(answer.ms >= 290, `answered after ${answer.ms} ms`);
    });
  } finally {
    guard.stop();
    await h.close();
  }
});

Deno.test("the guard's sweep timer runs only while a body is being read", () => {
  const clock = fakeClock();
  const timers = manualTimers();
  const guard = new BodyGuard({
    budgetBytes: 1 << 20,
    timeoutMs: 1000,
    now: clock.now,
  });
  guard.start(timers.after);
  assert.deepEqual(timers.armed, [], "at rest nothing is armed");
  const held = guard.reserve(100)!;
  guard.reserve(100);
  assert.deepEqual(timers.armed, [250], "a quarter of the timeout, armed once");
  clock.advance(1001);
  timers.fire();
  assert.equal(held.expired, true, "the tick swept the stalled body");
  assert.deepEqual(timers.armed, [250], "bodies still held: armed again");
  guard.release(held);
  timers.fire();
  assert.deepEqual(timers.armed, [250], "one body still held");
  guard.stop();
  assert.deepEqual(timers.armed, [], "stop cancels the tick due");
});

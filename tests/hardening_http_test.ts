/**
 * The endpoint under faults found from outside: bodies cut short, bodies that
 * stall, a flood of stalled bodies, unexpected errors in bulk, credentialed
 * CORS, and running out of file descriptors. In-process with a fake clock
 * where the app decides; over real sockets (and a real server process for
 * the descriptor flood) where only the runtime shows the behaviour.
 */
import assert from "node:assert/strict";
import { createApp } from "../app.ts";
import { BodyGuard } from "../routes/body_guard.ts";
import { ErrorLog } from "../routes/error_log.ts";
import { serveResilient } from "../server/serve.ts";
import { fakeClock, type Harness, harness, randomEntry } from "./_helpers.ts";

const ORIGIN = "https://app.example.com";
const ROOT = new URL("..", import.meta.url).pathname;
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

function post(
  app: ReturnType<typeof createApp>,
  body: BodyInit,
  headers: Record<string, string> = {},
): Promise<Response> {
  return Promise.resolve(app.request("/api/v1/logs", {
    method: "POST",
    headers: { "Content-Type": "application/json", ...headers },
    body,
    duplex: "half",
  } as RequestInit, {
    remoteAddr: { transport: "tcp", hostname: "203.0.113.7", port: 40000 },
  }));
}

/** Rejects after `ms` so that a test awaiting an event fails, not hangs. */
async function within<T>(ms: number, what: string, p: Promise<T>): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    return await Promise.race([
      p,
      new Promise<never>((_, reject) => {
        timer = setTimeout(
          () => reject(new Error(`Timed out after ${ms} ms: ${what}`)),
          ms,
        );
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

// ---------------------------------------------------------------------------
// CORS and media types

Deno.test("answers and preflights allow credentials beside the echoed origin, never with *", async (t) => {
  const h = await harness();
  try {
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
      const res = await h.app.request("/api/v1/logs", {
        method: "OPTIONS",
        headers: {
          Origin: ORIGIN,
          "Access-Control-Request-Method": "POST",
          "Access-Control-Request-Headers": "content-type",
        },
      });
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
  } finally {
    await h.close();
  }
});

Deno.test("the 415 message names both accepted media types", async (t) => {
  const h = await harness();
  try {
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
  } finally {
    await h.close();
  }
});

// ---------------------------------------------------------------------------
// Bodies cut short

Deno.test("a body cut short by the client answers 400 incomplete_body and logs nothing", async (t) => {
  const h = await harness();
  const lines: string[] = [];
  const guard = new BodyGuard({
    budgetBytes: 1 << 20,
    timeoutMs: 10_000,
    now: h.clock.now,
  });
  const app = guardedApp(h, guard, lines);
  try {
    for (const length of ["100", null]) {
      await t.step(`Content-Length ${length}`, async () => {
        const body = stalledBody(encoder.encode('{"level":"info"'));
        const answer = post(
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
  } finally {
    await h.close();
  }
});

/** Sends `text` on a raw TCP connection and reads the answer until EOF. */
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
    const reader = conn.readable.getReader();
    const decoder = new TextDecoder();
    let got = "";
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      got += decoder.decode(value, { stream: true });
      const end = got.indexOf("\r\n\r\n");
      const length = /content-length: (\d+)/i.exec(got)?.[1];
      if (end >= 0 && length && got.length >= end + 4 + Number(length)) break;
    }
    reader.releaseLock();
    const end = got.indexOf("\r\n\r\n");
    return {
      head: got.slice(0, end),
      body: got.slice(end + 4),
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
  const server = Deno.serve(
    { port: 0, hostname: "127.0.0.1", onListen: () => {} },
    (req, info) => app.fetch(req, { remoteAddr: info.remoteAddr }),
  );
  try {
    await fn(server.addr.port);
  } finally {
    await server.shutdown();
  }
}

const REQUEST_HEAD = "POST /api/v1/logs HTTP/1.1\r\nHost: localhost\r\n" +
  "Content-Type: application/json\r\nOrigin: " + ORIGIN + "\r\n";

Deno.test("over a real socket, a half-closed short body answers 400 incomplete_body, never 503", async (t) => {
  const h = await harness();
  const lines: string[] = [];
  const guard = new BodyGuard({ budgetBytes: 1 << 20, timeoutMs: 10_000 });
  const app = guardedApp(h, guard, lines);
  try {
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
  } finally {
    await h.close();
  }
});

// ---------------------------------------------------------------------------
// Stalled bodies: deadline and budget

Deno.test("a body that stalls answers 408 request_timeout once its deadline passes", async () => {
  const clock = fakeClock();
  const h = await harness({ clock });
  const guard = new BodyGuard({
    budgetBytes: 1 << 20,
    timeoutMs: 10_000,
    now: clock.now,
  });
  const app = guardedApp(h, guard);
  try {
    const body = stalledBody(encoder.encode('{"level":"info"'));
    let settled = false;
    const answer = post(app, body.stream, { "Content-Length": "1000" })
      .finally(() => settled = true);
    await new Promise((r) => setTimeout(r, 0));
    clock.advance(9_999);
    assert.equal(guard.sweep(), 0);
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
    // bytes stay reserved until the client goes.
    assert.equal(guard.reservedBytes, 1000);
    body.fail();
    await new Promise((r) => setTimeout(r, 0));
    assert.equal(guard.reservedBytes, 0);
  } finally {
    await h.close();
  }
});

Deno.test("past the body budget a request answers 503 with Retry-After before its body is read", async () => {
  const clock = fakeClock();
  const h = await harness({ clock });
  const guard = new BodyGuard({
    budgetBytes: 100_000,
    timeoutMs: 10_000,
    now: clock.now,
  });
  const app = guardedApp(h, guard);
  try {
    const first = stalledBody(encoder.encode("{"));
    const held = post(app, first.stream, { "Content-Length": "65536" });
    await new Promise((r) => setTimeout(r, 0));
    assert.equal(guard.reservedBytes, 65536);

    const second = stalledBody(encoder.encode("{"));
    const refused = await post(app, second.stream, {
      "Content-Length": "65536",
      Origin: ORIGIN,
    });
    assert.equal(refused.status, 503);
    assert.equal(refused.headers.get("retry-after"), "1");
    assert.equal(refused.headers.get("access-control-allow-origin"), ORIGIN);
    assert.equal((await refused.json()).error.code, "unavailable");
    assert.equal(second.pulls(), 0, "the refused body was read");

    // A body without Content-Length reserves the body limit.
    const chunked = await post(app, stalledBody(encoder.encode("{")).stream);
    assert.equal(chunked.status, 503);
    await chunked.body?.cancel();

    // A small body still fits beside the held one.
    const small = await h.post(randomEntry());
    assert.equal(small.status, 200);
    await small.body?.cancel();
    const text = JSON.stringify(randomEntry());
    const fits = await post(app, text, {
      "Content-Length": String(encoder.encode(text).length),
    });
    assert.equal(fits.status, 200);
    await fits.body?.cancel();

    first.fail();
    assert.equal((await held).status, 400);
    assert.equal(guard.reservedBytes, 0);
  } finally {
    await h.close();
  }
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

Deno.test("over a real socket, a stalled body is answered 408 within the shortened timeout", async () => {
  const h = await harness();
  const guard = new BodyGuard({ budgetBytes: 1 << 20, timeoutMs: 300 });
  guard.start();
  const app = guardedApp(h, guard);
  try {
    await serving(app, async (port) => {
      const answer = await within(
        5000,
        "the 408",
        rawExchange(
          port,
          REQUEST_HEAD + "Content-Length: 1000\r\n\r\n" + '{"level":"info"',
        ),
      );
      assert.match(answer.head, /^HTTP\/1\.1 408 /);
      assert.equal(JSON.parse(answer.body).error.code, "request_timeout");
      assert.ok(answer.ms >= 290, `answered after ${answer.ms} ms`);
      assert.ok(answer.ms < 2000, `answered after ${answer.ms} ms`);
    });
  } finally {
    guard.stop();
    await h.close();
  }
});

// ---------------------------------------------------------------------------
// Unexpected errors

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
      const res = await post(app, JSON.stringify(randomEntry()));
      assert.equal(res.status, 503);
      await res.body?.cancel();
    }
    assert.equal(appLines.length, 1);
    assert.match(appLines[0]!, /^Unexpected error: TypeError: broken/);
  } finally {
    await h.close();
  }
});

// ---------------------------------------------------------------------------
// Running out of file descriptors, on the real server

Deno.test("a server whose accept loop fails shuts it down and listens again on the same port", async () => {
  const calls: { port: number }[] = [];
  const failures: { message: string; retryMs: number }[] = [];
  const shutdowns: number[] = [];
  let failNext: ((e: Error) => void) | undefined;
  let refuse = 2;
  const serve = (options: Deno.ServeTcpOptions) => {
    const n = calls.length;
    calls.push({ port: options.port ?? -1 });
    if (n > 0 && refuse-- > 0) throw new Error("Too many open files");
    const addr = {
      transport: "tcp" as const,
      hostname: "127.0.0.1",
      port: 4321,
    };
    options.onListen?.(addr);
    return {
      addr,
      finished: new Promise<void>((_, reject) => {
        failNext = reject;
      }),
      shutdown: () => {
        shutdowns.push(n);
        return Promise.resolve();
      },
    };
  };
  const listened: boolean[] = [];
  const server = serveResilient({
    port: 0,
    hostname: "127.0.0.1",
    handler: () => new Response("ok"),
    serve,
    retryMs: 1,
    onListen: (_, again) => listened.push(again),
    onFailure: (e, retryMs) =>
      failures.push({ message: (e as Error).message, retryMs }),
  });
  failNext!(new Error("Http: Too many open files (os error 24)"));
  await within(
    2000,
    "listening again",
    (async () => {
      while (listened.length < 2) await new Promise((r) => setTimeout(r, 1));
    })(),
  );
  assert.deepEqual(listened, [false, true]);
  assert.deepEqual(calls.map((c) => c.port), [0, 4321, 4321, 4321]);
  assert.deepEqual(shutdowns, [0]);
  assert.deepEqual(failures.map((f) => f.retryMs), [1, 2, 4]);
  assert.equal(server.restarts, 1);
  await server.shutdown();
  assert.deepEqual(shutdowns, [0, 3]);
});

/** Starts main.ts under a descriptor limit; resolves once it listens. */
async function startLimitedServer(nofile: number) {
  const deno = Deno.execPath();
  const child = new Deno.Command("bash", {
    args: [
      "-c",
      `ulimit -n ${nofile} && exec "$0" run --allow-net --allow-env --allow-read --allow-write main.ts`,
      deno,
    ],
    cwd: ROOT,
    env: {
      KV_PATH: ":memory:",
      PORT: "0",
      HOSTNAME: "127.0.0.1",
      NO_COLOR: "1",
      RATE_LIMIT_RPS: "1000000",
      RATE_LIMIT_BURST: "1000000",
    },
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  let output = "";
  const collect = async (stream: ReadableStream<Uint8Array>) => {
    for await (const text of stream.pipeThrough(new TextDecoderStream())) {
      output += text;
    }
  };
  const drained = Promise.all([collect(child.stdout), collect(child.stderr)]);
  let exited = false;
  const status = child.status.then((s) => {
    exited = true;
    return s;
  });
  const port = await within(
    20_000,
    "the server to listen",
    (async () => {
      for (;;) {
        const match = /Listening on http:\/\/[^:]+:(\d+)/.exec(output);
        if (match) return Number(match[1]);
        if (exited) throw new Error(`Server exited: ${output}`);
        await new Promise((r) => setTimeout(r, 20));
      }
    })(),
  );
  return {
    port,
    output: () => output,
    exited: () => exited,
    async stop() {
      if (!exited) child.kill("SIGKILL");
      await status;
      await drained;
    },
  };
}

Deno.test("running out of file descriptors does not end the server, which serves again once they free up", async () => {
  const server = await startLimitedServer(256);
  const conns: Deno.Conn[] = [];
  try {
    // More idle connections than the process may hold descriptors.
    for (let i = 0; i < 320; i++) {
      try {
        conns.push(
          await Deno.connect({ hostname: "127.0.0.1", port: server.port }),
        );
      } catch { /* refused while the server listens again: expected */ }
    }
    await new Promise((r) => setTimeout(r, 500));
    assert.ok(!server.exited(), `server exited: ${server.output()}`);
    assert.match(server.output(), /Too many open files/);
    for (const conn of conns.splice(0)) conn.close();

    const status = await within(
      15_000,
      "a 200 after the flood",
      (async () => {
        for (;;) {
          try {
            const res = await fetch(
              `http://127.0.0.1:${server.port}/api/v1/logs`,
              {
                method: "POST",
                headers: { "Content-Type": "application/json" },
                body: JSON.stringify(randomEntry()),
              },
            );
            await res.body?.cancel();
            return res.status;
          } catch {
            await new Promise((r) => setTimeout(r, 100));
          }
        }
      })(),
    );
    assert.equal(status, 200);
    assert.ok(!server.exited(), `server exited: ${server.output()}`);
    assert.doesNotMatch(server.output(), /Uncaught/);
  } finally {
    for (const conn of conns) conn.close();
    await server.stop();
  }
});

// ---------------------------------------------------------------------------
// Deno Deploy registers crons only at the top level of the entry module

Deno.test("main.ts registers its cron before its first await (before KV opens)", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const preload = `${dir}/preload.ts`;
    await Deno.writeTextFile(
      preload,
      `let opened = false;
const openKv = Deno.openKv;
Object.defineProperty(Deno, "openKv", {
  value: (...args: Parameters<typeof openKv>) => {
    opened = true;
    return openKv(...args);
  },
});
Object.defineProperty(Deno, "cron", {
  value: (name: string) => {
    console.log(\`cron "\${name}" registered; KV opened before: \${opened}\`);
    Deno.exit(0);
  },
});
`,
    );
    const { stdout, stderr } = await new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", `--preload=${preload}`, "main.ts"],
      cwd: ROOT,
      env: { KV_PATH: ":memory:", PORT: "0", QUEUE: "off", NO_COLOR: "1" },
      stdout: "piped",
      stderr: "piped",
    }).output();
    const out = new TextDecoder().decode(stdout) +
      new TextDecoder().decode(stderr);
    assert.match(
      out,
      /cron "sweep pending batches" registered; KV opened before: false/,
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

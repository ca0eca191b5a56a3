/**
 * The server process under faults found from outside: running out of file
 * descriptors (the real main.ts under a low `ulimit -n`, and the restart
 * logic with a fake server), and the cron registered where Deno Deploy needs
 * it.
 */
import assert from "node:assert/strict";
import { serveResilient } from "../../server/serve.ts";
import { randomEntry, textDecoder } from "../_helpers/harness.ts";
import { within } from "../_helpers/timeout.ts";

const ROOT = new URL("../..", import.meta.url).pathname;

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
      `ulimit -n ${nofile} && exec "$0" run --allow-net --allow-env --allow-read --allow-write --allow-sys=statfs main.ts`,
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
    for await (const text of stream.pipeThrough(textDecoder())) {
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
    // Wait for the server to say it ran out, then check it is still there.
    await within(
      15_000,
      "the server to report running out of descriptors",
      (async () => {
        while (!/Too many open files/.test(server.output())) {
          if (server.exited()) return;
          await new Promise((r) => setTimeout(r, 10));
        }
      })(),
    );
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
      env: { KV_PATH: ":memory:", PORT: "0", NO_COLOR: "1" },
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

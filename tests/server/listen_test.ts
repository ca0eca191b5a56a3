/**
 * An address that cannot be listened on at start-up (a port another process
 * holds) stops the server and the dashboard with one line and exit code 1,
 * as a malformed variable does, not with the runtime's stack trace: the real
 * processes, started as their tasks start them, on a port this test holds.
 *
 * @module
 */
import assert from "node:assert/strict";
import { denoArgs, taskCommand } from "../../bench/options.ts";
import { listenFailure } from "../../server/serve.ts";
import { type Exit, runMain, runToEnd } from "../_helpers/disk.ts";

const ROOT = new URL("../..", import.meta.url).pathname;

/** Runs `fn` with a port of 127.0.0.1 held open by this process. */
async function withTakenPort(fn: (port: number) => Promise<void>) {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  try {
    await fn(listener.addr.port);
  } finally {
    listener.close();
  }
}

/** Asserts exit code 1 and one line on stderr naming the taken address. */
function assertOneLine(exit: Exit, port: number): void {
  assert.equal(exit.code, 1, `exit code 1 expected: ${exit.stderr}`);
  const lines = exit.stderr.split("\n").filter((line) => line.trim() !== "");
  assert.equal(lines.length, 1, exit.stderr);
  assert.match(
    lines[0]!,
    new RegExp(
      `^Cannot listen on 127\\.0\\.0\\.1:${port}: Address already in use`,
    ),
  );
  assert.doesNotMatch(exit.stderr, /^\s+at /m);
}

Deno.test("deno task start on a port that is taken prints one line and exits 1", async () => {
  await withTakenPort(async (port) => {
    const exit = await runMain({ KV_PATH: ":memory:", PORT: String(port) });
    assertOneLine(exit, port);
    assert.doesNotMatch(exit.stdout, /Listening/);
  });
});

Deno.test("deno task start with METRICS_PORT taken prints one line and exits 1", async () => {
  await withTakenPort(async (port) => {
    const exit = await runMain({
      KV_PATH: ":memory:",
      METRICS_PORT: String(port),
      METRICS_HOSTNAME: "127.0.0.1",
    });
    assertOneLine(exit, port);
  });
});

/**
 * Runs `deno task dashboard` with `env` added, expecting it to end by itself
 * within 15 s (it is killed otherwise, and `code` is then -1).
 */
async function runDashboard(env: Record<string, string>): Promise<Exit> {
  return runToEnd(
    denoArgs(
      taskCommand(await Deno.readTextFile(`${ROOT}deno.json`), "dashboard"),
      "dashboard/main.ts",
    ),
    env,
  );
}

Deno.test("deno task dashboard on a port that is taken prints one line and exits 1", async () => {
  await withTakenPort(async (port) => {
    const exit = await runDashboard({
      KV_PATH: ":memory:",
      ADMIN_PASSWORD: "correct horse battery",
      DASHBOARD_HOSTNAME: "127.0.0.1",
      DASHBOARD_PORT: String(port),
    });
    assertOneLine(exit, port);
    assert.doesNotMatch(exit.stdout, /Dashboard on/);
  });
});

Deno.test("listenFailure names the address of a socket an operator can fix, and nothing else", () => {
  assert.equal(
    listenFailure(
      new Deno.errors.AddrInUse("Address already in use (os error 98)"),
      "127.0.0.1",
      8000,
    ),
    "Cannot listen on 127.0.0.1:8000: Address already in use (os error 98)",
  );
  assert.equal(
    listenFailure(new Deno.errors.PermissionDenied("denied"), "::1", 80),
    "Cannot listen on [::1]:80: denied",
  );
  assert.match(
    listenFailure(new Deno.errors.AddrNotAvailable("x"), "10.0.0.9", 1) ?? "",
    /^Cannot listen on 10\.0\.0\.9:1: x$/,
  );
  assert.equal(listenFailure(new TypeError("bug"), "127.0.0.1", 8000), null);
});

Deno.test("deno task dashboard over a KV_PATH that is no database, or a malformed variable, prints one line and exits 1", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const cases: [Record<string, string>, RegExp][] = [
      [{ KV_PATH: dir }, new RegExp(`^Cannot open KV_PATH "${dir}": \\S`)],
      [{ KV_PATH: ":memory:", QUERY_THREAD: "sometimes" }, /QUERY_THREAD/],
    ];
    for (const [env, line] of cases) {
      const exit = await runDashboard({
        ADMIN_PASSWORD: "correct horse battery",
        DASHBOARD_HOSTNAME: "127.0.0.1",
        DASHBOARD_PORT: "0",
        ...env,
      });
      assert.equal(exit.code, 1, exit.stderr);
      const lines = exit.stderr.split("\n").filter((l) => l.trim() !== "");
      assert.equal(lines.length, 1, exit.stderr);
      assert.match(lines[0]!, line);
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

/**
 * A locked database (docs/design.md#locked-database): every handle `openKv`
 * gives back sends a call refused as `database is locked` again, within a
 * bound, and past it throws one `KvLockedError` that the edges answer as
 * `503` or print as one line. The real-process test holds the write lock of
 * the file from a second process longer than Deno KV's own wait (about 5 s).
 *
 * @module
 */
import assert from "node:assert/strict";
import { kvWith } from "../_helpers/kv_with.ts";
import { ThreadStalledError } from "../../db/own_thread.ts";
import { createDashboard } from "../../dashboard/app.ts";
import {
  failureLine,
  KvLockedError,
  lockedAsLine,
  retryingLocked,
  retryLocked,
} from "../../db/locked.ts";
import { openKv } from "../../db/open.ts";
import { cli } from "../_helpers/cli.ts";
import { PASSWORD, post, signIn, withSignedIn } from "../_helpers/dashboard.ts";
import { randomEntry } from "../_helpers/harness.ts";
import { holdWriteLock } from "../_helpers/lock_holder.ts";

/** The error Deno KV throws when SQLite refuses a call as locked. */
function locked(): TypeError {
  return new TypeError("database is locked");
}

/** A clock that moves only by the waits asked of `sleep`. */
function drivenClock() {
  let t = 0;
  const waits: number[] = [];
  return {
    waits,
    now: () => t,
    random: () => 0.9999,
    sleep: (ms: number) => {
      waits.push(ms);
      t += ms;
      return Promise.resolve();
    },
  };
}

Deno.test("a call refused twice as locked is sent again and its answer returned", async () => {
  const clock = drivenClock();
  let calls = 0;
  const value = await retryLocked(() => {
    calls++;
    return calls <= 2 ? Promise.reject(locked()) : Promise.resolve("ok");
  }, clock);
  assert.equal(value, "ok");
  assert.equal(calls, 3);
  assert.deepEqual(clock.waits, [5, 10]);
});

Deno.test("a call refused past the bound throws one KvLockedError of one line", async () => {
  const clock = drivenClock();
  let calls = 0;
  const refused = retryLocked(() => {
    calls++;
    return Promise.reject(locked());
  }, { ...clock, maxMs: 600 });
  const error = await refused.catch((e) => e);
  assert.ok(error instanceof KvLockedError);
  // Waits double up to the cap; none starts past the bound of time.
  assert.deepEqual(clock.waits, [5, 10, 20, 40, 80, 160, 200, 200]);
  assert.equal(calls, 9);
  assert.match(error.message, /stayed locked.*9 attempts in 0\.7 s.*retry/);
  assert.doesNotMatch(error.message, /\n/);
  assert.equal(lockedAsLine(error), error.message);
  const wrapped = new Error('Cannot evaluate alert rule "r1"', {
    cause: error,
  });
  assert.equal(lockedAsLine(wrapped), `${wrapped.message}: ${error.message}`);
  const stalled = new ThreadStalledError("The query thread", 15_000);
  assert.equal(lockedAsLine(stalled), stalled.message);
  const other = new TypeError("database or disk is full");
  assert.equal(lockedAsLine(other), other, "any other error as it is");
});

Deno.test("any other error is thrown at once, as it is", async () => {
  const clock = drivenClock();
  const other = new TypeError("database or disk is full");
  const error = await retryLocked(() => Promise.reject(other), clock)
    .catch((e) => e);
  assert.equal(error, other);
  assert.deepEqual(clock.waits, []);
  assert.equal(lockedAsLine(other), other);
});

/** A KV whose writes are always refused (as locked by default), behind the retries. */
async function alwaysLocked(refusal: () => Error = locked) {
  const raw = await Deno.openKv(":memory:");
  const refusing = kvWith(raw, {
    set: () => Promise.reject(refusal()),
    delete: () => Promise.reject(refusal()),
    atomic: () => {
      const op = raw.atomic();
      op.commit = () => Promise.reject(refusal());
      return op;
    },
  });
  const clock = drivenClock();
  return { raw, kv: retryingLocked(refusing, clock) };
}

/** Runs `fn` with console.error collected, and gives back what it printed. */
async function printed(fn: () => Promise<void>): Promise<string[]> {
  const lines: string[] = [];
  const original = console.error;
  console.error = (...args: unknown[]) => {
    lines.push(
      args.map((a) => a instanceof Error ? a.stack : String(a)).join(" "),
    );
  };
  try {
    await fn();
  } finally {
    console.error = original;
  }
  return lines;
}

Deno.test("the dashboard answers a store locked past the bound with 503 and a page that says to retry", async () => {
  // Signed in on a store that writes, then the same pages on one that refuses.
  const { raw, kv } = await alwaysLocked();
  try {
    const writable = createDashboard({ kv: raw, password: PASSWORD });
    const browser = await signIn(writable);
    const dash = createDashboard({ kv, password: PASSWORD });
    let res!: Response;
    const lines = await printed(async () => {
      res = await post(dash, browser, "/projects", {
        name: "Web shop",
        allow: "https://shop.example.com",
      });
    });
    assert.equal(res.status, 503);
    assert.equal(res.headers.get("retry-after"), "5");
    assert.match(res.headers.get("content-type") ?? "", /text\/html/);
    assert.match(await res.text(), /Try again in a moment/);
    assert.equal(lines.length, 1);
    assert.match(
      lines[0]!,
      /^Dashboard: cannot answer POST \/projects: The database stayed locked/,
    );
    assert.doesNotMatch(lines[0]!, /\n\s+at /);
  } finally {
    raw.close();
  }
});

Deno.test("the dashboard answers a full disk with 503, a page that says so, and one line", async () => {
  const full = () => new TypeError("database or disk is full");
  const { raw, kv } = await alwaysLocked(full);
  try {
    const browser = await signIn(
      createDashboard({ kv: raw, password: PASSWORD }),
    );
    const dash = createDashboard({ kv, password: PASSWORD });
    let res!: Response;
    const lines = await printed(async () => {
      res = await post(dash, browser, "/projects", { name: "Web shop" });
    });
    assert.equal(res.status, 503);
    assert.equal(res.headers.get("retry-after"), "5");
    assert.match(await res.text(), /disk is full: nothing can be saved/);
    assert.deepEqual(lines, [
      "Dashboard: cannot answer POST /projects: database or disk is full",
    ]);
  } finally {
    raw.close();
  }
});

Deno.test("a command on a store locked past the bound fails with one line", async () => {
  const { raw, kv } = await alwaysLocked();
  try {
    const error = await cli(kv, [
      "project",
      "create",
      "--name",
      "shop",
      "--allow",
      "https://shop.example.com",
    ]).catch((e) => e);
    // cli/main.ts prints a thrown error's message as one line and exits 1.
    assert.ok(error instanceof KvLockedError);
    assert.doesNotMatch(error.message, /\n/);
  } finally {
    raw.close();
  }
});

/** Longer than Deno KV's own wait for a write lock (about 5 s). */
const HOLD_MS = 6000;

Deno.test({
  name:
    "writes of the dashboard, the commands and the pipeline outlast another process holding the write lock",
  // The holder process's pipes end with it.
  sanitizeResources: false,
  fn: async () => {
    const dir = await Deno.makeTempDir();
    const path = `${dir}/kv.sqlite`;
    const kv = await openKv(path);
    try {
      await withSignedIn(async (h, browser) => {
        const project = await h.project(["https://app.example.com"]);
        const holder = await holdWriteLock(path, HOLD_MS);
        const started = performance.now();
        let answers!: [
          Deno.KvCommitResult,
          Response,
          { code: number },
          Response,
        ];
        const lines = await printed(async () => {
          const writes = Promise.all([
            kv.atomic().set(["locked_test"], 1).commit() as Promise<
              Deno.KvCommitResult
            >,
            browser.post("/projects", {
              name: "Made while locked",
              allow: "https://shop.example.com",
            }),
            cli(kv, [
              "project",
              "create",
              "--name",
              "cli-made",
              "--allow",
              "https://cli.example.com",
            ]),
            h.post(randomEntry({ projectId: project.id }), {
              Origin: "https://app.example.com",
            }),
          ]);
          // The lock is held HOLD_MS more from now: the writes, already
          // under way, wait that long at least, however busy the machine.
          await holder.start();
          answers = await writes;
          await h.process();
        });
        const waited = performance.now() - started;
        await holder.done;
        const [commit, page, command, ingest] = answers;
        assert.ok(waited >= HOLD_MS, `the writes waited ${waited} ms`);
        assert.equal(commit.ok, true);
        assert.equal(page.status, 303);
        assert.equal(command.code, 0);
        assert.equal(ingest.status, 200);
        assert.deepEqual(lines, []);
        assert.equal((await kv.get(["locked_test"])).value, 1);
        assert.equal((await h.logs(project.id)).length, 1);
        const list = await cli(kv, ["project", "list"]);
        assert.match(list.stdout, /Made while locked/);
        assert.match(list.stdout, /cli-made/);
      }, { kv });
    } finally {
      kv.close();
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test("a failure is one line that names what failed once, without a stack", () => {
  assert.equal(
    failureLine("Cannot merge", new Error("disk\nfull")),
    "Cannot merge: disk full",
  );
  assert.equal(
    failureLine("Cannot merge", new Error("Cannot merge: disk full")),
    "Cannot merge: disk full",
  );
  assert.equal(
    failureLine(
      'Cannot process batch "b1"',
      new Error("Cannot commit", { cause: new Error("disk full") }),
    ),
    'Cannot process batch "b1": Cannot commit: disk full',
  );
});

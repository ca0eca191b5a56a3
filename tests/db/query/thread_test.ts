/**
 * The reads in a thread of their own (db/query/thread.ts): over a database
 * file they answer what the same reads in this thread answer, with the same
 * errors; a thread that cannot run is one error, and its reads are answered
 * here instead.
 *
 * @module
 */
import assert from "node:assert/strict";
import { parseQuery, parseSearch } from "../../../db/query/parse.ts";
import { InvalidQueryError } from "../../../db/query/filter.ts";
import { HistogramCutError } from "../../../db/query/histogram.ts";
import { localReads, type Reads } from "../../../db/query/reads.ts";
import {
  createQueryThread,
  errorFromThread,
  portableOptions,
  queryThreadOf,
} from "../../../db/query/thread.ts";
import { isLockedError } from "../../../db/kv.ts";
import { ThreadStalledError } from "../../../db/own_thread.ts";
import type { ErrorGroup } from "../../../db/error_group_reads.ts";
import { fingerprintOf } from "../../../domain/fingerprint.ts";
import {
  HOUR,
  notedReads,
  queryProject,
  recordAt,
  storeBatch,
  T0,
} from "../../_helpers/query.ts";
import { withTimeout } from "../../_helpers/harness.ts";

/** A database file with one project of 40 entries over two hours. */
async function withStore(
  fn: (kv: Deno.Kv, kvPath: string, projectId: string) => Promise<void>,
) {
  const dir = await Deno.makeTempDir();
  const kvPath = `${dir}/kv.sqlite`;
  const kv = await Deno.openKv(kvPath);
  try {
    const projectId = await queryProject(kv);
    const records = Array.from(
      { length: 40 },
      (_, i) =>
        recordAt(T0 + i * 3 * 60_000, {
          level: i % 4 === 0 ? "error" : "info",
          data: { title: i % 2 ? "Checkout failed" : "Cart opened", n: i },
          context: { service: i % 3 ? "api" : "web" },
        }),
    );
    await storeBatch(kv, projectId, records);
    await fn(kv, kvPath, projectId);
  } finally {
    kv.close();
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("the query thread answers each read as this thread does, and this thread reads nothing", async () => {
  await withStore(async (kv, kvPath, projectId) => {
    const local = localReads(kv);
    const calls: string[] = [];
    const noted = notedReads(() => local, calls);
    const thread = createQueryThread({ kvPath, local: noted });
    try {
      const { filter, pipe } = parseSearch(
        "checkout | count by context.service",
      );
      const page = { filter: parseQuery("checkout"), limit: 7 };
      const range = { since: T0, until: T0 + 2 * HOUR, filter };
      const tail = { afterId: null, filter, now: T0 + 3 * HOUR, limit: 5 };
      const errors = { filter: parseQuery("level:error"), limit: 1 };
      const [error] = (await local.queryLogs(projectId, errors)).records;
      const { fingerprint } = fingerprintOf(error!);
      const group = { fingerprint, firstSeen: T0 } as ErrorGroup;
      const withStack = recordAt(T0, {
        data: {
          stack: "TypeError: x\n    at pay (https://a.example/app.js:1:9)",
        },
        context: { release: "1.0.0" },
      });
      const detail = [fingerprint, { now: T0 + 3 * HOUR }] as const;
      const asked: [keyof Reads, unknown[]][] = [
        ["queryLogs", [page]],
        ["aggregate", [{ filter, pipe: pipe! }]],
        ["facets", [{ filter }]],
        ["histogram", [range]],
        ["tailLogs", [tail]],
        ["exportPage", [{ ...page, csv: true }]],
        ["readGroupDetail", [...detail]],
        ["readGroupUsers", [[group], {}]],
        ["shownStack", [error]],
        ["shownStack", [withStack]],
      ];
      for (const [name, args] of asked) {
        const read = (reads: Reads) =>
          (reads[name] as (...a: unknown[]) => Promise<unknown>)(
            projectId,
            ...args,
          );
        const answer = await withTimeout(read(thread), 20_000, name);
        assert.deepEqual(answer, await read(local), name);
      }
      assert.deepEqual(
        await thread.queryLogs(projectId),
        await local.queryLogs(projectId),
        "a read without its options takes their defaults",
      );
      assert.deepEqual(
        await thread.facets(projectId),
        await local.facets(projectId),
      );
      assert.deepEqual(calls, [], "every read ran in the thread");
      // Options that cannot cross are read here, not refused.
      const odd = { ...page, note: () => "a function" } as typeof page;
      assert.deepEqual(
        await thread.queryLogs(projectId, odd),
        await local.queryLogs(projectId, page),
      );
      assert.deepEqual(calls.splice(0), ["queryLogs"]);
      const shown = await thread.readGroupDetail(projectId, ...detail);
      assert.equal(shown.latest?.id, error!.id, "the group's latest entry");
      assert.ok(shown.total > 0);
      assert.equal(
        (await thread.queryLogs(projectId, page)).records.length,
        7,
        "the page holds what it asked",
      );
      assert.deepEqual(calls, [], "every read ran in the thread");
    } finally {
      await thread.stop();
    }
  });
});

Deno.test("a read that fails in the thread fails with its own error class", async () => {
  await withStore(async (kv, kvPath, projectId) => {
    const thread = createQueryThread({ kvPath, local: localReads(kv) });
    try {
      await assert.rejects(
        thread.facets(projectId, { fields: [] }),
        (error) =>
          error instanceof InvalidQueryError &&
          /Cannot count facets of 0 fields/.test(error.message),
      );
      // A deadline already past, in this thread's clock: the thread's count
      // stops at once.
      await assert.rejects(
        thread.histogram(projectId, {
          since: T0,
          until: T0 + 2 * HOUR,
          filter: parseQuery("checkout"),
          deadline: performance.now() - 1,
        }),
        HistogramCutError,
      );
    } finally {
      await thread.stop();
    }
  });
});

Deno.test("a query thread that cannot open its database is one error, and its reads are answered here", async () => {
  await withStore(async (kv, _kvPath, projectId) => {
    const dir = await Deno.makeTempDir();
    let told: (error: unknown) => void;
    const failed = new Promise<unknown>((resolve) => told = resolve);
    const calls: string[] = [];
    const noted = notedReads(() => localReads(kv), calls);
    // A folder is no database file.
    const thread = createQueryThread({
      kvPath: dir,
      local: noted,
      onError: (e) => told(e),
    });
    try {
      const page = await withTimeout(
        thread.queryLogs(projectId, { limit: 3 }),
        20_000,
        "the read",
      );
      assert.equal(page.records.length, 3);
      const error = await withTimeout(failed, 20_000, "the thread's failure");
      assert.match(String(error), /^Error: Cannot read in the query thread: /);
      assert.doesNotMatch(String(error), /\n/);
      assert.deepEqual(calls, ["queryLogs"]);
      // Until a new thread runs, reads are answered here.
      await thread.aggregate(projectId, {
        pipe: parseSearch("* | count").pipe!,
      });
      assert.deepEqual(calls, ["queryLogs", "aggregate"]);
    } finally {
      await thread.stop();
      await Deno.remove(dir, { recursive: true });
    }
  });
});

Deno.test("options cross without clocks, a deadline as the time left, errors by name", () => {
  const clock = () => 1_000;
  assert.deepEqual(
    portableOptions({ limit: 5, budget: { ms: 300, chunks: 9, clock } }),
    { limit: 5, budget: { ms: 300, chunks: 9 } },
  );
  assert.deepEqual(
    portableOptions({ since: 1, until: 2, deadline: 1_250, clock }),
    { since: 1, until: 2, deadlineInMs: 250 },
  );
  assert.deepEqual(portableOptions(undefined), {});
  assert.ok(
    errorFromThread({ name: "InvalidQueryError", message: "m" }) instanceof
      InvalidQueryError,
  );
  const locked = errorFromThread({ name: "KvLockedError", message: "held" });
  assert.ok(isLockedError(locked), "a locked database stays a 503");
  assert.equal(locked.message, "held");
});

Deno.test("a read under way when the thread stops is answered, not failed by its closing handle", async () => {
  await withStore(async (kv, kvPath, projectId) => {
    // Enough entries that a count of distinct values takes many turns.
    for (let b = 0; b < 20; b++) {
      await storeBatch(
        kv,
        projectId,
        Array.from(
          { length: 1000 },
          (_, i) =>
            recordAt(T0 + HOUR + b * 1000 + i, {
              context: { userId: `user_${b * 1000 + i}` },
            }),
        ),
      );
    }
    const local = localReads(kv);
    const thread = createQueryThread({ kvPath, local });
    const asked = { pipe: parseSearch("* | uniq context.userId").pipe! };
    // The thread opens its handle first: a read it already began is the case.
    await thread.queryLogs(projectId, { limit: 1 });
    const reading = thread.aggregate(projectId, asked);
    await thread.stop();
    assert.deepEqual(await reading, await local.aggregate(projectId, asked));
  });
});

Deno.test("a query thread runs only over a file on this machine, and only when asked for", async () => {
  await withStore(async (kv, kvPath) => {
    for (const path of [":memory:", "https://kv.example.com/db", undefined]) {
      assert.equal(queryThreadOf(kv, path, true), null, String(path));
    }
    assert.equal(queryThreadOf(kv, kvPath, false), null);
    const thread = queryThreadOf(kv, kvPath, true);
    assert.notEqual(thread, null);
    await thread!.stop();
  });
});

Deno.test("a query thread that stops answering is ended: its reads fail as stalled, and the next are answered here until a new one starts", async () => {
  await withStore(async (kv, kvPath, projectId) => {
    const calls: string[] = [];
    const reported: unknown[] = [];
    const thread = createQueryThread({
      kvPath,
      local: notedReads(() => localReads(kv), calls),
      url: new URL("../../_helpers/stalling_thread.ts", import.meta.url),
      // Far above what a loaded machine may keep a thread from running, far
      // below the 2 s of the slow read.
      stallMs: 800,
      onError: (error) => reported.push(error),
    });
    try {
      // A slow read that lets the thread answer pings is waited for.
      const slow = await thread.facets(projectId, {});
      assert.equal(slow as unknown, "slow");
      // Nor is one this thread was too busy to hear for longer than that.
      const busy = thread.facets(projectId, {});
      const until = performance.now() + 1200;
      while (performance.now() < until) { /* this thread held */ }
      assert.equal(await busy as unknown, "slow");
      assert.deepEqual(reported, []);
      const held = thread.queryLogs(projectId, { limit: 3 });
      const error = await withTimeout(
        held.then(() => null, (e) => e),
        10_000,
        "the held read",
      );
      assert.ok(error instanceof ThreadStalledError, String(error));
      assert.match(error.message, /did not answer for \d+ s/);
      assert.equal(reported.length, 1);
      assert.match(String(reported[0]), /query thread: no answer for \d+ ms/);
      assert.deepEqual(calls, [], "a held read is not run again here");
      const page = await thread.queryLogs(projectId, { limit: 3 });
      assert.equal(page.records.length, 3);
      assert.deepEqual(calls, ["queryLogs"]);
    } finally {
      await thread.stop();
    }
  });
});

Deno.test("a query thread that never loads is ended once its load time has passed, and its reads fail as stalled", async () => {
  await withStore(async (kv, kvPath, projectId) => {
    const reported: unknown[] = [];
    const thread = createQueryThread({
      kvPath,
      local: localReads(kv),
      url: new URL("../../_helpers/unloaded_thread.ts", import.meta.url),
      stallMs: 100,
      loadMs: 300,
      onError: (error) => reported.push(error),
    });
    try {
      const error = await withTimeout(
        thread.queryLogs(projectId, { limit: 1 }).then(() => null, (e) => e),
        10_000,
        "the unanswered read",
      );
      assert.ok(error instanceof ThreadStalledError, String(error));
      assert.equal(reported.length, 1);
    } finally {
      await thread.stop();
    }
  });
});

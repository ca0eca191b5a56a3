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
} from "../../../db/query/thread.ts";
import { isLockedError } from "../../../db/kv.ts";
import {
  HOUR,
  queryProject,
  recordAt,
  storeBatch,
  T0,
} from "../../_helpers/query.ts";
import { withTimeout } from "../../_helpers/harness.ts";

/** Reads that count their calls, to tell which thread answered. */
function counted(reads: Reads): { reads: Reads; calls: string[] } {
  const calls: string[] = [];
  const wrap = <K extends keyof Reads>(name: K): Reads[K] =>
    ((projectId: string, options: never) => {
      calls.push(name);
      return (reads[name] as (p: string, o: never) => Promise<unknown>)(
        projectId,
        options,
      );
    }) as Reads[K];
  return {
    calls,
    reads: {
      queryLogs: wrap("queryLogs"),
      aggregate: wrap("aggregate"),
      facets: wrap("facets"),
      histogram: wrap("histogram"),
      tailLogs: wrap("tailLogs"),
    },
  };
}

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
    const spy = counted(local);
    const thread = createQueryThread({ kvPath, local: spy.reads });
    try {
      const { filter, pipe } = parseSearch(
        "checkout | count by context.service",
      );
      const page = { filter: parseQuery("checkout"), limit: 7 };
      const range = { since: T0, until: T0 + 2 * HOUR, filter };
      const tail = { afterId: null, filter, now: T0 + 3 * HOUR, limit: 5 };
      const asked = {
        queryLogs: [page, await local.queryLogs(projectId, page)],
        aggregate: [
          { filter, pipe: pipe! },
          await local.aggregate(projectId, { filter, pipe: pipe! }),
        ],
        facets: [{ filter }, await local.facets(projectId, { filter })],
        histogram: [range, await local.histogram(projectId, range)],
        tailLogs: [tail, await local.tailLogs(projectId, tail)],
      } as const;
      for (const [name, [options, expected]] of Object.entries(asked)) {
        const read = thread[name as keyof Reads] as (
          p: string,
          o: unknown,
        ) => Promise<unknown>;
        const answer = await withTimeout(
          read(projectId, options),
          20_000,
          name,
        );
        assert.deepEqual(answer, expected, name);
      }
      assert.equal(
        (await thread.queryLogs(projectId, page)).records.length,
        7,
        "the page holds what it asked",
      );
      assert.deepEqual(spy.calls, [], "every read ran in the thread");
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
    const spy = counted(localReads(kv));
    // A folder is no database file.
    const thread = createQueryThread({
      kvPath: dir,
      local: spy.reads,
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
      assert.deepEqual(spy.calls, ["queryLogs"]);
      // Until a new thread runs, reads are answered here.
      await thread.aggregate(projectId, {
        pipe: parseSearch("* | count").pipe!,
      });
      assert.deepEqual(spy.calls, ["queryLogs", "aggregate"]);
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

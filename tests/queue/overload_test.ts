import assert from "node:assert/strict";
import {
  GroupCommitter,
  OverloadedError,
  PIPELINE_ENTRIES,
} from "../../queue/producer.ts";
import { backlogGate } from "../../queue/pipeline.ts";
import {
  EVENT_TIMEOUT_MS,
  type Harness,
  harness,
  type HarnessOptions,
  pendingBatches,
  randomEntry,
  withTimeout,
} from "../_helpers/harness.ts";
import { atomicView } from "../_helpers/hold.ts";
import { sealBatch } from "../../queue/batch.ts";
import { until } from "../_helpers/client_fakes.ts";

/** A KV whose commits can be made to fail or to wait, for overload tests. */
function faultyKv(real: Deno.Kv) {
  const state = {
    mode: "ok" as "ok" | "fail" | "hold" | "throw",
    held: [] as (() => void)[],
    commits: 0,
    release() {
      for (const go of state.held.splice(0)) go();
    },
    /**
     * Lets commits through again, releases the held ones, and waits for
     * `pending` (what waited on them), failing after EVENT_TIMEOUT_MS.
     */
    resume<T>(pending: Promise<T>[], what: string): Promise<T[]> {
      state.mode = "ok";
      state.release();
      return withTimeout(Promise.all(pending), EVENT_TIMEOUT_MS, what);
    },
  };
  const kv = atomicView(real, (op) => {
    if (state.mode === "throw") throw new TypeError("Value too large");
    const commit = op.commit.bind(op);
    op.commit = () => {
      state.commits++;
      if (state.mode === "fail") {
        return Promise.reject(new Error("Database is unavailable"));
      }
      if (state.mode === "hold") {
        return new Promise<void>((go) => state.held.push(go))
          .then(commit);
      }
      return commit();
    };
    return op;
  });
  return { kv, state };
}

type FaultState = ReturnType<typeof faultyKv>["state"];

/**
 * Runs `fn` with a {@linkcode faultyKv} view of an in-memory KV, and closes
 * the KV afterwards.
 */
async function withFaultyKv(
  fn: (kv: Deno.Kv, state: FaultState, real: Deno.Kv) => Promise<void>,
): Promise<void> {
  const real = await Deno.openKv(":memory:");
  const { kv, state } = faultyKv(real);
  try {
    // The key batches are sealed with, made before commits are counted.
    await sealBatch(kv, "[]");
    state.commits = 0;
    await fn(kv, state, real);
  } finally {
    real.close();
  }
}

/**
 * Runs `fn` with a harness on a {@linkcode faultyKv} view of an in-memory
 * KV; afterwards releases any held commit (the pipeline could not stop
 * while one waits) and closes both.
 */
async function withFaultyHarness(
  fn: (h: Harness, state: FaultState, real: Deno.Kv) => Promise<void>,
  options: HarnessOptions = {},
): Promise<void> {
  await withFaultyKv(async (kv, state, real) => {
    // Without lingering, so that the first request's commit is in flight at once.
    const h = await harness({
      ...options,
      kv,
      pipeline: { lingerMs: 0, ...options.pipeline },
    });
    try {
      await fn(h, state, real);
    } finally {
      state.release();
      await h.close();
    }
  });
}

Deno.test("a failing KV commit answers 503 unavailable, and service resumes when KV recovers", async () => {
  await withFaultyHarness(async (h, state) => {
    const project = await h.project();
    state.mode = "fail";
    const res = await h.post(randomEntry({ projectId: project.id }), {
      Origin: "https://app.example.com",
    });
    assert.equal(res.status, 503);
    assert.equal((await res.json()).error.code, "unavailable");
    assert.ok(Number(res.headers.get("retry-after")) >= 1);
    assert.equal(
      res.headers.get("access-control-allow-origin"),
      "https://app.example.com",
    );
    state.mode = "ok";
    const ok = await h.post(randomEntry({ projectId: project.id }), {
      Origin: "https://app.example.com",
    });
    assert.equal(ok.status, 200);
    await h.process();
    // Only the entry answered 200 is stored.
    assert.equal((await h.logs(project.id)).length, 1);
  });
});

Deno.test("past the backlog bound new requests answer 503 at once", async () => {
  await withFaultyHarness(async (h, state) => {
    state.mode = "hold";
    // One request's commit is in flight and held; five more wait for the next.
    const waiting = Array.from({ length: 6 }, () => h.post(randomEntry()));
    await until(() =>
      state.held.length === 1 && h.pipeline.producer.backlog === 5
    );
    const refused = await h.post(randomEntry());
    assert.equal(refused.status, 503);
    assert.equal((await refused.json()).error.code, "unavailable");
    assert.equal(refused.headers.get("retry-after"), "1");
    const statuses = await state.resume(
      waiting.map(async (p) => (await p).status),
      "the held requests to be answered once KV is released",
    );
    assert.deepEqual(statuses, [200, 200, 200, 200, 200, 200]);
    assert.equal((await h.post(randomEntry())).status, 200);
  }, { config: { maxPendingRequests: 5 } });
});

Deno.test("requests that arrive during a commit share the next one", async () => {
  await withFaultyHarness(async (h, state, real) => {
    state.mode = "hold";
    const first = h.post(randomEntry());
    await until(() => state.held.length === 1);
    // Fewer than would start a second commit beside the first.
    const rest = Array.from(
      { length: PIPELINE_ENTRIES - 1 },
      () => h.post(randomEntry()),
    );
    await until(() => h.pipeline.producer.backlog === PIPELINE_ENTRIES - 1);
    await state.resume(
      [first, ...rest],
      "the requests to be answered once KV is released",
    );
    assert.equal(state.commits, 2);
    const batches = await pendingBatches(real);
    const counts = batches.map((b) => b.header.count).sort((a, b) => a - b);
    assert.deepEqual(counts, [1, PIPELINE_ENTRIES - 1]);
  });
});

Deno.test("a second commit starts beside one in flight once PIPELINE_ENTRIES wait, never a third", async () => {
  await withFaultyKv(async (kv, state) => {
    const producer = new GroupCommitter({ kv, maxPending: 1000, lingerMs: 0 });
    let n = 0;
    const submit = (count: number) =>
      Array.from({ length: count }, () =>
        producer.submit({
          id: `e${++n}`,
          receivedAt: 0,
          level: "info",
          projectId: "p",
          data: { n },
        }));
    try {
      state.mode = "hold";
      // The first commit takes one entry; the next PIPELINE_ENTRIES start a
      // second beside it; twice as many more wait for one of them to end.
      const all = [
        ...submit(1),
        ...submit(PIPELINE_ENTRIES),
        ...submit(2 * PIPELINE_ENTRIES),
      ];
      await state.resume(
        all,
        "the entries to be committed once KV is released",
      );
      assert.equal(state.commits, 3);
      const batches = await pendingBatches(kv);
      const counts = batches.map((b) => b.header.count).sort((a, b) => a - b);
      assert.deepEqual(counts, [1, PIPELINE_ENTRIES, 2 * PIPELINE_ENTRIES]);
    } finally {
      state.release();
      await producer.flush();
    }
  });
});

Deno.test("the backlog is bounded by size as well as by count", async () => {
  await withFaultyKv(async (kv, state) => {
    const producer = new GroupCommitter({
      kv,
      maxPending: 1000,
      maxPendingChars: 10_000,
      lingerMs: 0,
    });
    const entry = (n: number) => ({
      id: `e${n}`,
      receivedAt: 0,
      level: "info",
      projectId: "p",
      data: { blob: "x".repeat(3000) },
    });
    try {
      state.mode = "hold";
      const first = producer.submit(entry(0));
      const waiting = [
        producer.submit(entry(1)),
        producer.submit(entry(2)),
        producer.submit(entry(3)),
      ];
      await assert.rejects(producer.submit(entry(4)), OverloadedError);
      await state.resume(
        [first, ...waiting],
        "the entries to be committed once KV is released",
      );
    } finally {
      state.release();
      await producer.flush();
    }
  });
});

Deno.test("a request is answered 503 even when building the commit throws", async () => {
  await withFaultyHarness(async (h, state) => {
    state.mode = "throw";
    const res = await h.post(randomEntry());
    assert.equal(res.status, 503);
    assert.equal((await res.json()).error.code, "unavailable");
    state.mode = "ok";
    assert.equal((await h.post(randomEntry())).status, 200);
  });
});

Deno.test("the backlog gate refuses past either bound and lets entries in again only at half of both", () => {
  const behind = backlogGate({ chunks: 100, batches: 20 });
  assert.equal(behind(100, 20), false, "at the bounds: still taken");
  assert.equal(behind(101, 0), true, "past the chunks' bound");
  assert.equal(behind(60, 0), true, "above half: still refused");
  assert.equal(behind(50, 0), false, "at half: taken again");
  assert.equal(behind(0, 21), true, "past the batches' bound");
  assert.equal(behind(0, 11), true);
  assert.equal(behind(40, 10), false);
});

/**
 * The producer's wake-up messages: at most one per interval, carried by a
 * commit that succeeded, naming that commit's batches.
 */
import assert from "node:assert/strict";
import { decodeWakeMessage } from "../queue/batch.ts";
import { GroupCommitter } from "../queue/producer.ts";
import { fakeClock, pendingBatches } from "./_helpers.ts";

/** A KV recording what each commit enqueues; commits can be made to fail. */
function spyKv(real: Deno.Kv) {
  const state = { fail: false, commits: [] as unknown[][] };
  const kv = new Proxy(real, {
    get(target, name) {
      if (name === "atomic") {
        return () => {
          const op = target.atomic();
          const enqueued: unknown[] = [];
          const enqueue = op.enqueue.bind(op);
          op.enqueue = (value, options) => {
            enqueued.push(value);
            return enqueue(value, options);
          };
          const commit = op.commit.bind(op);
          op.commit = () => {
            state.commits.push(enqueued);
            if (state.fail) {
              return Promise.reject(new Error("Database is unavailable"));
            }
            return commit();
          };
          return op;
        };
      }
      const value = Reflect.get(target, name);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
  return { kv, state };
}

function entry(n: number) {
  return {
    id: `e${n}`,
    receivedAt: 0,
    level: "info",
    projectId: "p",
    data: { n },
  };
}

Deno.test("commits carry at most one wake-up message per interval, naming their own batches", async () => {
  const real = await Deno.openKv(":memory:");
  const { kv, state } = spyKv(real);
  const clock = fakeClock();
  const producer = new GroupCommitter({
    kv,
    queue: true,
    maxPending: 100,
    now: clock.now,
    wakeIntervalMs: 1000,
  });
  try {
    await producer.submit(entry(1));
    clock.advance(400);
    await producer.submit(entry(2));
    clock.advance(599);
    await producer.submit(entry(3));
    clock.advance(1);
    await producer.submit(entry(4));
    assert.deepEqual(state.commits.map((m) => m.length), [1, 0, 0, 1]);
    const batches = (await pendingBatches(real)).map((b) => b.id);
    assert.equal(batches.length, 4);
    assert.deepEqual(decodeWakeMessage(state.commits[0]![0])?.batches, [
      batches[0],
    ]);
    assert.deepEqual(decodeWakeMessage(state.commits[3]![0])?.batches, [
      batches[3],
    ]);
  } finally {
    await producer.flush();
    real.close();
  }
});

Deno.test("a failed commit's wake-up message does not count: the next commit carries one", async () => {
  const real = await Deno.openKv(":memory:");
  const { kv, state } = spyKv(real);
  const clock = fakeClock();
  const producer = new GroupCommitter({
    kv,
    queue: true,
    maxPending: 100,
    now: clock.now,
  });
  try {
    state.fail = true;
    await assert.rejects(producer.submit(entry(1)));
    state.fail = false;
    await producer.submit(entry(2));
    await producer.submit(entry(3));
    assert.deepEqual(state.commits.map((m) => m.length), [1, 1, 0]);
  } finally {
    await producer.flush();
    real.close();
  }
});

Deno.test("with queues off no commit carries a wake-up message", async () => {
  const real = await Deno.openKv(":memory:");
  const { kv, state } = spyKv(real);
  const producer = new GroupCommitter({ kv, queue: false, maxPending: 100 });
  try {
    await producer.submit(entry(1));
    assert.deepEqual(state.commits.map((m) => m.length), [0]);
  } finally {
    await producer.flush();
    real.close();
  }
});

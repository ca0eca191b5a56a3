/**
 * What rides the producer's commits (the rate counters): it goes with the
 * next commit of entries, and once the producer is started it is committed
 * on the producer's own tick when no entry comes, with nobody outside
 * poking the producer (docs/design.md#across-instances). The tick is armed
 * only while the rider has something waiting: at rest nothing wakes.
 *
 * @module
 */
import assert from "node:assert/strict";
import type { QueuedEntry } from "../../domain/entry.ts";
import {
  type CommitRider,
  GroupCommitter,
  type ProducerOptions,
  RIDER_INTERVAL_MS,
} from "../../queue/producer.ts";
import { pendingBatches } from "../_helpers/harness.ts";
import { type ManualTimers, manualTimers } from "../_helpers/timers.ts";

const COUNTER: Deno.KvKey = ["rider_test", "count"];
const ENTRY: QueuedEntry = {
  id: "0000000000000000000001",
  receivedAt: Date.UTC(2026, 0, 1),
  level: "info",
  projectId: "p1",
  data: {},
};

/**
 * A rider that sums what it was given into one counter; `add(n)` counts
 * `n` more and wakes its watchers when nothing waited.
 */
function countingRider() {
  const state = { waiting: 0, rides: 0 };
  const watchers: (() => void)[] = [];
  const rider: CommitRider = {
    pending: () => state.waiting > 0,
    ride(op) {
      const n = state.waiting;
      state.waiting = 0;
      state.rides++;
      op.sum(COUNTER, BigInt(n));
      return (ok) => {
        if (!ok) state.waiting += n;
      };
    },
    watch: (wake) => void watchers.push(wake),
  };
  const add = (n: number) => {
    const idle = state.waiting === 0;
    state.waiting += n;
    if (idle) { for (const wake of watchers) wake(); }
  };
  return { rider, state, add };
}

async function counted(kv: Deno.Kv): Promise<number> {
  return Number((await kv.get<Deno.KvU64>(COUNTER)).value?.value ?? 0n);
}

/**
 * Runs `body` with a started producer over an in-memory KV, carrying a
 * {@linkcode countingRider} on {@linkcode manualTimers}, with `options`
 * besides (a gate) and `waiting` counts before it starts.
 */
async function withStartedProducer(
  options: { gate?: ProducerOptions["gate"]; waiting?: number },
  body: (setup: {
    kv: Deno.Kv;
    producer: GroupCommitter;
    state: ReturnType<typeof countingRider>["state"];
    add: (n: number) => void;
    timer: ManualTimers;
  }) => Promise<void>,
): Promise<void> {
  const kv = await Deno.openKv(":memory:");
  try {
    const { rider, state, add } = countingRider();
    if (options.waiting) add(options.waiting);
    const timer = manualTimers();
    const producer = new GroupCommitter({
      kv,
      maxPending: 10,
      rider,
      lingerMs: 0,
      after: timer.after,
      ...(options.gate ? { gate: options.gate } : {}),
    });
    producer.start();
    await body({ kv, producer, state, add, timer });
  } finally {
    kv.close();
  }
}

Deno.test("a started producer commits a rider's mutations alone 250 ms after they come, and arms no tick while none wait", async () => {
  await withStartedProducer({}, async ({ kv, producer, state, add, timer }) => {
    assert.deepEqual(timer.armed, [], "at rest nothing is armed");
    add(3);
    assert.deepEqual(timer.armed, [RIDER_INTERVAL_MS]);
    assert.equal(RIDER_INTERVAL_MS, 250);
    add(1); // the tick due serves these too
    assert.deepEqual(timer.armed, [RIDER_INTERVAL_MS]);
    timer.fire();
    // The tick started a commit that carries the counts, and nothing waits
    // any more: no tick is armed again.
    assert.equal(state.rides, 1);
    assert.equal(state.waiting, 0);
    assert.deepEqual(timer.armed, []);
    await producer.flush();
    assert.equal(await counted(kv), 4);
    add(2); // counts again after the rest: a tick again
    assert.deepEqual(timer.armed, [RIDER_INTERVAL_MS]);
    await producer.stop();
    assert.equal(timer.cancelled, 1, "stop cancels the tick due");
    assert.equal(await counted(kv), 6);
    assert.deepEqual(await pendingBatches(kv), []);
  });
});

Deno.test("a tick that leaves mutations waiting (the gate closed) arms the next one, 250 ms later", async () => {
  let open = false;
  const gate = { open: () => open, failed: () => {} };
  await withStartedProducer(
    { gate },
    async ({ kv, producer, state, add, timer }) => {
      add(5);
      timer.fire();
      assert.equal(
        state.rides,
        0,
        "nothing is written while the gate is closed",
      );
      assert.deepEqual(timer.armed, [RIDER_INTERVAL_MS]);
      open = true;
      timer.fire();
      assert.equal(state.rides, 1);
      assert.deepEqual(timer.armed, []);
      await producer.stop();
      assert.equal(await counted(kv), 5);
    },
  );
});

Deno.test("a rider's mutations go with the next commit of entries, and stop commits what is left", async () => {
  await withStartedProducer({}, async ({ kv, producer, state }) => {
    state.waiting = 2;
    await producer.submit(ENTRY);
    assert.equal(await counted(kv), 2);
    assert.equal((await pendingBatches(kv)).length, 1);
    state.waiting = 5; // counted after the last commit, before any tick
    await producer.stop();
    assert.equal(await counted(kv), 7);
  });
});

Deno.test("a producer started with counts already waiting arms its tick at once", async () => {
  await withStartedProducer({ waiting: 2 }, async ({ kv, producer, timer }) => {
    assert.deepEqual(timer.armed, [RIDER_INTERVAL_MS]);
    await producer.stop();
    assert.equal(await counted(kv), 2);
  });
});

Deno.test("a tick whose counts a commit of entries took does not ask the write gate, whose look reads the disk; a tick with counts does", async () => {
  let asked = 0;
  const gate = { open: () => (asked++, true), failed: () => {} };
  await withStartedProducer({ gate }, async ({ kv, producer, add, timer }) => {
    add(2);
    await producer.submit(ENTRY);
    assert.equal(await counted(kv), 2, "the commit of the entry took them");
    asked = 0;
    timer.fire();
    assert.equal(asked, 0);
    add(3);
    timer.fire();
    assert.equal(asked, 1);
    await producer.stop();
    assert.equal(await counted(kv), 5);
  });
});

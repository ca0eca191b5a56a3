/**
 * What rides the producer's commits (the rate counters): it goes with the
 * next commit of entries, and once the producer is started it is committed
 * on the producer's own tick when no entry comes, with nobody outside
 * poking the producer (docs/design.md#across-instances).
 *
 * @module
 */
import assert from "node:assert/strict";
import {
  type CommitRider,
  GroupCommitter,
  RIDER_INTERVAL_MS,
} from "../../queue/producer.ts";
import { pendingBatches } from "../_helpers/harness.ts";

const COUNTER: Deno.KvKey = ["rider_test", "count"];

/** A rider that sums what it was given into one counter. */
function countingRider() {
  const state = { waiting: 0, rides: 0 };
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
  };
  return { rider, state };
}

/** A timer driven by hand: `tick()` runs what the producer scheduled. */
function manualTimer() {
  const timer = {
    periods: [] as number[],
    ticks: [] as (() => void)[],
    stopped: 0,
    every(ms: number, tick: () => void) {
      timer.periods.push(ms);
      timer.ticks.push(tick);
      return () => void timer.stopped++;
    },
    tick() {
      for (const tick of timer.ticks) tick();
    },
  };
  return timer;
}

async function counted(kv: Deno.Kv): Promise<number> {
  return Number((await kv.get<Deno.KvU64>(COUNTER)).value?.value ?? 0n);
}

/**
 * Runs `body` with a started producer over an in-memory KV, carrying a
 * {@linkcode countingRider} on a {@linkcode manualTimer}.
 */
async function withStartedProducer(
  body: (setup: {
    kv: Deno.Kv;
    producer: GroupCommitter;
    state: ReturnType<typeof countingRider>["state"];
    timer: ReturnType<typeof manualTimer>;
  }) => Promise<void>,
): Promise<void> {
  const kv = await Deno.openKv(":memory:");
  try {
    const { rider, state } = countingRider();
    const timer = manualTimer();
    const producer = new GroupCommitter({
      kv,
      maxPending: 10,
      rider,
      every: timer.every,
    });
    producer.start();
    await body({ kv, producer, state, timer });
  } finally {
    kv.close();
  }
}

Deno.test("a started producer commits a rider's mutations alone on its own tick, every 250 ms", async () => {
  await withStartedProducer(async ({ kv, producer, state, timer }) => {
    assert.deepEqual(timer.periods, [RIDER_INTERVAL_MS]);
    assert.equal(RIDER_INTERVAL_MS, 250);
    state.waiting = 3;
    timer.tick();
    // The tick started a commit that carries the counts.
    assert.equal(state.rides, 1);
    assert.equal(state.waiting, 0);
    timer.tick(); // nothing waits: no commit
    assert.equal(state.rides, 1);
    await producer.stop();
    assert.equal(timer.stopped, 1);
    assert.equal(await counted(kv), 3);
    assert.deepEqual(await pendingBatches(kv), []);
  });
});

Deno.test("a rider's mutations go with the next commit of entries, and stop commits what is left", async () => {
  await withStartedProducer(async ({ kv, producer, state }) => {
    state.waiting = 2;
    await producer.submit({
      id: "0000000000000000000001",
      receivedAt: Date.UTC(2026, 0, 1),
      level: "info",
      projectId: "p1",
      data: {},
    });
    assert.equal(await counted(kv), 2);
    assert.equal((await pendingBatches(kv)).length, 1);
    state.waiting = 5; // counted after the last commit, before any tick
    await producer.stop();
    assert.equal(await counted(kv), 7);
  });
});

Deno.test("a producer with no rider starts no timer", () => {
  const timer = manualTimer();
  const producer = new GroupCommitter({
    kv: {} as Deno.Kv,
    maxPending: 10,
    every: timer.every,
  });
  producer.start();
  assert.deepEqual(timer.periods, []);
});

Deno.test("a tick with nothing to commit does not ask the write gate, whose look reads the disk; a tick with counts does", async () => {
  const kv = await Deno.openKv(":memory:");
  try {
    const { rider, state } = countingRider();
    const timer = manualTimer();
    let asked = 0;
    const producer = new GroupCommitter({
      kv,
      maxPending: 10,
      rider,
      every: timer.every,
      gate: { open: () => (asked++, true), failed: () => {} },
    });
    producer.start();
    timer.tick();
    timer.tick();
    assert.equal(asked, 0);
    state.waiting = 2;
    timer.tick();
    assert.equal(asked, 1);
    await producer.stop();
    assert.equal(await counted(kv), 2);
  } finally {
    kv.close();
  }
});

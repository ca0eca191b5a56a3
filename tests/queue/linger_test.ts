/**
 * The producer's linger (docs/design.md#group-commit): a commit of few
 * entries waits a few milliseconds for others, so that at moderate rates
 * one commit carries several requests; many waiting, or a flush, commit at
 * once.
 *
 * @module
 */
import assert from "node:assert/strict";
import type { QueuedEntry } from "../../domain/entry.ts";
import {
  GroupCommitter,
  LINGER_ENTRIES,
  LINGER_MS,
} from "../../queue/producer.ts";
import { batchEntries } from "../_helpers/batches.ts";
import { pendingBatches } from "../_helpers/harness.ts";

/** A one-shot timer driven by hand, on a clock driven by hand. */
function manualAfter() {
  const state = {
    now: Date.UTC(2026, 0, 1),
    waits: [] as number[],
    fire: undefined as (() => void) | undefined,
  };
  return {
    state,
    now: () => state.now,
    after(ms: number, fire: () => void) {
      state.waits.push(ms);
      state.fire = fire;
      return () => {
        state.fire = undefined;
      };
    },
  };
}

let counter = 0;
function entry(receivedAt: number): QueuedEntry {
  counter++;
  return {
    id: `000000000000000000${String(counter).padStart(4, "0")}`,
    receivedAt,
    level: "info",
    projectId: "p1",
    data: { n: counter },
  };
}

async function withProducer(
  body: (setup: {
    kv: Deno.Kv;
    producer: GroupCommitter;
    timer: ReturnType<typeof manualAfter>;
  }) => Promise<void>,
): Promise<void> {
  const kv = await Deno.openKv(":memory:");
  try {
    const timer = manualAfter();
    const producer = new GroupCommitter({
      kv,
      maxPending: 1000,
      now: timer.now,
      after: timer.after,
    });
    await body({ kv, producer, timer });
  } finally {
    kv.close();
  }
}

Deno.test("entries that come within the linger share one commit, made once the first has waited LINGER_MS", async () => {
  await withProducer(async ({ kv, producer, timer }) => {
    const first = producer.submit(entry(timer.state.now));
    timer.state.now += 3;
    const second = producer.submit(entry(timer.state.now));
    const third = producer.submit(entry(timer.state.now));
    // One wait, for the first; nothing is committed before it runs out.
    assert.deepEqual(timer.state.waits, [LINGER_MS]);
    assert.deepEqual(await pendingBatches(kv), []);
    timer.state.now += LINGER_MS - 3;
    timer.state.fire!();
    await Promise.all([first, second, third]);
    const batches = await pendingBatches(kv);
    assert.equal(batches.length, 1);
    assert.equal(batches[0]!.header.count, 3);
  });
});

Deno.test("LINGER_ENTRIES waiting are committed at once, without lingering", async () => {
  await withProducer(async ({ kv, producer, timer }) => {
    const submitted = Array.from(
      { length: LINGER_ENTRIES },
      () => producer.submit(entry(timer.state.now)),
    );
    await Promise.all(submitted);
    const batches = await pendingBatches(kv);
    assert.equal(
      batches.reduce((n, b) => n + b.header.count, 0),
      LINGER_ENTRIES,
    );
  });
});

Deno.test("after a commit of LINGER_ENTRIES or more, the next commit does not linger (a burst)", async () => {
  await withProducer(async ({ kv, producer, timer }) => {
    await Promise.all(
      Array.from(
        { length: LINGER_ENTRIES },
        () => producer.submit(entry(timer.state.now)),
      ),
    );
    timer.state.waits.length = 0; // the wait of the first of them
    await producer.submit(entry(timer.state.now));
    assert.deepEqual(timer.state.waits, []);
    assert.equal((await pendingBatches(kv)).length, 2);
  });
});

Deno.test("a flush commits what lingers at once", async () => {
  await withProducer(async ({ kv, producer, timer }) => {
    const submitted = producer.submit(entry(timer.state.now));
    await producer.flush();
    await submitted;
    assert.equal((await pendingBatches(kv)).length, 1);
    assert.equal(timer.state.fire, undefined); // its wait was cancelled
  });
});

Deno.test("batches sort in the order their entries were taken, even when a later one is sealed first", async () => {
  const kv = await Deno.openKv(":memory:");
  const encrypt = crypto.subtle.encrypt;
  // A batch of one entry is sealed last, after the larger one taken after it.
  crypto.subtle.encrypt = async function (algorithm, key, data) {
    const bytes = data as Uint8Array;
    if (bytes.byteLength < 200) await new Promise((r) => setTimeout(r, 30));
    return await encrypt.call(crypto.subtle, algorithm, key, data);
  };
  try {
    const producer = new GroupCommitter({ kv, maxPending: 1000, lingerMs: 0 });
    const at = Date.UTC(2026, 0, 1);
    const sent = Array.from({ length: 51 }, () => entry(at));
    await Promise.all(sent.map((e) => producer.submit(e)));
    const batches = await pendingBatches(kv);
    assert.equal(batches[0]!.header.count, 1);
    const stored: QueuedEntry[] = [];
    for (const b of batches) {
      stored.push(...await batchEntries(kv, b.id, b.header));
    }
    assert.deepEqual(stored.map((e) => e.id), sent.map((e) => e.id));
  } finally {
    crypto.subtle.encrypt = encrypt;
    kv.close();
  }
});

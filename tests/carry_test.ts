/**
 * Results riding the producer's commits (docs/design.md#one-commit-for-two):
 * a result carried while a commit is in flight is written by the next group
 * commit together with the entries queued meanwhile; a result whose check
 * fails costs neither those entries nor the other results of that commit;
 * one too large to share a commit is committed alone; nothing is carried
 * while the write gate is closed, and a result caught waiting when it closes
 * leaves its batch pending without counting a failed attempt.
 *
 * @module
 */
import assert from "node:assert/strict";
import { RecordedAtomic } from "../db/atomic.ts";
import { createProject } from "../db/projects.ts";
import type { SpaceGuard } from "../db/space.ts";
import type { QueuedEntry } from "../domain/entry.ts";
import { createId } from "../domain/ids.ts";
import type { HandedBatch } from "../queue/batch.ts";
import { createPipeline } from "../queue/pipeline.ts";
import { GroupCommitter, WritesHeldError } from "../queue/producer.ts";
import {
  EVENT_TIMEOUT_MS,
  pendingBatches,
  stats,
  testConfig,
  untilIdle,
  withTimeout,
} from "./_helpers.ts";
import { holdCommits } from "./_hold.ts";

/** Waits for `promises`, failing the test when they do not settle. */
function settled<T>(promises: Promise<T>[]): Promise<T[]> {
  return withTimeout(Promise.all(promises), EVENT_TIMEOUT_MS, "the commits");
}

function entry(n: number): QueuedEntry {
  return {
    id: `0000000000${String(n).padStart(12, "0")}`,
    receivedAt: Date.UTC(2026, 0, 1),
    level: "info",
    projectId: "p1",
    data: { n },
  };
}

/** A result that sets `["result", name]` to `value`, guarded by `guard`. */
function result(
  name: string,
  value: Uint8Array,
  guard?: Deno.AtomicCheck,
): RecordedAtomic {
  const recorded = new RecordedAtomic();
  if (guard) recorded.check(guard);
  return recorded.set(["result", name], value);
}

async function withProducer(
  fn: (
    kv: Deno.Kv,
    producer: GroupCommitter,
    handed: HandedBatch[],
  ) => Promise<void>,
  gate?: { open(): boolean; failed(error: unknown): void },
): Promise<void> {
  const kv = await Deno.openKv(":memory:");
  const handed: HandedBatch[] = [];
  const producer = new GroupCommitter({
    kv,
    maxPending: 100,
    onCommitted: (batches) => handed.push(...batches),
    ...(gate ? { gate } : {}),
  });
  try {
    await fn(kv, producer, handed);
    await producer.flush();
  } finally {
    kv.close();
  }
}

Deno.test("a result carried while a commit is in flight rides the next commit with the entries queued meanwhile", async () => {
  await withProducer(async (kv, producer, handed) => {
    const first = producer.submit(entry(1)); // its commit is now in flight
    const outcome = producer.carry(result("a", new Uint8Array([1])));
    const second = producer.submit(entry(2));
    await settled([first, second]);
    const carried = await outcome;
    assert.ok(carried.ok);
    assert.equal(handed.length, 2);
    assert.notEqual(handed[0]!.versionstamp, carried.versionstamp);
    // One commit wrote the second entry's batch and the result.
    assert.equal(handed[1]!.versionstamp, carried.versionstamp);
    const stored = await kv.get(["result", "a"]);
    assert.deepEqual(stored.value, new Uint8Array([1]));
    assert.equal(stored.versionstamp, carried.versionstamp);
  });
});

Deno.test("a carried result whose check fails costs neither the entries nor the other results of its commit", async () => {
  await withProducer(async (kv, producer, handed) => {
    const guard = await kv.set(["guard"], new Uint8Array([0]));
    const first = producer.submit(entry(1));
    const stale = producer.carry(
      result("stale", new Uint8Array([1]), {
        key: ["guard"],
        versionstamp: "00000000000000000000",
      }),
    );
    const fresh = producer.carry(
      result("fresh", new Uint8Array([2]), {
        key: ["guard"],
        versionstamp: guard.versionstamp,
      }),
    );
    const second = producer.submit(entry(2));
    await settled([first, second]);
    assert.deepEqual(await stale, { ok: false });
    assert.ok((await fresh).ok);
    assert.equal((await kv.get(["result", "stale"])).versionstamp, null);
    assert.deepEqual(
      (await kv.get(["result", "fresh"])).value,
      new Uint8Array([2]),
    );
    assert.deepEqual(
      handed.map((b) => b.entries.map((e) => e.data.n)),
      [[1], [2]],
    );
  });
});

Deno.test("a result too large to share a commit is committed alone", async () => {
  await withProducer(async (kv, producer, handed) => {
    const first = producer.submit(entry(1));
    const large = new RecordedAtomic();
    for (let i = 0; i < 8; i++) {
      large.set(["result", "large", i], new Uint8Array(60_000));
    }
    const outcome = producer.carry(large);
    const second = producer.submit(entry(2));
    await settled([first, second]);
    const carried = await outcome;
    assert.ok(carried.ok);
    assert.ok(handed.every((b) => b.versionstamp !== carried.versionstamp));
    assert.equal(
      (await kv.get(["result", "large", 7])).versionstamp,
      carried.versionstamp,
    );
  });
});

Deno.test("nothing is carried while the write gate is closed", async () => {
  let open = false;
  await withProducer(async (kv, producer) => {
    await assert.rejects(
      producer.carry(result("held", new Uint8Array([1]))),
      WritesHeldError,
    );
    assert.equal((await kv.get(["result", "held"])).versionstamp, null);
    open = true;
    assert.ok((await producer.carry(result("held", new Uint8Array([1])))).ok);
  }, { open: () => open, failed: () => {} });
});

Deno.test("a recorded operation counts what it holds and applies it in order", async () => {
  const kv = await Deno.openKv(":memory:");
  try {
    const recorded = new RecordedAtomic()
      .check({ key: ["a"], versionstamp: null })
      .set(["a"], new Uint8Array(100), { expireIn: 60_000 })
      .sum(["n"], 2n)
      .delete(["gone"]);
    assert.equal(recorded.checks, 1);
    assert.equal(recorded.mutations, 3);
    assert.ok(recorded.bytes >= 100 + 8);
    assert.ok((await recorded.commit(kv)).ok);
    // Its check now fails: the key exists.
    assert.deepEqual(await recorded.commit(kv), { ok: false });
    assert.equal((await kv.get<Deno.KvU64>(["n"])).value?.value, 2n);
  } finally {
    kv.close();
  }
});

Deno.test("a result waiting for a commit when the disk fills leaves its batch pending, no attempt counted, and is stored once space returns", async () => {
  const kv = await Deno.openKv(":memory:");
  const held = holdCommits(kv);
  let open = true;
  const space = {
    open: () => open,
    failed: () => {},
    start: () => {},
    stop: () => Promise.resolve(),
  } as unknown as SpaceGuard;
  const errors: unknown[] = [];
  const pipeline = createPipeline({
    kv: held.kv,
    config: testConfig(),
    space,
    mergeIntervalMs: 0,
    onError: (_id, error) => errors.push(error),
  });
  try {
    const project = await createProject(kv, {
      name: "p",
      allow: ["https://app.example.com"],
    });
    const entry = (n: number): QueuedEntry => ({
      id: createId(Date.now()),
      level: "info",
      data: { n },
      device: {},
      context: {},
      origin: "https://app.example.com",
      receivedAt: Date.now(),
      projectId: project.id,
    });
    const { producer } = pipeline;
    const carried = Promise.withResolvers<void>();
    const carry = producer.carry.bind(producer);
    producer.carry = (result) => {
      const outcome = carry(result);
      carried.resolve();
      return outcome;
    };
    await settled([producer.submit(entry(1))]);
    // The first batch's consumer is judging; the next commit is held.
    const second = held.hold();
    const queued = producer.submit(entry(2));
    await withTimeout(second.reached, EVENT_TIMEOUT_MS, "the second commit");
    await withTimeout(carried.promise, EVENT_TIMEOUT_MS, "the result");
    open = false; // the disk fills while the result waits
    second.release();
    await settled([queued]);
    await untilIdle(pipeline.worker);
    assert.deepEqual(errors, []);
    const pending = await pendingBatches(kv);
    assert.equal(pending.length, 2);
    assert.ok(pending.every((p) => p.header.attempts === 0));
    open = true;
    await pipeline.worker.sweep({ all: true });
    await untilIdle(pipeline.worker);
    assert.deepEqual(await pendingBatches(kv), []);
    assert.deepEqual(await stats(kv, project.id), {
      accepted: 2,
      rejected: {},
    });
  } finally {
    await pipeline.stop();
    kv.close();
  }
});

Deno.test("two results that check a key the other writes never share a commit: one of them fails its check", async () => {
  await withProducer(async (kv, producer) => {
    // The same claim twice (a signature seen in two batches at once), and
    // the same batch's result twice: each checks what the other writes.
    const claim = (value: number) =>
      new RecordedAtomic()
        .check({ key: ["claim"], versionstamp: null })
        .set(["claim"], new Uint8Array([value]));
    const first = producer.submit(entry(1));
    const outcomes = [producer.carry(claim(1)), producer.carry(claim(2))];
    const second = producer.submit(entry(2));
    await settled([first, second]);
    const ok = (await settled(outcomes)).filter((o) => o.ok);
    assert.equal(ok.length, 1);
    const stored = await kv.get<Uint8Array>(["claim"]);
    assert.equal(
      stored.versionstamp,
      (ok[0] as Deno.KvCommitResult).versionstamp,
    );
  });
});

Deno.test("results checking the same key without writing it share a commit", async () => {
  await withProducer(async (kv, producer, handed) => {
    const project = await kv.set(["project"], new Uint8Array([1]));
    const result = (name: string) =>
      new RecordedAtomic()
        .check({ key: ["project"], versionstamp: project.versionstamp })
        .set(["result", name], new Uint8Array([1]));
    const first = producer.submit(entry(1));
    const outcomes = [producer.carry(result("a")), producer.carry(result("b"))];
    const second = producer.submit(entry(2));
    await settled([first, second]);
    const [a, b] = (await settled(outcomes)) as Deno.KvCommitResult[];
    assert.ok(a!.ok && b!.ok);
    assert.equal(a!.versionstamp, b!.versionstamp);
    assert.equal(a!.versionstamp, handed[1]!.versionstamp);
  });
});

Deno.test("a result with no entries waiting waits for the next ones to ride with, and flush sends it alone", async () => {
  await withProducer(async (kv, producer, handed) => {
    // Nothing waits: the result lingers instead of committing alone.
    const rides = producer.carry(result("rides", new Uint8Array([1])));
    const queued = producer.submit(entry(1));
    await settled([queued]);
    const carried = await settled([rides]);
    assert.equal(
      (carried[0] as Deno.KvCommitResult).versionstamp,
      handed[0]!.versionstamp,
    );
    // With nothing to come, flush does not wait out the linger.
    const alone = producer.carry(result("alone", new Uint8Array([2])));
    await producer.flush();
    assert.deepEqual(
      (await kv.get(["result", "alone"])).value,
      new Uint8Array([2]),
    );
    assert.ok((await settled([alone]))[0]!.ok);
  });
});

/**
 * The queue's guarantees (docs/design.md#queue): every batch is processed
 * exactly once in effect, whatever the delivery (redelivery, two processes
 * racing, the same id pushed twice); batches nobody handed over are found by
 * the sweeper; a batch that keeps failing is retried with backoff and then
 * kept as a dead letter.
 *
 * @module
 */
import assert from "node:assert/strict";
import { ProjectCache } from "../../auth/projects.ts";
import {
  batchSliceKey,
  deadLetterKey,
  pendingBatchKey,
} from "../../db/keys.ts";
import type { QueuedEntry } from "../../domain/entry.ts";
import {
  decodeBatchHeader,
  encodeBatchHeader,
  type HandedBatch,
} from "../../queue/batch.ts";
import { decodeJson } from "../../db/kv.ts";
import { GroupCommitter } from "../../queue/producer.ts";
import { Consumer, type ProcessOutcome } from "../../queue/consumer.ts";
import { MAX_ATTEMPTS } from "../../queue/dead_letters.ts";
import { batchEntries } from "../_helpers/batches.ts";
import { BatchWorker } from "../../queue/worker.ts";
import {
  assertCounts,
  type Harness,
  ORIGIN,
  otherConsumer,
  pendingBatches,
  pendingBatchIds,
  postEntries,
  postQueued,
  projectTest,
  randomEntry,
  recentRejections,
  signEntry,
  stats,
  untilIdle,
  withHarness,
} from "../_helpers/harness.ts";

/**
 * Queues a mix for `projectId`: two entries from the allowed origin, one
 * signed, one from a bad origin, one with no credentials. Each is its own
 * batch. Returns what the counters should show once processed.
 */
async function postMix(h: Harness, projectId: string, secret: string) {
  await postEntries(h, projectId, { origin: ORIGIN, count: 2 });
  await postEntries(h, projectId, { secret });
  await postEntries(h, projectId, { origin: "https://evil.example.net" });
  await postEntries(h, projectId);
  return {
    accepted: 3,
    rejected: { bad_origin: 1, no_credentials: 1 },
  };
}

/** Asserts that the mix of {@linkcode postMix} was stored and counted once. */
async function assertMixOnce(
  h: Harness,
  projectId: string,
  expected: Awaited<ReturnType<typeof postMix>>,
): Promise<void> {
  assert.equal((await h.logs(projectId)).length, 3);
  assert.deepEqual(await stats(h.kv, projectId), expected);
}

/** Asserts that `outcomes` hold one `"processed"`, the others lost the race. */
function assertProcessedOnce(outcomes: ProcessOutcome[]): void {
  assert.equal(outcomes.filter((o) => o === "processed").length, 1);
  assert.ok(
    outcomes.every((o) => ["processed", "conflict", "absent"].includes(o)),
  );
}

projectTest(
  "a batch processed twice stores and counts its entries once",
  async (h, project) => {
    const expected = await postMix(h, project.id, project.secret);
    await h.process();
    assert.equal(h.batches.length, 5);
    // Redelivery: every batch is handed to the consumer again.
    for (const id of h.batches) {
      assert.equal(await h.pipeline.consumer.process(id), "absent");
    }
    await h.process();
    await assertMixOnce(h, project.id, expected);
    assert.equal((await recentRejections(h.kv, project.id)).length, 2);
  },
);

Deno.test("consumers racing on the same batch store and count its entries once", async (t) => {
  await t.step(
    "three processes, on a batch of one entry and one of many",
    async () => {
      await withHarness(async (h) => {
        const project = await h.project();
        // The first request is committed alone; the others, fewer than
        // would start a second commit beside it (PIPELINE_ENTRIES), share
        // the next batch.
        await Promise.all(
          Array.from({ length: 32 }, (_, i) => {
            const body = randomEntry({ projectId: project.id });
            if (i % 8 === 3) return postQueued(h, body);
            if (i % 8 === 7) {
              return postQueued(h, body, {
                Origin: "https://evil.example.net",
              });
            }
            if (i % 4 === 2) {
              return postQueued(
                h,
                body,
                signEntry(project.secret, body, h.clock.now()),
              );
            }
            return postQueued(h, body, { Origin: ORIGIN });
          }),
        );
        const batches = await pendingBatches(h.kv);
        assert.deepEqual(batches.map((b) => b.header.count), [1, 31]);
        const consumers = [
          otherConsumer(h),
          otherConsumer(h),
          otherConsumer(h),
        ];
        for (const { id } of batches) {
          assertProcessedOnce(
            await Promise.all(consumers.map((c) => c.process(id))),
          );
        }
        assert.equal((await h.logs(project.id)).length, 24);
        await assertCounts(h, project.id, 24, {
          no_credentials: 4,
          bad_origin: 4,
        });
        assert.equal((await recentRejections(h.kv, project.id)).length, 8);
        assert.deepEqual(await pendingBatches(h.kv), []);
        // Without lingering: the first request is committed alone.
      }, { pipeline: { lingerMs: 0 } });
    },
  );
  await t.step("one process, handed the same batch twice at once", async () => {
    await withHarness(async (h) => {
      const project = await h.project();
      const expected = await postMix(h, project.id, project.secret);
      const consumer = h.pipeline.consumer;
      for (const { id } of await pendingBatches(h.kv)) {
        assertProcessedOnce(
          await Promise.all([consumer.process(id), consumer.process(id)]),
        );
      }
      assert.equal((await h.logs(project.id)).length, 3);
      // A redelivered signed entry is not a replay of itself.
      assert.deepEqual(await stats(h.kv, project.id), expected);
    });
  });
});

projectTest(
  "ids pushed twice at once, and again while running, process each batch once",
  async (h, project) => {
    const expected = await postMix(h, project.id, project.secret);
    const ids = (await pendingBatches(h.kv)).map((b) => b.id);
    const worker = h.pipeline.worker;
    worker.push([...ids, ...ids]);
    worker.push(ids);
    await untilIdle(worker);
    assert.deepEqual(await pendingBatches(h.kv), []);
    await assertMixOnce(h, project.id, expected);
  },
);

projectTest(
  "with the queue listener off, the sweeper processes batches nobody handed over",
  async (h, project) => {
    const expected = await postMix(h, project.id, project.secret);
    const worker = h.pipeline.worker;
    assert.equal(await worker.sweep({ all: true }), 5);
    await untilIdle(worker);
    assert.deepEqual(await pendingBatches(h.kv), []);
    await assertMixOnce(h, project.id, expected);
    // A repeated sweep finds nothing and changes nothing.
    assert.equal(await worker.sweep({ all: true }), 0);
    await untilIdle(worker);
    assert.deepEqual(await stats(h.kv, project.id), expected);
  },
);

projectTest(
  "the sweeper leaves a young batch to the process that committed it and takes it after the grace period",
  async (h, project) => {
    await postEntries(h, project.id, { origin: ORIGIN });
    const worker = h.pipeline.worker;
    assert.equal(await worker.sweep(), 0);
    h.clock.advance(1000);
    assert.equal(await worker.sweep(), 0);
    await untilIdle(worker);
    assert.equal((await h.logs(project.id)).length, 0);
    h.clock.advance(500);
    assert.equal(await worker.sweep(), 1);
    await untilIdle(worker);
    assert.equal((await h.logs(project.id)).length, 1);
    assert.deepEqual(await pendingBatches(h.kv), []);
  },
);

Deno.test("batches left pending by a process that stopped are processed by the start-up sweep of the next one", async () => {
  const kv = await Deno.openKv(":memory:");
  try {
    let projectId = "";
    let expected = {};
    await withHarness(async (h) => {
      const project = await h.project();
      projectId = project.id;
      expected = await postMix(h, project.id, project.secret);
    }, { kv });
    assert.equal((await pendingBatches(kv)).length, 5);
    await withHarness(async (h) => {
      h.pipeline.start();
      // The start-up sweep is in flight; this joins it.
      await h.pipeline.worker.sweep({ all: true });
      await untilIdle(h.pipeline.worker);
      assert.deepEqual(await pendingBatches(kv), []);
      assert.equal((await h.logs(projectId)).length, 3);
      assert.deepEqual(await stats(kv, projectId), expected);
    }, { kv });
  } finally {
    kv.close();
  }
});

Deno.test("a pipeline that hands over its batches processes them without queue or sweeper", async () => {
  await withHarness(async (h) => {
    const project = await h.project();
    const expected = await postMix(h, project.id, project.secret);
    await untilIdle(h.pipeline.worker);
    assert.deepEqual(await pendingBatches(h.kv), []);
    await assertMixOnce(h, project.id, expected);
    // The sweeper then finds nothing left.
    assert.equal(await h.pipeline.worker.sweep({ all: true }), 0);
  }, { pipeline: { handOver: true } });
});

/** A consumer whose processing always fails, as when storage keeps refusing. */
class FailingConsumer extends Consumer {
  override process(_batchId: string): Promise<ProcessOutcome> {
    return Promise.reject(new Error("Cannot reach storage"));
  }
}

/**
 * Sweeps until every pending batch has left the pending batches, checking the
 * backoff after each failed attempt: a sweep before `retryAt` skips the
 * batches, one at `retryAt` takes them. Returns the delays between attempts.
 */
async function failUntilDeadLetters(
  h: Harness,
  worker: BatchWorker,
): Promise<number[]> {
  const count = (await pendingBatchIds(h.kv)).length;
  assert.ok(count > 0);
  const delays: number[] = [];
  for (let attempt = 1; attempt <= MAX_ATTEMPTS; attempt++) {
    assert.equal(
      await worker.sweep({ all: true }),
      count,
      `attempt ${attempt}`,
    );
    await untilIdle(worker);
    const pending = await pendingBatches(h.kv);
    if (attempt === MAX_ATTEMPTS) {
      assert.deepEqual(pending, []);
      break;
    }
    assert.equal(pending.length, count, `still pending after ${attempt}`);
    const retryAt = pending[0]!.header.retryAt!;
    for (const { header } of pending) {
      assert.equal(header.attempts, attempt);
      assert.equal(header.retryAt, retryAt);
    }
    assert.ok(retryAt > h.clock.now());
    delays.push(retryAt - h.clock.now());
    h.clock.set(retryAt - 1);
    assert.equal(await worker.sweep({ all: true }), 0, "swept before retryAt");
    h.clock.advance(1);
  }
  return delays;
}

/** Asserts that the worker reported each attempt on batch `id` as failed. */
function assertFailedAttempts(h: Harness, id: string): void {
  assert.deepEqual(
    h.errors.map((e) => e.batchId),
    Array(MAX_ATTEMPTS).fill(id),
  );
  for (const { error } of h.errors) {
    assert.match((error as Error).message, /Cannot read batch/);
  }
}

projectTest(
  "a batch that keeps failing is retried with backoff and becomes a dead letter after MAX_ATTEMPTS, entries intact",
  async (h, project) => {
    const bodies = [
      randomEntry({ projectId: project.id }),
      randomEntry({ projectId: project.id }),
    ];
    for (const body of bodies) await postQueued(h, body, { Origin: ORIGIN });
    const batches = await pendingBatches(h.kv);
    const errors: string[] = [];
    const worker = new BatchWorker({
      kv: h.kv,
      now: h.clock.now,
      consumer: new FailingConsumer({
        kv: h.kv,
        now: h.clock.now,
        maxSkewMs: h.config.signatureMaxSkewMs,
        projects: new ProjectCache(h.kv, { ttlMs: 0, now: h.clock.now }),
      }),
      onError: (_id, e) => errors.push((e as Error).message),
    });
    const delays = await failUntilDeadLetters(h, worker);
    assert.equal(delays.length, MAX_ATTEMPTS - 1);
    assert.ok(delays[0]! > 0);
    delays.reduce((a, b) => (assert.ok(b > a, "backoff grows"), b));
    for (const { id, header } of batches) {
      const dead = decodeBatchHeader((await h.kv.get(deadLetterKey(id))).value);
      assert.equal(dead.attempts, MAX_ATTEMPTS);
      assert.equal(dead.error, "Cannot reach storage");
      assert.equal(dead.retryAt, undefined);
      assert.equal(dead.count, header.count);
      assert.equal(dead.slices, header.slices);
    }
    assert.equal(errors.length, batches.length * MAX_ATTEMPTS);
    assert.deepEqual(await pendingBatches(h.kv), []);
    await assertCounts(h, project.id, 0, {});
    // Never lost: put back as pending, the dead letters are processed.
    for (const { id } of batches) {
      const dead = await h.kv.get(deadLetterKey(id));
      const header = decodeBatchHeader(dead.value);
      // The batch's entries stay in its slices, as when pending.
      const entries = await batchEntries(h.kv, id, header);
      assert.equal(entries[0]!.projectId, project.id);
      await h.kv.atomic().check(dead).delete(deadLetterKey(id))
        .set(
          pendingBatchKey(id),
          encodeBatchHeader({ ...header, attempts: 0 }),
        ).commit();
    }
    await h.process();
    assert.deepEqual(
      (await h.logs(project.id)).map((l) => l.data),
      bodies.map((b) => b.data),
    );
  },
);

Deno.test("a batch whose entries cannot be read is retried with backoff and then kept as a dead letter", async () => {
  await withHarness(async (h) => {
    const project = await h.project();
    await postEntries(h, project.id, { origin: ORIGIN });
    const [batch] = await pendingBatches(h.kv);
    const { id, header } = batch!;
    const garbage = new TextEncoder().encode("[{not json");
    assert.equal(header.slices, 1);
    await h.kv.set(batchSliceKey(id, 0), garbage);
    const delays = await failUntilDeadLetters(h, h.pipeline.worker);
    assert.equal(delays.length, MAX_ATTEMPTS - 1);
    const dead = decodeBatchHeader((await h.kv.get(deadLetterKey(id))).value);
    assert.equal(dead.attempts, MAX_ATTEMPTS);
    assert.match(dead.error!, /Cannot read batch/);
    assert.deepEqual((await h.kv.get(batchSliceKey(id, 0))).value, garbage);
    assert.deepEqual(await pendingBatches(h.kv), []);
    assert.deepEqual(await h.logs(project.id), []);
    assertFailedAttempts(h, id);
  }, { expectErrors: true });
});

Deno.test("a pending batch overwritten with a value that is not a header still ends as a dead letter, value kept", async (t) => {
  for (
    const [name, value] of [
      ["a string", "garbage"],
      ["an object of another shape", { version: 9, payload: "?" }],
      ["a number", 42],
      ["null", null],
    ] as const
  ) {
    await t.step(name, async () => {
      await withHarness(async (h) => {
        const project = await h.project();
        await postEntries(h, project.id, { origin: ORIGIN });
        const [batch] = await pendingBatches(h.kv);
        const id = batch!.id;
        await h.kv.set(pendingBatchKey(id), value);
        await failUntilDeadLetters(h, h.pipeline.worker);
        const dead = decodeBatchHeader(
          (await h.kv.get(deadLetterKey(id))).value,
        );
        assert.equal(dead.attempts, MAX_ATTEMPTS);
        assert.match(String(dead.error), /Cannot read batch/);
        assert.deepEqual(decodeJson(dead.unreadable!), value);
        assert.deepEqual(await pendingBatches(h.kv), []);
        assertFailedAttempts(h, id);
      }, { expectErrors: true });
    });
  }
});

projectTest(
  "a batch handed over in memory that another process committed first is stored once",
  async (h, project) => {
    const handed: HandedBatch[] = [];
    const producer = new GroupCommitter({
      kv: h.kv,
      maxPending: 100,
      now: h.clock.now,
      onCommitted: (batches) => handed.push(...batches),
    });
    const entry = (n: number): QueuedEntry => ({
      id: `0000000000${n}`,
      receivedAt: h.clock.now(),
      level: "info",
      projectId: project.id,
      data: { n },
      origin: ORIGIN,
    });
    await Promise.all([producer.submit(entry(1)), producer.submit(entry(2))]);
    assert.ok(handed.length > 0);
    for (const batch of handed) {
      // Another process reads it from KV and commits first.
      assert.equal(await otherConsumer(h).process(batch.id), "processed");
      assert.equal(
        await h.pipeline.consumer.process(batch.id, batch),
        "conflict",
      );
    }
    assert.equal((await h.logs(project.id)).length, 2);
    await assertCounts(h, project.id, 2, {});
  },
);

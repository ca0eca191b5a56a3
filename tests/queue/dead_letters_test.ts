/**
 * queue/dead_letters.ts: listing the batches that kept failing, moving them
 * back to the pending batches, atomically and once, and deleting them with
 * every slice, never after a replay took them back; the sweeper deletes the
 * slices a delete cut short left.
 *
 * @module
 */
import assert from "node:assert/strict";
import {
  batchProgressKey,
  batchSliceKey,
  deadLetterKey,
  pendingBatchKey,
  quotaGrantKey,
} from "../../db/keys.ts";
import { encodeJson } from "../../db/kv.ts";
import { KvLockedError } from "../../db/locked.ts";
import { decodeBatchHeader, encodeBatchHeader } from "../../queue/batch.ts";
import {
  DeadLetterConflictError,
  DeadLetterNotFoundError,
  deleteAllDeadLetters,
  deleteDeadLetter,
  getDeadLetter,
  listDeadLetters,
  MAX_ATTEMPTS,
  recordFailure,
  replayAllDeadLetters,
  replayDeadLetter,
} from "../../queue/dead_letters.ts";
import {
  deadLetter,
  type Harness,
  harnessTest,
  ORIGIN,
  pendingBatchIds,
  projectTest,
  randomEntry,
} from "../_helpers/harness.ts";
import { holdCommits, within } from "../_helpers/hold.ts";
import { keysNaming } from "../_helpers/batches.ts";
import { kvWith } from "../_helpers/kv_with.ts";
import { BatchWorker, LOOSE_SWEEP_MS } from "../../queue/worker.ts";

projectTest(
  "listDeadLetters describes each batch that kept failing, oldest first",
  async (h, project) => {
    const first = await deadLetter(h, randomEntry({ projectId: project.id }));
    h.clock.advance(60_000);
    const second = await deadLetter(h, randomEntry({ projectId: project.id }));
    const letters = await listDeadLetters(h.kv);
    assert.deepEqual(letters, [
      {
        id: first,
        createdAt: Date.UTC(2026, 0, 1),
        count: 1,
        attempts: MAX_ATTEMPTS,
        error: "disk full",
        slices: 1,
      },
      {
        id: second,
        createdAt: Date.UTC(2026, 0, 1, 0, 1),
        count: 1,
        attempts: MAX_ATTEMPTS,
        error: "disk full",
        slices: 1,
      },
    ]);
    assert.deepEqual(await getDeadLetter(h.kv, second), letters[1]);
    assert.equal(await getDeadLetter(h.kv, "nope"), null);
  },
);

projectTest(
  "replayDeadLetter moves the batch back to pending with its attempts reset, and it is then stored",
  async (h, project) => {
    const batchId = await deadLetter(h, randomEntry({ projectId: project.id }));
    assert.equal((await h.kv.get(pendingBatchKey(batchId))).value, null);

    const replayed = await replayDeadLetter(h.kv, batchId);
    assert.equal(replayed.id, batchId);
    assert.equal(replayed.attempts, MAX_ATTEMPTS);
    assert.equal((await h.kv.get(deadLetterKey(batchId))).value, null);
    const header = decodeBatchHeader(
      (await h.kv.get(pendingBatchKey(batchId))).value,
    );
    assert.equal(header.attempts, 0);
    assert.equal("retryAt" in header, false);
    assert.equal("error" in header, false);
    assert.equal(header.count, 1);

    await h.process();
    assert.equal((await h.logs(project.id)).length, 1);
    assert.deepEqual(await listDeadLetters(h.kv), []);
  },
);

projectTest(
  "replayDeadLetter keeps the slices of a batch too large for one value",
  async (h, project) => {
    const body = randomEntry({
      projectId: project.id,
      data: { blob: "x".repeat(62_000) },
    });
    const batchId = await deadLetter(h, body);
    const [letter] = await listDeadLetters(h.kv);
    assert.equal(letter!.slices, 2);
    assert.notEqual((await h.kv.get(batchSliceKey(batchId, 1))).value, null);

    await replayDeadLetter(h.kv, batchId);
    assert.notEqual((await h.kv.get(batchSliceKey(batchId, 1))).value, null);
    await h.process();
    const [log] = await h.logs(project.id);
    assert.equal((log!.data as { blob: string }).blob.length, 62_000);
  },
);

projectTest(
  "replayDeadLetter replays a batch once when called twice",
  async (h, project) => {
    const batchId = await deadLetter(h, randomEntry({ projectId: project.id }));
    const results = await Promise.allSettled([
      replayDeadLetter(h.kv, batchId),
      replayDeadLetter(h.kv, batchId),
    ]);
    assert.deepEqual(results.map((r) => r.status).sort(), [
      "fulfilled",
      "rejected",
    ]);
    const failure = results.find((r) => r.status === "rejected");
    assert.deepEqual(
      failure?.reason,
      new DeadLetterNotFoundError(batchId),
    );
    await h.process();
    assert.equal((await h.logs(project.id)).length, 1);
  },
);

harnessTest("replayDeadLetter refuses an unknown id", async (h) => {
  await assert.rejects(
    replayDeadLetter(h.kv, "nope"),
    new DeadLetterNotFoundError("nope"),
  );
});

projectTest(
  "replayDeadLetter never overwrites a pending batch of the same id",
  async (h, project) => {
    const batchId = await deadLetter(h, randomEntry({ projectId: project.id }));
    const dead = decodeBatchHeader(
      (await h.kv.get(deadLetterKey(batchId))).value,
    );
    await h.kv.set(
      pendingBatchKey(batchId),
      encodeBatchHeader({ ...dead, attempts: 2 }),
    );
    await assert.rejects(
      replayDeadLetter(h.kv, batchId),
      new DeadLetterConflictError(batchId),
    );
    const after = await h.kv.get(pendingBatchKey(batchId));
    assert.equal(decodeBatchHeader(after.value).attempts, 2);
    assert.notEqual((await h.kv.get(deadLetterKey(batchId))).value, null);
  },
);

projectTest(
  "replayAllDeadLetters replays every dead letter",
  async (h, project) => {
    await deadLetter(h, randomEntry({ projectId: project.id }));
    await deadLetter(h, randomEntry({ projectId: project.id }));
    const replayed = await replayAllDeadLetters(h.kv);
    assert.equal(replayed.length, 2);
    assert.deepEqual(await listDeadLetters(h.kv), []);
    await h.process();
    assert.equal((await h.logs(project.id)).length, 2);
  },
);

/** Posts one entry and returns the id of the pending batch it made. */
async function pendingBatch(
  h: Harness,
  body: Record<string, unknown>,
): Promise<string> {
  const before = new Set(await pendingBatchIds(h.kv));
  await h.post(body, { Origin: ORIGIN });
  await h.pipeline.producer.flush();
  const made = (await pendingBatchIds(h.kv)).filter((id) => !before.has(id));
  assert.equal(made.length, 1);
  return made[0]!;
}

projectTest(
  "deleteDeadLetter deletes the header and every slice: no key names the batch afterwards",
  async (h, project) => {
    const kept = await deadLetter(h, randomEntry({ projectId: project.id }));
    const batchId = await deadLetter(
      h,
      randomEntry({
        projectId: project.id,
        data: { blob: "x".repeat(62_000) },
      }),
    );
    // What a batch spanning projects, under a quota, leaves while it fails.
    await h.kv.set(batchProgressKey(batchId), encodeJson([project.id]));
    await h.kv.set(quotaGrantKey(batchId, project.id), encodeJson({ n: 1 }));
    assert.deepEqual((await keysNaming(h.kv, batchId)).sort(), [
      `batch_progress/${batchId}`,
      `batch_slices/${batchId}/0`,
      `batch_slices/${batchId}/1`,
      `dead_letters/${batchId}`,
      `quota_grants/${batchId}/${project.id}`,
    ]);

    const deleted = await deleteDeadLetter(h.kv, batchId);
    assert.equal(deleted.id, batchId);
    assert.equal(deleted.count, 1);
    assert.equal(deleted.slices, 2);
    assert.deepEqual(await keysNaming(h.kv, batchId), []);
    // The other dead letter is untouched, and replays as before.
    assert.deepEqual((await listDeadLetters(h.kv)).map((l) => l.id), [kept]);
    assert.notEqual((await h.kv.get(batchSliceKey(kept, 0))).value, null);
    await replayDeadLetter(h.kv, kept);
    await h.process();
    assert.equal((await h.logs(project.id)).length, 1);
    await assert.rejects(
      deleteDeadLetter(h.kv, batchId),
      new DeadLetterNotFoundError(batchId),
    );
  },
);

/**
 * Gives dead letter `batchId` `slices` slices (more than a batch the
 * producer writes has).
 */
async function widen(h: Harness, batchId: string, slices: number) {
  const entry = await h.kv.get(deadLetterKey(batchId));
  await h.kv.set(
    deadLetterKey(batchId),
    encodeBatchHeader({ ...decodeBatchHeader(entry.value), slices }),
  );
  for (let n = 1; n < slices; n += 500) {
    const op = h.kv.atomic();
    for (let i = n; i < Math.min(n + 500, slices); i++) {
      op.set(batchSliceKey(batchId, i), new Uint8Array([i % 256]));
    }
    assert.equal((await op.commit()).ok, true);
  }
}

projectTest(
  "deleteDeadLetter deletes more slices than one atomic operation holds",
  async (h, project) => {
    const batchId = await deadLetter(h, randomEntry({ projectId: project.id }));
    const slices = 2_500;
    await widen(h, batchId, slices);
    assert.equal((await keysNaming(h.kv, batchId)).length, slices + 1);

    assert.equal((await deleteDeadLetter(h.kv, batchId)).slices, slices);
    assert.deepEqual(await keysNaming(h.kv, batchId), []);
  },
);

projectTest(
  "slices a delete cut short after its header's commit left are deleted by the sweeper, a bounded part a minute",
  async (h, project) => {
    // Listed first, and more than a sweep lists.
    const kept = await deadLetter(h, randomEntry({ projectId: project.id }));
    await widen(h, kept, 1_200);
    const batchId = await deadLetter(h, randomEntry({ projectId: project.id }));
    // More slices than the header's commit deletes: the rest go after it.
    await widen(h, batchId, 2_500);
    // Listings fail once the header is gone: a crash right after its commit.
    const cut = kvWith(h.kv, {
      list: ((selector: Deno.KvListSelector, options?: Deno.KvListOptions) =>
        (async function* () {
          if ((await h.kv.get(deadLetterKey(batchId))).value === null) {
            throw new Error("interrupted");
          }
          yield* h.kv.list(selector, options);
        })()) as unknown as Deno.Kv["list"],
    });
    await assert.rejects(deleteDeadLetter(cut, batchId), /interrupted/);
    assert.ok((await keysNaming(h.kv, batchId)).length > 1000);
    const pending = await pendingBatch(
      h,
      randomEntry({ projectId: project.id }),
    );

    // A sweeper that takes no pending batch, so that they stay pending.
    const sweeper = new BatchWorker({
      kv: h.kv,
      consumer: h.pipeline.consumer,
      now: h.clock.now,
      sweepGraceMs: 86_400_000,
    });
    const sweep = async () => {
      await sweeper.sweep();
      h.clock.advance(LOOSE_SWEEP_MS);
      // A batch a header names keeps its slices.
      assert.equal((await keysNaming(h.kv, kept)).length, 1_201);
      assert.equal((await keysNaming(h.kv, pending)).length, 2);
    };
    // The first sweep lists only the kept dead letter's slices.
    await sweep();
    assert.ok((await keysNaming(h.kv, batchId)).length > 1000);
    await sweep();
    assert.deepEqual(await keysNaming(h.kv, batchId), []);
    // The third lists the pending batch's.
    await sweep();
    await h.process();
    assert.equal((await h.logs(project.id)).length, 1);
  },
);

projectTest(
  "deleteDeadLetter after a concurrent replay deletes nothing, and the batch is still stored",
  async (h, project) => {
    const batchId = await deadLetter(
      h,
      randomEntry({
        projectId: project.id,
        data: { blob: "x".repeat(62_000) },
      }),
    );
    const held = holdCommits(h.kv);
    const gate = held.hold();
    // The delete has read the header; the replay commits before it does.
    const deleting = deleteDeadLetter(held.kv, batchId);
    await within(gate.reached);
    await replayDeadLetter(h.kv, batchId);
    gate.release();
    await assert.rejects(deleting, new DeadLetterNotFoundError(batchId));

    assert.notEqual((await h.kv.get(pendingBatchKey(batchId))).value, null);
    assert.notEqual((await h.kv.get(batchSliceKey(batchId, 0))).value, null);
    assert.notEqual((await h.kv.get(batchSliceKey(batchId, 1))).value, null);
    await h.process();
    const [log] = await h.logs(project.id);
    assert.equal((log!.data as { blob: string }).blob.length, 62_000);
  },
);

projectTest(
  "deleteDeadLetter refuses an unknown id, a non-id and a pending batch, deleting nothing",
  async (h, project) => {
    const batchId = await pendingBatch(
      h,
      randomEntry({ projectId: project.id }),
    );
    for (const id of [batchId, "nope", "f".repeat(3000), "0".repeat(28)]) {
      await assert.rejects(
        deleteDeadLetter(h.kv, id),
        new DeadLetterNotFoundError(id),
      );
    }
    assert.deepEqual((await keysNaming(h.kv, batchId)).sort(), [
      `batch_slices/${batchId}/0`,
      `pending_batches/${batchId}`,
    ]);
    await h.process();
    assert.equal((await h.logs(project.id)).length, 1);
  },
);

projectTest(
  "deleteAllDeadLetters deletes every dead letter and leaves pending batches",
  async (h, project) => {
    const first = await deadLetter(h, randomEntry({ projectId: project.id }));
    const second = await deadLetter(h, randomEntry({ projectId: project.id }));
    const pending = await pendingBatch(
      h,
      randomEntry({ projectId: project.id }),
    );

    const deleted = await deleteAllDeadLetters(h.kv);
    assert.deepEqual(deleted.map((l) => l.id), [first, second]);
    assert.deepEqual(await listDeadLetters(h.kv), []);
    assert.deepEqual(await keysNaming(h.kv, first), []);
    assert.deepEqual(await keysNaming(h.kv, second), []);
    assert.deepEqual(await deleteAllDeadLetters(h.kv), []);
    assert.deepEqual(await pendingBatchIds(h.kv), [pending]);
    await h.process();
    assert.equal((await h.logs(project.id)).length, 1);
  },
);

projectTest(
  "a locked database or a full disk never moves a batch toward the dead letters; any other failure does",
  async (h, project) => {
    await h.post(randomEntry({ projectId: project.id }), { Origin: ORIGIN });
    await h.pipeline.producer.flush();
    const [batchId] = await pendingBatchIds(h.kv);
    const header = async () =>
      decodeBatchHeader((await h.kv.get(pendingBatchKey(batchId!))).value);
    const passing = [
      new KvLockedError(40, 10_000),
      new TypeError("database or disk is full"),
    ];
    for (let i = 0; i < 2 * MAX_ATTEMPTS; i++) {
      const error = passing[i % 2]!;
      assert.equal(
        await recordFailure(h.kv, batchId!, error, h.clock.now()),
        "retry",
      );
    }
    const waiting = await header();
    assert.equal(waiting.attempts, 0);
    assert.equal(waiting.retryAt, h.clock.now() + 1000);
    assert.match(waiting.error ?? "", /disk is full/);
    await recordFailure(h.kv, batchId!, new Error("bad batch"), h.clock.now());
    assert.equal((await header()).attempts, 1);
    assert.deepEqual(await listDeadLetters(h.kv), []);
  },
);

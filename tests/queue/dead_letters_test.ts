/**
 * queue/dead_letters.ts: listing the batches that kept failing and moving
 * them back to the pending batches, atomically and once.
 *
 * @module
 */
import assert from "node:assert/strict";
import {
  batchSliceKey,
  deadLetterKey,
  pendingBatchKey,
} from "../../db/keys.ts";
import { decodeBatchHeader, encodeBatchHeader } from "../../queue/batch.ts";
import {
  DeadLetterConflictError,
  DeadLetterNotFoundError,
  getDeadLetter,
  listDeadLetters,
  MAX_ATTEMPTS,
  replayAllDeadLetters,
  replayDeadLetter,
} from "../../queue/dead_letters.ts";
import {
  deadLetter,
  harnessTest,
  projectTest,
  randomEntry,
} from "../_helpers/harness.ts";

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

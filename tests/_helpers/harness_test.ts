/**
 * The test fixtures fail loudly: an awaited event that never comes fails the
 * test after a timeout, and an error the pipeline reports while a test runs
 * fails that test unless it expects errors; the wall clock cannot be moved.
 *
 * @module
 */
import assert from "node:assert/strict";
import { pendingBatchKey } from "../../db/keys.ts";
import {
  type Harness,
  pendingBatches,
  postQueued,
  randomEntry,
  untilIdle,
  wallClock,
  withHarness,
  withTimeout,
} from "./harness.ts";

Deno.test("withTimeout rejects, naming what was awaited, when the event never comes", async () => {
  const never = new Promise<void>(() => {});
  await assert.rejects(
    withTimeout(never, 10, "a queue delivery"),
    /^Error: Timed out after 10 ms waiting for a queue delivery$/,
  );
  assert.equal(
    await withTimeout(Promise.resolve(7), 10, "a number"),
    7,
  );
});

Deno.test("the wall clock refuses to move, so a test that moves it fails", () => {
  assert.throws(() => wallClock.advance(1000), /real clock/);
  assert.throws(() => wallClock.set(0), /real clock/);
  assert.ok(Math.abs(wallClock.now() - Date.now()) < 1000);
});

/** Makes the worker fail on one batch: its pending value is not a header. */
async function failOneBatch(h: Harness): Promise<string> {
  await postQueued(h, randomEntry());
  const [batch] = await pendingBatches(h.kv);
  await h.kv.set(pendingBatchKey(batch!.id), "garbage");
  h.pipeline.worker.push([batch!.id]);
  await untilIdle(h.pipeline.worker);
  return batch!.id;
}

Deno.test("a worker error fails the test that caused it", async (t) => {
  await t.step("when the test does not expect errors", async () => {
    let id = "";
    await assert.rejects(
      withHarness(async (h) => {
        id = await failOneBatch(h);
      }),
      (error: Error) => {
        assert.match(
          error.message,
          new RegExp(
            `^Expected no worker errors, got 1: batch "${id}": Cannot read batch`,
          ),
        );
        return true;
      },
    );
  });
  await t.step(
    "unless it expects them, and then it can read them",
    async () => {
      await withHarness(async (h) => {
        const id = await failOneBatch(h);
        assert.deepEqual(h.errors.map((e) => e.batchId), [id]);
      }, { expectErrors: true });
    },
  );
  await t.step("the test's own failure is the one reported", async () => {
    await assert.rejects(
      withHarness(async (h) => {
        await failOneBatch(h);
        throw new Error("The test's own assertion");
      }),
      /^Error: The test's own assertion$/,
    );
  });
});

/**
 * Tests of what the load benchmark reads from the service's KV file
 * (bench/store.ts), on a file written by the real route, producer and
 * consumer: the drain wait and the final counts. Also proves that the
 * benchmark's entry and origin are accepted by a project created as the
 * benchmark creates it.
 */
import assert from "node:assert/strict";
import { benchEntry } from "../../bench/ingest.ts";
import { BENCH_ORIGIN, countStore, waitForDrain } from "../../bench/store.ts";
import { createProject } from "../../db/projects.ts";
import { postQueued, withHarness } from "../_helpers/harness.ts";

const ENTRIES = 3;

Deno.test("waitForDrain and countStore see pending batches, then every stored entry", async () => {
  const dir = await Deno.makeTempDir({ prefix: "bench-store-test-" });
  const kvPath = `${dir}/kv.sqlite`;
  const kv = await Deno.openKv(kvPath);
  try {
    await withHarness(async (h) => {
      const project = await createProject(kv, {
        name: "bench",
        allow: [BENCH_ORIGIN],
        now: h.clock.now,
      });
      for (let i = 0; i < ENTRIES; i++) {
        await postQueued(h, benchEntry(project.id), {
          Origin: BENCH_ORIGIN,
        });
      }

      const drain = (timeoutMs: number) =>
        waitForDrain({
          kvPath,
          projectId: project.id,
          loadEnded: performance.now(),
          timeoutMs,
        });
      const before = await drain(0);
      assert.equal(before.drained, false);
      assert.ok(before.pendingAtFirstPoll >= 1, "a batch is pending");
      assert.equal(before.accepted, 0);
      const pending = await countStore(kvPath, project.id);
      assert.equal(pending.stored, 0);
      assert.equal(pending.pendingBatches, before.pendingAtFirstPoll);

      await h.process();
      const after = await drain(10_000);
      assert.equal(after.drained, true);
      assert.equal(after.pendingAtFirstPoll, 0);
      assert.equal(after.accepted, ENTRIES);
      assert.deepEqual(await countStore(kvPath, project.id), {
        stored: ENTRIES,
        accepted: ENTRIES,
        pendingBatches: 0,
        deadLetters: 0,
      });
    }, { kv });
  } finally {
    kv.close();
    await Deno.remove(dir, { recursive: true });
  }
});

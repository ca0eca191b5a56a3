/**
 * Batches processed as a group (queue/consumer.ts `processGroup`,
 * queue/worker.ts): one result commit for several pending batches, one
 * chunk per project, and exactly once when a batch of the group was taken
 * by another processor.
 *
 * @module
 */
import assert from "node:assert/strict";
import { logSummariesPrefix } from "../../db/keys.ts";
import { handedBatches } from "../_helpers/batches.ts";
import { groupFits, MAX_GROUP_BATCHES } from "../../queue/consumer.ts";
import { BatchWorker } from "../../queue/worker.ts";
import {
  type Harness,
  ORIGIN,
  otherConsumer,
  pendingBatchIds,
  postEntries,
  postQueued,
  projectTest,
  randomEntry,
  signEntry,
  stats,
  untilIdle,
} from "../_helpers/harness.ts";

async function chunkCount(h: Harness, projectId: string): Promise<number> {
  let n = 0;
  for await (const _ of h.kv.list({ prefix: logSummariesPrefix(projectId) })) {
    n++;
  }
  return n;
}

projectTest(
  "batches processed as a group are stored in one chunk by one commit, each counted once",
  async (h, project) => {
    await postEntries(h, project.id, { origin: ORIGIN, count: 3 });
    await postEntries(h, project.id, { secret: project.secret });
    await postEntries(h, project.id, { origin: "https://evil.example.net" });
    const batches = await handedBatches(h);
    assert.equal(batches.length, 5);
    assert.ok(groupFits(batches));
    assert.equal(
      await h.pipeline.consumer.processGroup(batches),
      "processed",
    );
    assert.deepEqual(await pendingBatchIds(h.kv), []);
    assert.equal((await h.logs(project.id)).length, 4);
    assert.equal(await chunkCount(h, project.id), 1);
    assert.deepEqual(await stats(h.kv, project.id), {
      accepted: 4,
      rejected: { bad_origin: 1 },
    });
    // Delivered again, each batch is found done.
    for (const b of batches) {
      assert.equal(await h.pipeline.consumer.process(b.id), "absent");
    }
    assert.equal(
      await h.pipeline.consumer.processGroup(batches),
      "conflict",
    );
    assert.equal((await h.logs(project.id)).length, 4);
  },
);

projectTest(
  "a group one of whose batches another processor took commits nothing, and the worker then stores each batch once",
  async (h, project) => {
    await postEntries(h, project.id, { origin: ORIGIN, count: 4 });
    const batches = await handedBatches(h);
    assert.equal(
      await otherConsumer(h).process(batches[1]!.id, batches[1]),
      "processed",
    );
    assert.equal(await h.pipeline.consumer.processGroup(batches), "conflict");
    assert.equal((await h.logs(project.id)).length, 1);
    // The worker falls back to each batch alone.
    const worker = new BatchWorker({
      kv: h.kv,
      now: h.clock.now,
      consumer: h.pipeline.consumer,
      gatherMs: 60_000,
    });
    worker.hand(batches);
    await worker.stop(); // what waits to be gathered goes at once
    await untilIdle(worker);
    assert.deepEqual(await pendingBatchIds(h.kv), []);
    assert.equal((await h.logs(project.id)).length, 4);
    assert.deepEqual(await stats(h.kv, project.id), {
      accepted: 4,
      rejected: {},
    });
  },
);

projectTest(
  "a group is bounded by its batches, entries and KV's checks of one commit",
  async (h, project) => {
    const body = randomEntry({ projectId: project.id });
    await postQueued(h, body, signEntry(project.secret, body, h.clock.now()));
    const [one] = await handedBatches(h);
    const many = Array.from(
      { length: MAX_GROUP_BATCHES + 1 },
      (_, i) => ({ ...one!, id: `${one!.id}${i}` }),
    );
    assert.ok(groupFits(many.slice(0, MAX_GROUP_BATCHES)));
    assert.ok(!groupFits(many));
    // Each batch of another project adds a check: 5 batches of 5 projects
    // need 10 checks, 6 of 6 need 12.
    const of = (n: number) =>
      Array.from({ length: n }, (_, i) => ({
        ...one!,
        entries: [{ ...one!.entries[0]!, projectId: `p${i}` }],
      }));
    assert.ok(groupFits(of(5)));
    assert.ok(!groupFits(of(6)));
    const big = {
      ...one!,
      entries: Array(201).fill(one!.entries[0]!),
      texts: Array(201).fill(one!.texts[0]!),
    };
    assert.ok(!groupFits([big]));
  },
);

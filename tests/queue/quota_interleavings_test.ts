/**
 * A quota held exactly whatever the order in which processors reach a
 * batch (docs/privacy.md#quotas): a processor late to a batch another one
 * committed makes no grant, and a group whose result commit fails stores
 * its batches one by one under the grants made for the group, so the day
 * counts each stored entry once.
 *
 * @module
 */
import assert from "node:assert/strict";
import { decodeJson } from "../../db/kv.ts";
import { quotaStateKey } from "../../db/keys.ts";
import { type QuotaState, setQuota } from "../../db/quota.ts";
import { handedBatches, keysNaming } from "../_helpers/batches.ts";
import {
  type Harness,
  ORIGIN,
  otherConsumer,
  pendingBatchIds,
  postEntries,
  projectTest,
  stats,
} from "../_helpers/harness.ts";
import { holdCommits, within } from "../_helpers/hold.ts";

/** Entries the project's state counts stored today. */
async function dayStored(h: Harness, projectId: string): Promise<number> {
  const state = await h.kv.get(quotaStateKey(projectId));
  return decodeJson<QuotaState>(state.value)?.dayStored ?? 0;
}

projectTest(
  "a processor late to a batch that another one committed meanwhile makes no grant: the day counts the one entry stored, and nothing names the batch",
  async (h, project) => {
    await setQuota(h.kv, project.id, { perDay: 10 });
    await postEntries(h, project.id, { origin: ORIGIN });
    await h.pipeline.producer.flush();
    const [id] = await pendingBatchIds(h.kv);
    const held = holdCommits(h.kv);
    const late = otherConsumer(h, held.kv);
    const gate = held.hold();
    const work = late.process(id!);
    // The late processor read the batch and the quota, and is about to make
    // its grant; the other one processes the batch whole meanwhile.
    await within(gate.reached);
    assert.equal(await h.pipeline.consumer.process(id!), "processed");
    gate.release();
    assert.equal(await within(work), "conflict");

    assert.equal((await h.logs(project.id)).length, 1);
    assert.deepEqual(await stats(h.kv, project.id), {
      accepted: 1,
      rejected: {},
    });
    assert.equal(await dayStored(h, project.id), 1);
    assert.deepEqual(await keysNaming(h.kv, id!), []);
  },
);

projectTest(
  "a group whose result commit fails, one batch taken by another processor, stores its batches one by one under its grants: a quota of 4 stores all 4 entries, each counted once",
  async (h, project) => {
    await setQuota(h.kv, project.id, { perDay: 4 });
    await postEntries(h, project.id, { origin: ORIGIN, count: 4 });
    const batches = await handedBatches(h);
    assert.equal(batches.length, 4);
    const held = holdCommits(h.kv);
    const grouped = otherConsumer(h, held.kv);
    const quotaCommit = held.hold();
    const work = grouped.processGroup(batches);
    await within(quotaCommit.reached);
    const resultCommit = held.hold();
    quotaCommit.release();
    // The group's quota is decided; before its result commit, another
    // processor takes one of its batches alone.
    await within(resultCommit.reached);
    assert.equal(
      await h.pipeline.consumer.process(batches[1]!.id),
      "processed",
    );
    resultCommit.release();
    assert.equal(await within(work), "conflict");
    // Each batch alone, as the worker goes on after a group's conflict.
    for (const batch of batches) await grouped.process(batch.id, batch);

    assert.equal((await h.logs(project.id)).length, 4);
    assert.deepEqual(await stats(h.kv, project.id), {
      accepted: 4,
      rejected: {},
    });
    assert.equal(await dayStored(h, project.id), 4);
    for (const batch of batches) {
      assert.deepEqual(await keysNaming(h.kv, batch.id), []);
    }
  },
);

/**
 * The rings of recent rejections keep every rejection while batches of one
 * project are processed at the same moment: each commit places its entries
 * by a running total read before it, so one process commits one at a time
 * per ring.
 *
 * @module
 */
import assert from "node:assert/strict";
import { listRejected, listUnknownProjectRejected } from "../../db/rejected.ts";
import { readStats } from "../../db/stats.ts";
import {
  harnessTest,
  pendingBatches,
  postEntries,
} from "../_helpers/harness.ts";

harnessTest(
  "rejections of one project in batches processed at once are all kept",
  async (h) => {
    const project = await h.project(["https://app.example.com"]);
    await postEntries(h, project.id, {
      origin: "https://evil.example.com",
      count: 4,
    });
    await postEntries(h, "no-such-project", { count: 2 });
    const batches = await pendingBatches(h.kv);
    assert.equal(batches.length, 6, "one batch per request");
    await Promise.all(
      batches.map(({ id }) => h.pipeline.consumer.process(id)),
    );
    const stats = await readStats(h.kv, project.id);
    assert.deepEqual(stats.rejected, { bad_origin: 4 });
    assert.equal(stats.recent.length, 4);
    assert.equal((await listRejected(h.kv, project.id)).length, 4);
    assert.equal((await listUnknownProjectRejected(h.kv)).length, 2);
  },
);

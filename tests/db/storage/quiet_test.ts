/**
 * A merger's quiet projects (db/storage/merge.ts, `QuietProjects`): a
 * project whose round found nothing to do is skipped, without listing its
 * summaries, until entries are written to it, its next run settles or
 * `QUIET_ROUND_MS` has passed.
 *
 * @module
 */
import assert from "node:assert/strict";
import { acceptedCountKey } from "../../../db/keys.ts";
import {
  mergeProject,
  QUIET_ROUND_MS,
  type QuietProjects,
} from "../../../db/storage/merge.ts";
import { DEFAULT_SETTLE_MS } from "../../../db/storage/tiers.ts";
import {
  kvTest,
  queryProject,
  recordAt,
  storeBatch,
  T0,
} from "../../_helpers/query.ts";

kvTest(
  "a project whose round found nothing to do is skipped until entries are counted, its run settles or a minute passes",
  async (kv) => {
    const projectId = await queryProject(kv);
    const quiet: QuietProjects = new Map();
    const round = (now: number) => mergeProject(kv, projectId, { now, quiet });
    // Chunks written without the accepted counter, which every write of
    // accepted entries sums: a round cannot tell them from nothing.
    const store = (ms: number) => storeBatch(kv, projectId, [recordAt(ms)], ms);
    await store(T0);
    await store(T0 + 1000);
    const first = await round(T0 + 2000);
    assert.equal(first.merges, 0);
    assert.equal(first.backlog.chunks, 2);
    await store(T0 + 3000);
    // Skipped: the round answers what it saw last.
    assert.equal((await round(T0 + 4000)).backlog.chunks, 2);
    // Entries counted: listed again.
    await kv.atomic().sum(acceptedCountKey(projectId), 1n).commit();
    assert.equal((await round(T0 + 5000)).backlog.chunks, 3);
    // Quiet again until the run settles, 30 s after its newest chunk
    // as that round saw it; then listed, and merged once settled.
    await store(T0 + 6000);
    assert.equal((await round(T0 + 7000)).backlog.chunks, 3);
    const settled = await round(T0 + 6000 + DEFAULT_SETTLE_MS);
    assert.equal(settled.merges, 1);
    assert.equal(settled.sources, 4);
    // A lone open chunk never settles: listed again after a minute.
    const later = T0 + 6000 + DEFAULT_SETTLE_MS;
    assert.equal((await round(later + 1)).backlog.chunks, 1);
    await store(later + 2);
    assert.equal((await round(later + 3)).backlog.chunks, 1);
    // Listed again after a minute: the chunk written meanwhile has settled
    // with it, and both are merged.
    const again = await round(later + 1 + QUIET_ROUND_MS);
    assert.equal(again.merges, 1);
    assert.equal(again.sources, 2);
  },
);

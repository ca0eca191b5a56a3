/**
 * The merger in a thread of its own (queue/merger.ts `createMergerThread`,
 * queue/merger_thread.ts): over a database file it merges what the merger
 * of this thread would, reports its backlog, and a thread that cannot run
 * is one error, not a crash.
 *
 * @module
 */
import assert from "node:assert/strict";
import { logSummariesPrefix } from "../../db/keys.ts";
import { createMergerThread } from "../../queue/merger_thread.ts";
import { queryProject, recordAt, storeBatch } from "../_helpers/query.ts";
import { withTimeout } from "../_helpers/harness.ts";

async function summaries(kv: Deno.Kv, projectId: string): Promise<number> {
  let count = 0;
  for await (const _ of kv.list({ prefix: logSummariesPrefix(projectId) })) {
    count++;
  }
  return count;
}

Deno.test("a merger in its own thread merges a database file's chunks and reports its backlog", async () => {
  const dir = await Deno.makeTempDir();
  const kvPath = `${dir}/kv.sqlite`;
  const kv = await Deno.openKv(kvPath);
  try {
    const projectId = await queryProject(kv);
    // A minute old: settled, and well within the retention.
    const at = Date.now() - 60_000;
    for (let i = 0; i < 5; i++) {
      await storeBatch(kv, projectId, [recordAt(at + i)]);
    }
    assert.equal(await summaries(kv, projectId), 5);
    const merger = createMergerThread({ kvPath, intervalMs: 60_000 });
    assert.equal(merger.backlog.chunks, 0);
    merger.start();
    await withTimeout(merger.round(), 20_000, "the thread's round");
    assert.equal(await summaries(kv, projectId), 1);
    // The thread's view: the merged chunk, too small to be final, is open.
    assert.equal(merger.backlog.chunks, 1);
    await merger.stop();
    await assert.rejects(merger.round(), /not running/);
  } finally {
    kv.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a merger thread that cannot open its database is one error, and stops", async () => {
  const dir = await Deno.makeTempDir();
  try {
    let told: (error: unknown) => void;
    const failed = new Promise<unknown>((resolve) => told = resolve);
    // A folder is no database file.
    const merger = createMergerThread({ kvPath: dir, onError: (e) => told(e) });
    merger.start();
    const error = await withTimeout(failed, 20_000, "the thread's failure");
    assert.match(String(error), /^Error: Cannot merge: /);
    assert.doesNotMatch(String(error), /\n/);
    await merger.stop();
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("stopping a merger thread twice at once waits for one stop, not for the bound", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const merger = createMergerThread({ kvPath: `${dir}/kv.sqlite` });
    merger.start();
    await withTimeout(merger.round(), 20_000, "the thread's round");
    // A signal and a second one: the second stop must not take the first's
    // answer, which would leave it waiting for its 30 s bound.
    await withTimeout(
      Promise.all([merger.stop(), merger.stop()]),
      20_000,
      "both stops",
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

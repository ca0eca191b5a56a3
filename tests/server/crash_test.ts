/**
 * The process-level test: the real server on a temporary KV file, entries
 * sent concurrently, the process killed with SIGKILL part-way, restarted,
 * and every entry that was answered 200 found stored exactly once.
 */
import assert from "node:assert/strict";
import { pendingBatchesPrefix } from "../../db/keys.ts";
import { listLogs } from "../../db/query/mod.ts";
import { ORIGIN, withTimeout } from "../_helpers/harness.ts";
import {
  postEntry,
  PROCESS_TIMEOUT_MS,
  startIngestServer,
  tempDatabase,
} from "../_helpers/server_process.ts";

Deno.test("entries answered 200 survive a SIGKILL and are stored exactly once after restart", async () => {
  const { dir, kvPath, kv, project } = await tempDatabase("crash");
  let server = await startIngestServer(kvPath);
  try {
    const total = 3000;
    const killAfter = 1200;
    const accepted = new Set<number>();
    let answered = 0;
    let next = 0;
    const send = async (url: string): Promise<void> => {
      while (next < total) {
        const seq = next++;
        try {
          const status = await postEntry(url, {
            level: "info",
            projectId: project.id,
            data: { title: "crash test", seq },
          }, ORIGIN);
          if (status === 200) accepted.add(seq);
        } catch {
          // Connection cut by the kill: the answer is unknown.
        }
        if (++answered === killAfter) server.child.kill("SIGKILL");
      }
    };
    await withTimeout(
      Promise.all(Array.from({ length: 64 }, () => send(server.urls.ingest))),
      PROCESS_TIMEOUT_MS,
      "the load to be answered or cut by the kill",
    );
    await server.stop("SIGKILL");
    assert.ok(accepted.size >= killAfter - 64, `accepted ${accepted.size}`);
    assert.ok(accepted.size < total, "the kill must interrupt the run");

    const left =
      (await Array.fromAsync(kv.list({ prefix: pendingBatchesPrefix() })))
        .length;
    const restartedAt = Date.now();
    server = await startIngestServer(kvPath);
    let stored = new Map<number, number>();
    // Against a hang only: the pending batches take about 3 s after a
    // restart on a busy machine.
    const deadline = Date.now() + PROCESS_TIMEOUT_MS;
    for (;;) {
      stored = new Map();
      for await (const log of listLogs(kv, project.id)) {
        const seq = log.data.seq as number;
        stored.set(seq, (stored.get(seq) ?? 0) + 1);
      }
      const pending = await Array.fromAsync(
        kv.list({ prefix: pendingBatchesPrefix() }, { limit: 1 }),
      );
      if (pending.length === 0 && [...accepted].every((s) => stored.has(s))) {
        break;
      }
      if (Date.now() > deadline) break;
      await new Promise((go) => setTimeout(go, 100));
    }
    const missing = [...accepted].filter((s) => !stored.has(s));
    assert.deepEqual(missing, [], "every entry answered 200 is stored");
    const twice = [...stored].filter(([, n]) => n > 1);
    assert.deepEqual(twice, [], "no entry is stored twice");
    console.log(
      `${accepted.size} answered 200 before the kill, ${left} batches left pending, ` +
        `${stored.size} stored; ` +
        `all stored ${Date.now() - restartedAt} ms after restart`,
    );
  } finally {
    await server.stop("SIGTERM");
    kv.close();
    await Deno.remove(dir, { recursive: true });
  }
});

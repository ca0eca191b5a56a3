/**
 * Quotas across processes: two servers on one KV file, entries of one
 * project sent to both at once, and a per-day quota of 1,000 storing
 * exactly 1,000 of them, the rest counted as `over_quota`.
 *
 * @module
 */
import assert from "node:assert/strict";
import { listLogs } from "../../db/query/mod.ts";
import { setQuota } from "../../db/quota.ts";
import { readStats } from "../../db/stats.ts";
import { ORIGIN, withTimeout } from "../_helpers/harness.ts";
import {
  postEntry,
  PROCESS_TIMEOUT_MS,
  type SpawnedServer,
  startIngestServer,
  tempDatabase,
} from "../_helpers/server_process.ts";

Deno.test("a per-day quota of 1,000 stores exactly 1,000 entries sent to two servers sharing one database", async () => {
  const { dir, kvPath, kv, project } = await tempDatabase("quota");
  const servers: SpawnedServer<"ingest">[] = [];
  try {
    await setQuota(kv, project.id, { perDay: 1_000 });
    servers.push(
      await startIngestServer(kvPath),
      await startIngestServer(kvPath),
    );
    const total = 1_600;
    let next = 0;
    let answered = 0;
    const send = async (url: string) => {
      while (next < total) {
        const seq = next++;
        const status = await postEntry(url, {
          level: "info",
          projectId: project.id,
          data: { title: "quota test", seq },
        }, ORIGIN);
        if (status === 200) answered++;
      }
    };
    await withTimeout(
      Promise.all(
        Array.from({ length: 32 }, (_, i) => send(servers[i % 2]!.urls.ingest)),
      ),
      PROCESS_TIMEOUT_MS,
      "sending the entries",
    );
    assert.equal(answered, total);
    // Both servers process what they queued; wait until all is counted.
    await withTimeout(
      (async () => {
        for (;;) {
          const { accepted, rejected } = await readStats(kv, project.id);
          if (accepted + (rejected.over_quota ?? 0) >= total) return;
          await new Promise((r) => setTimeout(r, 100));
        }
      })(),
      PROCESS_TIMEOUT_MS,
      "processing the entries",
    );
    let stored = 0;
    for await (const _ of listLogs(kv, project.id)) stored++;
    assert.equal(stored, 1_000);
    const { accepted, rejected } = await readStats(kv, project.id);
    assert.equal(accepted, 1_000);
    assert.equal(rejected.over_quota, total - 1_000);
  } finally {
    for (const server of servers) await server.stop();
    kv.close();
    await Deno.remove(dir, { recursive: true });
  }
});

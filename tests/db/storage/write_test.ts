import assert from "node:assert/strict";
import {
  chunkKeyCount,
  deleteChunk,
  storeLogs,
} from "../../../db/storage/write.ts";
import { listLogs, listSummaries } from "../../../db/query/mod.ts";
import type { LogRecord } from "../../../domain/entry.ts";
import { createId } from "../../../domain/ids.ts";
import { noise, T0 } from "../../_helpers/query.ts";

function record(ms: number, n = 0): LogRecord {
  return {
    id: createId(ms),
    receivedAt: ms,
    level: "info",
    data: { n },
    device: {},
    context: {},
    auth: "origin",
  };
}

async function store(kv: Deno.Kv, records: LogRecord[]): Promise<void> {
  const op = kv.atomic();
  storeLogs(op, "p", records, { now: T0, retentionMs: 60_000 });
  assert.ok((await op.commit()).ok);
}

async function ids(kv: Deno.Kv, options = {}): Promise<string[]> {
  return (await Array.fromAsync(listLogs(kv, "p", options))).map((r) => r.id);
}

Deno.test("entries from overlapping chunks of two processes list in exact time order", async () => {
  const kv = await Deno.openKv(":memory:");
  try {
    // Two processes store chunks covering the same second, interleaved.
    const a = Array.from({ length: 50 }, (_, i) => record(T0 + 20 * i, i));
    const b = Array.from({ length: 50 }, (_, i) => record(T0 + 10 + 20 * i, i));
    const c = Array.from(
      { length: 30 },
      (_, i) => record(T0 + 500 + 30 * i, i),
    );
    await store(kv, a);
    await store(kv, b);
    await store(kv, c);
    const all = [...a, ...b, ...c].map((r) => r.id).sort();
    assert.deepEqual(await ids(kv), all);
    assert.deepEqual(await ids(kv, { reverse: true }), [...all].reverse());
    assert.deepEqual(
      await ids(kv, { reverse: true, limit: 7 }),
      [...all].reverse().slice(0, 7),
    );
    assert.deepEqual(await ids(kv, { limit: 7 }), all.slice(0, 7));
    const [from, to] = [all[40]!, all[90]!];
    assert.deepEqual(
      await ids(kv, { startId: from, endId: to }),
      all.slice(40, 90),
    );
    assert.deepEqual(
      await ids(kv, { startId: from, endId: to, reverse: true }),
      all.slice(40, 90).reverse(),
    );
  } finally {
    kv.close();
  }
});

Deno.test("a chunk larger than one KV value is stored in slices and read back whole", async () => {
  const kv = await Deno.openKv(":memory:");
  try {
    // Text that does not compress: about 118 KB deflated, two values.
    const records = Array.from({ length: 40 }, (_, i) => ({
      ...record(T0 + i, i),
      data: { blob: noise(i, 3000), n: i },
    }));
    await store(kv, records);
    const [summary] = await listSummaries(kv, "p");
    assert.ok(summary!.slices > 1, `${summary!.slices} slices`);
    const back = await Array.fromAsync(listLogs(kv, "p"));
    assert.equal(back.length, 40);
    assert.deepEqual(back.map((r) => r.data.n), records.map((r) => r.data.n));
    assert.equal(back[39]!.data.blob, noise(39, 3000));
  } finally {
    kv.close();
  }
});

Deno.test("chunkKeyCount counts the keys deleteChunk deletes, slices and columns included", () => {
  for (
    const summary of [
      { lastId: "a", slices: 1, columns: 0 },
      { lastId: "b", slices: 1 },
      { lastId: "c", slices: 3, columns: 1 },
      { lastId: "d", slices: 2, columns: 4 },
    ]
  ) {
    const deleted: Deno.KvKey[] = [];
    const op = { delete: (key: Deno.KvKey) => deleted.push(key) };
    const n = deleteChunk(op as unknown as Deno.AtomicOperation, "p", summary);
    assert.equal(n, deleted.length);
    assert.equal(chunkKeyCount(summary), deleted.length, summary.lastId);
  }
});

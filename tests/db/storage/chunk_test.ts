/**
 * Chunks built step by step (db/storage/chunk.ts, `buildChunkPausing`): the
 * merger lets requests through every few milliseconds of work, and the chunk
 * is the one built at once.
 *
 * @module
 */
import assert from "node:assert/strict";
import {
  buildChunk,
  buildChunkPausing,
  LINES_PER_STEP,
} from "../../../db/storage/chunk.ts";
import { mergeProject } from "../../../db/storage/merge.ts";
import { encodeRecordLine } from "../../../db/storage/lines.ts";
import type { LogRecord } from "../../../domain/entry.ts";
import { createId } from "../../../domain/ids.ts";
import {
  queryProjectTest,
  recordAt,
  storeBatch,
  T0,
} from "../../_helpers/query.ts";

function lines(n: number): string[] {
  const t0 = Date.UTC(2026, 0, 1);
  return Array.from({ length: n }, (_, i): LogRecord => ({
    id: createId(t0 + i),
    receivedAt: t0 + i,
    level: i % 7 === 0 ? "error" : "info",
    data: { title: `Entry ${i}`, message: `user-${i % 97} did thing ${i}` },
    device: { os: "Linux" },
    context: { route: `/r/${i % 13}` },
    auth: "origin",
  })).map(encodeRecordLine);
}

Deno.test("a chunk built step by step pauses every LINES_PER_STEP lines and after each block, and equals the chunk built at once", async () => {
  const all = lines(4000);
  let pauses = 0;
  const paused = await buildChunkPausing(all, () => {
    pauses++;
    return Promise.resolve();
  });
  const direct = buildChunk(all);
  assert.deepEqual(paused, direct);
  // Per block: one pause every LINES_PER_STEP lines indexed, one after
  // its lines, one after its deflate (the chunk's table counts its blocks).
  const blocks = direct.head[2]!;
  assert.ok(blocks > 1, `${blocks} blocks`);
  assert.ok(
    pauses >= Math.floor(all.length / LINES_PER_STEP) + blocks,
    `${pauses} pauses`,
  );
  assert.ok(pauses <= Math.ceil(all.length / LINES_PER_STEP) + 2 * blocks);
});

queryProjectTest(
  "the merger pauses between the blocks of each chunk it builds",
  async (kv, projectId) => {
    const records = Array.from(
      { length: 4000 },
      (_, i) => recordAt(T0 + i * 10, { data: { n: i, text: `entry ${i}` } }),
    );
    for (let i = 0; i < records.length; i += 200) {
      await storeBatch(kv, projectId, records.slice(i, i + 200));
    }
    let pauses = 0;
    const done = await mergeProject(kv, projectId, {
      now: T0 + 2 * 3_600_000,
      pause: () => {
        pauses++;
        return Promise.resolve();
      },
    });
    assert.equal(done.entries, records.length);
    assert.ok(
      pauses >= done.merges * 2,
      `${pauses} pauses, ${done.merges} merges`,
    );
  },
);

/**
 * Merge rounds that could not go on: under a retention rule by level (a
 * round that expires chunks and prunes others commits both; a pruned chunk a
 * coarse group named stays found by a word search), over entries whose
 * filters asked more than one value, and past a project whose round fails.
 *
 * @module
 */
import assert from "node:assert/strict";
import { kvWith } from "../../_helpers/kv_with.ts";
import { matches, parseQuery, queryLogs } from "../../../db/query/mod.ts";
import { mergeAll, mergeProject } from "../../../db/storage/merge.ts";
import { createProject, listProjects } from "../../../db/projects.ts";
import { logBloomsPrefix } from "../../../db/keys.ts";
import { buildChunk, FINAL_TIER } from "../../../db/storage/chunk.ts";
import { encodeRecordLine } from "../../../db/storage/lines.ts";
import { setChunk } from "../../../db/storage/write.ts";
import { addRetentionRule } from "../../../db/retention_rules.ts";
import {
  DAY,
  HOUR,
  queryProjectTest,
  recordAt,
  storeBatch,
  T0,
  withKv,
} from "../../_helpers/query.ts";
import type { LogRecord } from "../../../domain/entry.ts";

const MINUTE = 60_000;

queryProjectTest(
  "a grouped chunk whose last entry a level rule drops stays found by a word search",
  async (kv, projectId) => {
    const stored: LogRecord[] = [];
    // Each hour, ten errors then ten infos: each chunk ends with an info.
    for (let h = 0; h < 8; h++) {
      const base = T0 + h * HOUR;
      const word = h === 0 ? "needleword" : `other${h}word`;
      const errors = Array.from(
        { length: 10 },
        (_, i) =>
          recordAt(base + i * 1000, {
            level: "error",
            data: { title: "E", message: `${word} number ${i}` },
          }),
      );
      const infos = Array.from(
        { length: 10 },
        (_, i) => recordAt(base + MINUTE + i * 1000, { level: "info" }),
      );
      await storeBatch(kv, projectId, errors);
      await storeBatch(kv, projectId, infos);
      stored.push(...errors);
    }
    await mergeProject(kv, projectId, {
      now: T0 + 12 * HOUR,
      coarseGroupChunks: 2,
    });
    const filter = parseQuery("needleword");
    const expected = stored.filter((r) => matches(r, filter)).length;
    assert.equal(expected, 10);
    await addRetentionRule(kv, projectId, "level<=info", 3);
    await mergeProject(kv, projectId, {
      now: T0 + 3 * DAY + 12 * HOUR,
      coarseGroupChunks: 2,
    });
    const page = await queryLogs(kv, projectId, { filter });
    assert.equal(page.records.length, expected, JSON.stringify(page.stats));
  },
);

queryProjectTest(
  "a round that expires chunks and prunes a later one commits both, and merges",
  async (kv, projectId) => {
    await addRetentionRule(kv, projectId, "level<=info", 3);
    // Minute by minute: an info-only chunk, then one of an error and an info.
    for (let m = 0; m < 20; m++) {
      const base = T0 + m * MINUTE;
      await storeBatch(kv, projectId, [recordAt(base, { level: "info" })]);
      await storeBatch(kv, projectId, [
        recordAt(base + 10_000, { level: "error" }),
        recordAt(base + 20_000, { level: "info" }),
      ]);
    }
    // Fresh traffic to merge.
    const now = T0 + 3 * DAY + 5 * MINUTE;
    for (let i = 0; i < 40; i++) {
      await storeBatch(kv, projectId, [recordAt(now - 10 * MINUTE + i * 1000)]);
    }
    const round = await mergeProject(kv, projectId, { now });
    assert.ok(round.expired > 0, `expired ${round.expired}`);
    assert.ok(round.merges > 0, `merges ${round.merges}`);
  },
);

queryProjectTest(
  "entries of many distinct fields that compress well merge, their filters within one value, and are found",
  async (kv, projectId) => {
    const stored: LogRecord[] = [];
    for (let b = 0; b < 30; b++) {
      const records = Array.from({ length: 20 }, (_, i) => {
        const n = b * 20 + i;
        return recordAt(T0 + n * 100, { data: { a: Array(200).fill(n) } });
      });
      await storeBatch(kv, projectId, records);
      stored.push(...records);
    }
    const round = await mergeProject(kv, projectId, { now: T0 + HOUR });
    assert.ok(round.merges > 0);
    for await (const entry of kv.list({ prefix: logBloomsPrefix(projectId) })) {
      assert.ok((entry.value as Uint8Array).length <= 65_536);
    }
    const filter = parseQuery("data.a:317");
    const page = await queryLogs(kv, projectId, { filter });
    assert.deepEqual(
      page.records.map((r) => r.id),
      stored.filter((r) => matches(r, filter)).map((r) => r.id).reverse(),
    );
  },
);

Deno.test("a project whose merge fails is told of, and the projects after it are merged", async () => {
  await withKv(async (kv) => {
    const [a, b] = [
      await createProject(kv, { name: "a", now: () => T0 }),
      await createProject(kv, { name: "b", now: () => T0 }),
    ];
    for (let i = 0; i < 20; i++) {
      await storeBatch(kv, a.id, [recordAt(T0 + i * 1000)]);
      await storeBatch(kv, b.id, [recordAt(T0 + i * 1000)]);
    }
    // The first project listed fails its round.
    const [first] = await listProjects(kv);
    const failing = kvWith(kv, {
      list: (selector, options) => {
        const prefix = "prefix" in selector ? selector.prefix : [];
        if (prefix.includes(first!.id)) throw new TypeError("Value too large");
        return kv.list(selector, options);
      },
    });
    const told: string[] = [];
    const round = await mergeAll(failing, {
      now: T0 + HOUR,
      onProjectError: (projectId, error) =>
        told.push(`${projectId}: ${(error as Error).message}`),
    });
    assert.deepEqual(told, [`${first!.id}: Value too large`]);
    assert.ok(round.merges > 0, "the other project merged");
  });
});

queryProjectTest(
  "past the chunks a round lists oldest first, the newest are listed too: merged and counted in the backlog",
  async (kv, projectId) => {
    // Old final chunks fill the oldest-first listing.
    for (let i = 0; i < 30; i++) {
      const records = [recordAt(T0 + i * 1000)];
      const chunk = buildChunk(records.map(encodeRecordLine), {
        records,
        tier: FINAL_TIER,
      });
      const op = kv.atomic();
      setChunk(op, projectId, chunk, { expireIn: 30 * DAY });
      await op.commit();
    }
    // Fresh chunks of the last minutes, past it.
    const now = T0 + DAY;
    for (let i = 0; i < 20; i++) {
      await storeBatch(kv, projectId, [recordAt(now - 10 * MINUTE + i * 1000)]);
    }
    const round = await mergeProject(kv, projectId, { now, maxListed: 10 });
    assert.ok(round.merges > 0, `merges ${round.merges}`);
    assert.equal(round.sources, 20, "every fresh chunk merged");
  },
);

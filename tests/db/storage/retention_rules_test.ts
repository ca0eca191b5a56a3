/**
 * Merge rounds under a retention rule by level: a round that expires chunks
 * and prunes others commits both, and a pruned chunk a coarse group named
 * stays found by a word search.
 *
 * @module
 */
import assert from "node:assert/strict";
import { matches, parseQuery, queryLogs } from "../../../db/query/mod.ts";
import { mergeProject } from "../../../db/storage/merge.ts";
import { addRetentionRule } from "../../../db/retention_rules.ts";
import {
  DAY,
  HOUR,
  queryProjectTest,
  recordAt,
  storeBatch,
  T0,
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

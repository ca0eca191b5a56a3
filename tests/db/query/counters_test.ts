/**
 * Aggregations and histograms answered from the counters of levels: exact
 * or marked partial when the entries of the partial minutes at the ends run
 * out of time (one budget for both ends), and equal to what is stored when
 * retention (a rule by level, or the retention's edge) has deleted entries
 * the counters still count.
 *
 * @module
 */
import assert from "node:assert/strict";
import {
  aggregate,
  type Aggregation,
  histogram,
  parseSearch,
  queryLogs,
} from "../../../db/query/mod.ts";
import { addRetentionRule } from "../../../db/retention_rules.ts";
import type { LogRecord } from "../../../domain/entry.ts";
import {
  DAY,
  HOUR,
  mergeAt,
  queryProjectTest,
  recordAt,
  RETENTION_MS,
  storeBatch,
  T0,
} from "../../_helpers/query.ts";

const MINUTE = 60_000;

/** Options of {@linkcode run}. */
interface RunOptions {
  since?: number;
  until?: number;
  /** The budget's clock; its time, 500 ms by default. */
  clock?: () => number;
  ms?: number;
  /** The time retention is judged by. */
  now: number;
}

/** The aggregation of `query` (which has a pipe) over a time range. */
async function run(
  kv: Deno.Kv,
  projectId: string,
  query: string,
  options: RunOptions,
): Promise<Aggregation> {
  const { filter, pipe } = parseSearch(query);
  assert.ok(pipe, `"${query}" has a pipe`);
  const { since, until, clock, ms, now } = options;
  return await aggregate(kv, projectId, {
    filter: {
      ...filter,
      ...(since === undefined ? {} : { since }),
      ...(until === undefined ? {} : { until }),
    },
    pipe,
    now,
    ...(clock ? { budget: { clock, ms: ms ?? 500 } } : {}),
  });
}

/** A clock that moves 100 ms each time it is read. */
function slowClock(): () => number {
  let t = 0;
  return () => (t += 100);
}

/**
 * Checks that a `| count` answer is whole, or partial with a `searchedTo`
 * that says which of `records` it counted: those received from it on.
 */
function assertCounted(answer: Aggregation, records: LogRecord[]) {
  const from = answer.searchedTo ?? -Infinity;
  const expected = records.filter((r) => r.receivedAt >= from).length;
  assert.deepEqual(answer.rows, [{ count: expected }], `from ${from - T0}`);
}

/** `n` info records one second apart from `start`. */
function secondly(start: number, n: number): LogRecord[] {
  return Array.from({ length: n }, (_, i) => recordAt(start + i * 1000));
}

queryProjectTest(
  "the partial minute at the older end, cut by the budget, makes the answer partial with where it stopped",
  async (kv, projectId) => {
    // 40 entries in one minute, the range starting 500 ms into it.
    const records = secondly(T0 + 1000, 40);
    await storeBatch(kv, projectId, records);
    const range = { since: T0 + 500, until: T0 + HOUR, now: T0 + DAY };
    const whole = await run(kv, projectId, "* | count", range);
    assert.deepEqual(whole.rows, [{ count: 40 }]);
    assert.equal(whole.searchedTo, undefined);
    const cut = await run(kv, projectId, "* | count", {
      ...range,
      clock: slowClock(),
    });
    assert.ok(cut.searchedTo !== undefined, "partial");
    assertCounted(cut, records);
    const columns = await run(kv, projectId, "-context.service:x | count", {
      ...range,
      clock: slowClock(),
    });
    assertCounted(columns, records);
  },
);

queryProjectTest(
  "the partial minute at the newer end, cut by the budget, answers from where it stopped, and both ends share one budget",
  async (kv, projectId) => {
    // 20 entries in the older partial minute, 30 in a whole minute, 40 in
    // the newer partial minute.
    const records = [
      ...secondly(T0 + 30_000, 20),
      ...secondly(T0 + MINUTE, 30),
      ...secondly(T0 + 2 * MINUTE + 1000, 40),
    ];
    await storeBatch(kv, projectId, records);
    const since = T0 + 20_500;
    const until = T0 + 2 * MINUTE + 50_500;
    const range = { since, until, now: T0 + DAY };
    for (const query of ["* | count", "level:info | count by level"]) {
      const whole = await run(kv, projectId, query, range);
      assert.equal(whole.total, 90);
      assert.equal(whole.searchedTo, undefined);
    }
    const cut = await run(kv, projectId, "* | count", {
      ...range,
      clock: slowClock(),
    });
    assert.ok(cut.searchedTo !== undefined, "partial");
    assert.ok(cut.searchedTo > T0 + 2 * MINUTE, "within the newer minute");
    assertCounted(cut, records);
    // 3.2 s is enough for either end alone (a reading of 100 ms for each
    // line past the first 16), not for both in turn.
    const shared = await run(kv, projectId, "* | count", {
      ...range,
      clock: slowClock(),
      ms: 3200,
    });
    assert.ok(shared.searchedTo !== undefined, "partial");
    assert.ok(shared.searchedTo < T0 + MINUTE, "within the older minute");
    assertCounted(shared, records);
  },
);

/** Every stored entry's level, oldest first. */
async function storedLevels(kv: Deno.Kv, projectId: string) {
  const page = await queryLogs(kv, projectId, { order: "oldest", limit: 100 });
  return page.records.map((r) => r.level);
}

queryProjectTest(
  "counts from the counters leave out entries a retention rule deleted, and recent ranges are still counted from the counters",
  async (kv, projectId) => {
    await addRetentionRule(kv, projectId, "level<=info", 3);
    const start = T0 + DAY + 10_000;
    await storeBatch(kv, projectId, [
      recordAt(start),
      recordAt(start + 1000),
      recordAt(start + 2000, { level: "error" }),
    ]);
    const now = start + 4 * DAY;
    await mergeAt(kv, projectId, now);
    assert.deepEqual(await storedLevels(kv, projectId), ["error"]);
    const count = (query: string) => run(kv, projectId, query, { now });
    assert.deepEqual((await count("* | count")).rows, [{ count: 1 }]);
    assert.deepEqual((await count("level:info | count")).rows, [{ count: 0 }]);
    assert.deepEqual((await count("* | count by level")).rows, [
      { level: "error", count: 1 },
    ]);
    assert.deepEqual((await count("* | top 3 level")).rows, [
      { level: "error", count: 1, share: 1 },
    ]);
    const bars = await histogram(kv, projectId, {
      since: start - HOUR,
      until: now,
      now,
    });
    const counted: Record<string, number> = {};
    for (const { counts } of bars.buckets) {
      for (const [level, n] of Object.entries(counts)) {
        counted[level] = (counted[level] ?? 0) + n;
      }
    }
    assert.deepEqual(counted, { error: 1 });
    // Entries of the last hour: whole minutes from the counters alone.
    const recent = [recordAt(now - 30 * MINUTE), recordAt(now - 20 * MINUTE)];
    await storeBatch(kv, projectId, recent);
    const hour = await run(kv, projectId, "* | count by level", {
      since: now - HOUR,
      until: now,
      now,
    });
    assert.deepEqual(hour.rows, [{ level: "info", count: 2 }]);
    assert.equal(hour.stats.chunksRead, 0, "no chunk read");
  },
);

queryProjectTest(
  "at the retention's edge, counts by minute equal the entries stored, whatever counters the merger deleted",
  async (kv, projectId) => {
    const start = T0 + DAY + 10_000;
    const records = [recordAt(start), recordAt(start + 30 * MINUTE)];
    await storeBatch(kv, projectId, records);
    // The chunk's newest entry is within the retention: it is kept, while
    // the counters of the minutes before `now - RETENTION_MS` are deleted.
    const now = start + RETENTION_MS + 20 * MINUTE;
    await mergeAt(kv, projectId, now);
    assert.deepEqual(await storedLevels(kv, projectId), ["info", "info"]);
    for (const query of ["* | count", "* | count by (time 1m)"]) {
      const answer = await run(kv, projectId, query, { now });
      assert.equal(answer.total, 2, query);
    }
  },
);

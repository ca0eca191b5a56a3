/**
 * Aggregations (`| count`, `| count by (…)`, `| top N F`, `| uniq F`) over
 * entries with known counts per service, user, level and hour: exact
 * answers, `null` for a missing field, largest first, the partial answer
 * when the time budget runs out, and the bound on groups.
 *
 * @module
 */
import assert from "node:assert/strict";
import {
  aggregate,
  type Aggregation,
  InvalidQueryError,
  parseSearch,
} from "../../../db/query/mod.ts";
import type { LogRecord } from "../../../domain/entry.ts";
import { DAY, HOUR, T0 } from "../../_helpers/query.ts";
import {
  countsBy,
  hourOf,
  PIPE_RECORDS,
  pipeRecordsTest,
  serviceOf,
  severe,
  SEVERE_BY_HOUR,
  severeByHour,
} from "../../_helpers/pipes.ts";

/** The rows `| count by` `field` answers over every record, by `key`. */
function countRows<K extends string | number | null>(
  field: string,
  key: (r: LogRecord) => K,
): Record<string, unknown>[] {
  return countsBy(() => true, key).map(([value, count]) => ({
    [field]: value,
    count,
  }));
}

/**
 * The time retention is judged by: a day after the records, well within
 * their retention, so that the counters answer for them.
 */
const NOW = T0 + DAY;

/** The aggregation of `query` (which has a pipe), with `options` given. */
async function run(
  kv: Deno.Kv,
  projectId: string,
  query: string,
  options: { clock?: () => number; maxGroups?: number; exactUniq?: number } =
    {},
): Promise<Aggregation> {
  const { filter, pipe } = parseSearch(query);
  assert.ok(pipe, `"${query}" has a pipe`);
  const { clock, ...bounds } = options;
  return await aggregate(kv, projectId, {
    filter,
    pipe,
    now: NOW,
    ...bounds,
    ...(clock ? { budget: { clock } } : {}),
  });
}

/** Rows as comparable text, in any order. */
function sorted(rows: Record<string, unknown>[]): string[] {
  return rows.map((r) => JSON.stringify(r)).sort();
}

pipeRecordsTest(
  "| count counts every matching entry",
  async (kv, projectId) => {
    const all = await run(kv, projectId, "* | count");
    assert.deepEqual(all.rows, [{ count: PIPE_RECORDS.length }]);
    assert.deepEqual(all.columns, ["count"]);
    assert.equal(all.searchedTo, undefined);
    const errors = await run(kv, projectId, "level>=error | count");
    assert.deepEqual(errors.rows, [{
      count: PIPE_RECORDS.filter(severe).length,
    }]);
    const api = await run(kv, projectId, "context.service:api | count");
    assert.deepEqual(api.rows, [{
      count: PIPE_RECORDS.filter((r) => r.context.service === "api").length,
    }]);
  },
);

pipeRecordsTest(
  "| count by (time 1h, context.service) gives one row per hour and service, missing services as null, largest first",
  async (kv, projectId) => {
    const answer = await run(kv, projectId, SEVERE_BY_HOUR);
    assert.deepEqual(answer.columns, ["time", "context.service", "count"]);
    const expected = severeByHour();
    assert.deepEqual(sorted(answer.rows), sorted(expected));
    assert.ok(answer.rows.some((r) => r["context.service"] === null));
    const counts = answer.rows.map((r) => r.count as number);
    assert.deepEqual(counts, [...counts].sort((a, b) => b - a));
  },
);

pipeRecordsTest(
  "count by counts each value, ties in order, and keeps a number a number: data.status 502 is not the text 502",
  async (kv, projectId) => {
    const cases: [string, string, (r: LogRecord) => string | number][] = [
      ["* | count by level", "level", (r) => r.level],
      [
        "* | count by (data.status)",
        "data.status",
        (r) => r.data.status as number,
      ],
    ];
    const rows = new Map<string, Record<string, unknown>[]>();
    for (const [query, field, key] of cases) {
      const answer = await run(kv, projectId, query);
      assert.deepEqual(answer.rows, countRows(field, key), query);
      rows.set(field, answer.rows);
    }
    assert.equal(typeof rows.get("data.status")![0]!["data.status"], "number");
  },
);

pipeRecordsTest(
  "count by (time 15m) and (time 1d) bucket by receipt time",
  async (kv, projectId) => {
    const day = await run(kv, projectId, "* | count by (time 1d)");
    assert.deepEqual(day.rows, [{
      time: new Date(T0).toISOString(),
      count: PIPE_RECORDS.length,
    }]);
    const quarter = await run(kv, projectId, "* | count by (time 15m)");
    const expected = countRows(
      "time",
      (r) =>
        new Date(Math.floor(r.receivedAt / 900_000) * 900_000).toISOString(),
    );
    assert.deepEqual(quarter.rows, expected);
  },
);

pipeRecordsTest(
  "| top N F gives the N most frequent values with their share",
  async (kv, projectId) => {
    const answer = await run(kv, projectId, "* | top 3 context.userId");
    assert.deepEqual(answer.columns, ["context.userId", "count", "share"]);
    const total = PIPE_RECORDS.length;
    assert.deepEqual(
      answer.rows,
      countsBy(() => true, (r) => r.context.userId as string).slice(0, 3).map((
        [user, count],
      ) => ({
        "context.userId": user,
        count,
        share: Math.round(count / total * 1e6) / 1e6,
      })),
    );
    assert.equal(answer.groups, 5);
    const services = await run(
      kv,
      projectId,
      "level:info | top 10 context.service",
    );
    assert.deepEqual(
      services.rows.map((r) => [r["context.service"], r.count]),
      countsBy((r) => r.level === "info", serviceOf),
    );
  },
);

pipeRecordsTest(
  "| uniq F counts distinct values, a missing one as null",
  async (kv, projectId) => {
    const users = await run(kv, projectId, "* | uniq context.userId");
    assert.deepEqual(users.rows, [{ count: 5 }]);
    assert.equal(users.estimate, undefined);
    const services = await run(kv, projectId, "* | uniq context.service");
    assert.deepEqual(services.rows, [{ count: 4 }], "api, web, worker, null");
    const none = await run(kv, projectId, "nosuchword | uniq context.userId");
    assert.deepEqual(none.rows, [{ count: 0 }]);
  },
);

pipeRecordsTest(
  "an aggregation that runs out of time answers what it counted and how far back it searched",
  async (kv, projectId) => {
    let now = 0;
    // Each reading of the clock is 1.5 s later: the 2 s budget is spent
    // after the newest hour's chunk.
    const clock = () => (now += 1500);
    const answer = await run(kv, projectId, "context.userId:* | count", {
      clock,
    });
    assert.ok(answer.searchedTo !== undefined, "partial");
    assert.ok(answer.searchedTo > T0 && answer.searchedTo <= T0 + 4 * HOUR);
    const counted =
      PIPE_RECORDS.filter((r) => r.receivedAt >= answer.searchedTo!).length;
    assert.deepEqual(answer.rows, [{ count: counted }]);
    assert.ok(counted < PIPE_RECORDS.length && counted > 0);
    const whole = await run(kv, projectId, "context.userId:* | count", {
      clock: () => 0,
    });
    assert.equal(whole.searchedTo, undefined);
  },
);

pipeRecordsTest(
  "count by refuses more groups than its bound, with a clear message",
  async (kv, projectId) => {
    const query = "* | count by data.title";
    const titles = await run(kv, projectId, query);
    assert.equal(titles.groups, PIPE_RECORDS.length);
    await assert.rejects(
      run(kv, projectId, query, { maxGroups: 10 }),
      (error) =>
        error instanceof InvalidQueryError &&
        /Cannot count more than 10 groups: narrow the query/.test(
          error.message,
        ),
    );
  },
);

pipeRecordsTest(
  "uniq past its exact bound answers an estimate, said so",
  async (kv, projectId) => {
    const query = "* | uniq data.title";
    const exact = await run(kv, projectId, query);
    assert.deepEqual(exact.rows, [{ count: PIPE_RECORDS.length }]);
    const estimated = await run(kv, projectId, query, { exactUniq: 10 });
    assert.equal(estimated.estimate, true);
    assert.equal(estimated.rows[0]!.estimate, true);
    assert.deepEqual(estimated.columns, ["count", "estimate"]);
    // HyperLogLog with 16,384 registers counts 58 values within a few.
    const n = estimated.rows[0]!.count as number;
    assert.ok(Math.abs(n - PIPE_RECORDS.length) <= 3, `estimate ${n}`);
  },
);

pipeRecordsTest(
  "levels grouped by time and level are counted from the counters, exactly, partial minutes at the ends included",
  async (kv, projectId) => {
    const { filter, pipe } = parseSearch(
      "level>=error | count by (time 15m, level)",
    );
    // From 30 s into the first hour's 7th minute to 90 s into the fourth's.
    const since = T0 + 6 * 60_000 + 30_000;
    const until = T0 + 3 * HOUR + 90_000;
    const answer = await aggregate(kv, projectId, {
      filter: { ...filter, since, until },
      pipe: pipe!,
      now: NOW,
    });
    const expected = countsBy(
      (r) => severe(r) && r.receivedAt >= since && r.receivedAt < until,
      (r) =>
        JSON.stringify([
          new Date(Math.floor(r.receivedAt / 900_000) * 900_000).toISOString(),
          r.level,
        ]),
    ).map(([key, count]) => {
      const [time, level] = JSON.parse(key);
      return { time, level, count };
    });
    assert.deepEqual(sorted(answer.rows), sorted(expected));
    const all = await run(kv, projectId, "* | count by (time 1h)");
    assert.deepEqual(
      sorted(all.rows),
      sorted(
        countRows("time", hourOf),
      ),
    );
    assert.equal(all.stats.chunksRead, 0, "no chunk read");
    const levels = await run(kv, projectId, "-level:info | uniq level");
    assert.deepEqual(levels.rows, [{ count: 2 }]);
  },
);

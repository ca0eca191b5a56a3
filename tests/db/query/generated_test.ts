import type { LogRecord } from "../../../domain/entry.ts";
import assert from "node:assert/strict";
import { buildStore } from "../../../bench/query/ingest.ts";
import {
  aggregate,
  aroundEntry,
  type Filter,
  getEntry,
  histogram,
  listLogs,
  matches,
  parseQuery,
  parseSearch,
  queryLogs,
} from "../../../db/query/mod.ts";
import { DAY, T0 } from "../../_helpers/query.ts";

const COUNT = 20_000;
const PLANTED = new Map([[3_333, "zanzibarquokka"], [17_777, "wombatxylo"]]);

Deno.test("every query on 20,000 generated entries answers what a full scan answers", async (t) => {
  const kv = await Deno.openKv(":memory:");
  try {
    const store = await buildStore({
      kv,
      count: COUNT,
      seed: 9,
      start: T0,
      spanMs: 7 * DAY,
      plant: PLANTED,
      keep: true,
      mergeEveryMs: 3_600_000,
      // Small coarse groups: most chunks are in one, a few are not yet.
      coarseGroupChunks: 4,
    });
    const { projectId } = store;
    const all = [...store.records].sort((a, b) => (a.id < b.id ? -1 : 1));
    const newest = [...all].reverse();
    const user = String(all[COUNT / 2]!.context.userId);
    const session = String(all[6_666]!.context.traceId);
    const mid = T0 + 3.5 * DAY;
    const queries: [string, Filter][] = [
      ["everything", {}],
      ...[
        "level:error",
        "level:critical",
        "level>=warning",
        "-level:info",
        "zanzibarquokka",
        "wombatxylo level:info,warning,error,critical",
        "nowherefound",
        `context.userId:${user}`,
        `context.traceId:${session} -level:info`,
        '"payment provider"',
        "checkout failed",
        "appid:com.example.shop.ios device.os:*",
        "-appid:* auth:origin",
        "data.status:503",
        "shop.example.com level>=error",
        '-"request completed"',
      ].map((q): [string, Filter] => [q, parseQuery(q)]),
      ["one hour", { since: mid, until: mid + 3_600_000 }],
      ["an hour of errors", {
        ...parseQuery("level:error"),
        since: mid,
        until: mid + 3_600_000,
      }],
    ];
    for (const [name, filter] of queries) {
      await t.step(name, async () => {
        const expected = newest.filter((r) => matches(r, filter));
        const page = await queryLogs(kv, projectId, { filter, limit: 100 });
        assert.deepEqual(page.records, expected.slice(0, 100));
        assert.equal(page.cursor !== null, expected.length > 100);
        const listed = await Array.fromAsync(
          listLogs(kv, projectId, { filter, reverse: true }),
        );
        assert.deepEqual(listed.map((r) => r.id), expected.map((r) => r.id));
        const oldest = await queryLogs(kv, projectId, {
          filter,
          order: "oldest",
          limit: 50,
        });
        assert.deepEqual(
          oldest.records.map((r) => r.id),
          [...expected].reverse().slice(0, 50).map((r) => r.id),
        );
      });
    }
    await t.step("planted words are found in their entry only", async () => {
      for (const [index, word] of PLANTED) {
        const page = await queryLogs(kv, projectId, {
          filter: parseQuery(word),
        });
        assert.deepEqual(page.records.map((r) => r.id), [store.ids[index]]);
      }
    });
    await t.step("entries and their context", async () => {
      for (const at of [0, 1, 4_999, 10_000, COUNT - 1]) {
        const entry: LogRecord = all[at]!;
        assert.deepEqual(await getEntry(kv, projectId, entry.id), entry);
        const around = await aroundEntry(kv, projectId, entry.id, 25);
        assert.deepEqual(around.before, all.slice(Math.max(0, at - 25), at));
        assert.deepEqual(around.after, all.slice(at + 1, at + 26));
      }
    });
    await t.step(
      "aggregations answer the counts taken while generating",
      async () => {
        const run = async (q: string) => {
          const { filter, pipe } = parseSearch(q);
          return await aggregate(kv, projectId, {
            filter,
            pipe: pipe!,
            budget: { ms: 600_000 },
          });
        };
        const byHour = await run(
          "level>=error | count by (time 1h, context.service)",
        );
        assert.deepEqual(
          new Map(byHour.rows.map((r) => [
            `${Date.parse(String(r.time))} ${
              JSON.stringify(r["context.service"])
            }`,
            r.count,
          ])),
          store.severeByHour,
        );
        const users = [...store.users].sort((a, b) =>
          b[1] - a[1] || (a[0] < b[0] ? -1 : 1)
        );
        const top = await run("* | top 10 context.userId");
        assert.deepEqual(
          top.rows.map((r) => [r["context.userId"], r.count]),
          users.slice(0, 10),
        );
        const uniq = await run("* | uniq context.userId");
        assert.deepEqual(uniq.rows, [{ count: store.users.size }]);
      },
    );
    await t.step("the histogram of the week", async () => {
      const h = await histogram(kv, projectId, {
        since: T0,
        until: T0 + 7 * DAY,
      });
      assert.equal(h.intervalMs, 3 * 3_600_000);
      for (const bucket of h.buckets) {
        const expected: Record<string, number> = {};
        for (const r of all) {
          if (r.receivedAt < bucket.start) continue;
          if (r.receivedAt >= bucket.start + h.intervalMs) break;
          expected[r.level] = (expected[r.level] ?? 0) + 1;
        }
        assert.deepEqual(bucket.counts, expected);
      }
    });
  } finally {
    kv.close();
  }
});

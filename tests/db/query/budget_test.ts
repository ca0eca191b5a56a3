/**
 * A query's work is bounded: a page that runs out of its budget answers
 * with what it found and a cursor that goes on from where it stopped, so a
 * search that must read everything never holds the thread, and following
 * the cursors still gives the exact answer.
 */
import assert from "node:assert/strict";
import { parseQuery, queryLogs } from "../../../db/query/mod.ts";
import type { LogRecord } from "../../../domain/entry.ts";
import { idTime } from "../../../domain/ids.ts";
import {
  queryProjectTest,
  recordAt,
  storeBatch,
  T0,
  withQueryProject,
} from "../../_helpers/query.ts";

async function store(kv: Deno.Kv, projectId: string): Promise<LogRecord[]> {
  const all: LogRecord[] = [];
  for (let b = 0; b < 40; b++) {
    const batch = Array.from(
      { length: 25 },
      (_, i) =>
        recordAt(T0 + (b * 25 + i) * 1000, {
          data: {
            title: "Tick",
            n: b * 25 + i,
            ...(b % 7 === 3 ? { odd: 1 } : {}),
          },
        }),
    );
    all.push(...batch);
    await storeBatch(kv, projectId, batch);
  }
  return all;
}

for (const order of ["newest", "oldest"] as const) {
  Deno.test(`a ${order}-first search that reads everything answers within its budget and its cursors give the exact answer`, async () => {
    await withQueryProject(async (kv, projectId) => {
      const all = await store(kv, projectId);
      const filter = parseQuery("data.odd:*");
      const expected = all.filter((r) => "odd" in r.data).map((r) => r.id);
      if (order === "newest") expected.reverse();
      const found: string[] = [];
      let cursor: string | undefined;
      let pages = 0;
      let partial = 0;
      for (;;) {
        const page = await queryLogs(kv, projectId, {
          filter,
          order,
          limit: 1000,
          budget: { chunks: 3 },
          ...(cursor === undefined ? {} : { cursor }),
        });
        pages++;
        assert.ok(
          page.stats.chunksRead <= 3,
          `${page.stats.chunksRead} chunks`,
        );
        found.push(...page.records.map((r) => r.id));
        if (page.searchedTo !== undefined) {
          partial++;
          // Everything on the searched side of the position was examined.
          const last = page.records.at(-1);
          if (last) {
            assert.ok(
              order === "newest"
                ? idTime(last.id) >= page.searchedTo
                : idTime(last.id) <= page.searchedTo,
            );
          }
        }
        if (page.cursor === null) break;
        cursor = page.cursor;
        assert.ok(pages < 100);
      }
      assert.deepEqual(found, expected);
      assert.ok(partial >= 10, `${partial} partial pages`);
    });
  });
}

queryProjectTest(
  "a page that runs out of time answers with a cursor named by its position",
  async (kv, projectId) => {
    await store(kv, projectId);
    let t = 0;
    const page = await queryLogs(kv, projectId, {
      filter: parseQuery("data.nope:*"),
      budget: { ms: 50, clock: () => (t += 20) },
    });
    assert.deepEqual(page.records, []);
    assert.match(page.cursor!, /^N[0-9a-f]{28}$/);
    assert.ok(page.searchedTo! > T0);
  },
);

queryProjectTest(
  "a cursor that is neither a record's nor a position's is refused",
  async (kv, projectId) => {
    for (
      const cursor of [
        "abc",
        "n123",
        "x" + "0".repeat(28),
        "N" + "9".repeat(400),
      ]
    ) {
      await assert.rejects(
        () => queryLogs(kv, projectId, { cursor }),
        /Cannot read cursor/,
      );
    }
  },
);

queryProjectTest(
  "8 searches that must read everything, at once, each stop within their time budget with a cursor",
  async (kv, projectId) => {
    for (let b = 0; b < 200; b++) {
      await storeBatch(
        kv,
        projectId,
        Array.from({ length: 50 }, (_, i) =>
          recordAt(T0 + (b * 50 + i) * 100, {
            data: { title: "Tick", n: b * 50 + i, pad: "x".repeat(200) },
          })),
      );
    }
    // One clock for the 8 searches, a millisecond further at each reading:
    // time passes only as they work, so every search runs out of its budget
    // after the same work on any machine, however busy.
    let t = 0;
    const clock = () => t++;
    const budgetMs = 50;
    const search = () =>
      queryLogs(kv, projectId, {
        filter: parseQuery("data.nope:*"),
        budget: { ms: budgetMs, clock },
      });
    const pages = await Promise.all(Array.from({ length: 8 }, search));
    for (const page of pages) {
      // Each reading of the clock is a millisecond, and each chunk read
      // is checked against it first: no more chunks than the budget has
      // milliseconds, far from a full scan of 200.
      assert.ok(
        page.stats.chunksRead <= budgetMs,
        `${page.stats.chunksRead} chunks`,
      );
      assert.deepEqual(page.records, []);
      assert.match(page.cursor ?? "", /^N[0-9a-f]{28}$/);
    }
  },
);

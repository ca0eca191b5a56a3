/**
 * A query's work is bounded: a page that runs out of its budget answers
 * with what it found and a cursor that goes on from where it stopped, so a
 * search that must read everything never holds the thread, and following
 * the cursors still gives the exact answer.
 */
import assert from "node:assert/strict";
import { parseQuery, queryLogs, tailLogs } from "../../../db/query/mod.ts";
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

Deno.test("a time budget stops a search within a chunk, and its cursors still give the exact answer", async () => {
  await withQueryProject(async (kv, projectId) => {
    const all = await store(kv, projectId); // 40 chunks of 25 entries
    const expected = all.map((r) => r.id).reverse();
    // Each reading of the clock is a millisecond later: a budget of 4 ms
    // runs out after a few lines, whatever the machine.
    let now = 0;
    const clock = () => now++;
    const found: string[] = [];
    let cursor: string | undefined;
    let pages = 0;
    for (;;) {
      const page = await queryLogs(kv, projectId, {
        filter: parseQuery("-data.none:*"),
        limit: 1000,
        budget: { ms: 4, clock },
        ...(cursor === undefined ? {} : { cursor }),
      });
      pages++;
      found.push(...page.records.map((r) => r.id));
      if (page.cursor === null) break;
      cursor = page.cursor;
      assert.ok(pages < 1000);
    }
    assert.deepEqual(found, expected);
    // Stopping only between chunks, it took at most one page a chunk.
    assert.ok(pages > 40, `${pages} pages`);
  });
});

Deno.test("a live tail's poll stops within its budget and the next poll goes on where it stopped, missing nothing", async () => {
  await withQueryProject(async (kv, projectId) => {
    const all = await store(kv, projectId);
    let now = 0;
    const clock = () => now++;
    const found: string[] = [];
    let afterId: string | null = null;
    for (let polls = 1;; polls++) {
      const poll: { records: LogRecord[]; lastId: string | null } =
        await tailLogs(kv, projectId, {
          afterId,
          filter: parseQuery("-data.none:*"),
          limit: 1000,
          now: T0 + 3_600_000,
          budget: { ms: 4, clock },
        });
      found.push(...poll.records.map((r) => r.id));
      if (poll.lastId === afterId && poll.records.length === 0) {
        assert.ok(polls > 40, `${polls} polls`);
        break;
      }
      afterId = poll.lastId;
      assert.ok(polls < 1000);
    }
    assert.deepEqual(found, all.map((r) => r.id));
  });
});

queryProjectTest(
  "a page cut before a chunk that straddles its cursor goes on from where it began: every entry once, both orders",
  async (kv, projectId) => {
    const records = Array.from(
      { length: 20 },
      (_, i) => recordAt(T0 + i * 1000),
    );
    // Two writers' chunks, overlapping in time.
    await storeBatch(kv, projectId, records.filter((_, i) => i % 2 === 0));
    await storeBatch(kv, projectId, records.filter((_, i) => i % 2 === 1));
    for (const order of ["newest", "oldest"] as const) {
      const seen: string[] = [];
      let cursor: string | undefined;
      for (let page = 0; page < 20; page++) {
        const answer = await queryLogs(kv, projectId, {
          order,
          limit: 5,
          ...(cursor ? { cursor } : {}),
          // The second page stops before its first chunk.
          ...(page === 1 ? { budget: { chunks: 1 } } : {}),
        });
        seen.push(...answer.records.map((r) => r.id));
        if (answer.cursor === null) break;
        cursor = answer.cursor;
      }
      assert.equal(seen.length, 20, `${order}: ${seen.length} handed out`);
      assert.equal(new Set(seen).size, 20, order);
    }
  },
);

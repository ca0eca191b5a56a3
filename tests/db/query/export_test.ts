/**
 * A page of the read API's export (db/query/export.ts): rows cut before the
 * page's size, never to none, with a cursor after the last row written; read
 * in parts, whose pages together are the listing's, each entry once.
 *
 * @module
 */
import assert from "node:assert/strict";
import {
  type ExportOptions,
  exportPage,
  MAX_PAGE_CHARS,
} from "../../../db/query/export.ts";
import { queryLogs } from "../../../db/query/query.ts";
import type { LogRecord } from "../../../domain/entry.ts";
import { csvRow } from "../../../domain/csv.ts";
import {
  queryProjectTest,
  recordAt,
  storeBatch,
  T0,
} from "../../_helpers/query.ts";

/** Every page from the first, following the cursors. */
async function allPages(
  kv: Deno.Kv,
  projectId: string,
  options: ExportOptions,
) {
  const pages = [];
  let cursor: string | undefined;
  do {
    const page = await exportPage(kv, projectId, {
      ...options,
      ...(cursor === undefined ? {} : { cursor }),
    });
    pages.push(page);
    cursor = page.cursor ?? undefined;
  } while (cursor !== undefined && pages.length < 100);
  return pages;
}

/** The ids in a page's NDJSON rows. */
function ids(rows: string[]): string[] {
  return rows.map((row) => JSON.parse(row).id);
}

queryProjectTest(
  "a page ends before its rows pass the page's size, never before its first entry, and the next goes on after it, in either order",
  async (kv, projectId) => {
    const third = Math.floor(MAX_PAGE_CHARS / 3) + 1000;
    const records: LogRecord[] = [1, 2, 3].map((n) =>
      recordAt(T0 + n * 1000, { data: { text: `${n}`.repeat(third) } })
    );
    records.push(
      recordAt(T0 + 4000, { data: { text: "x".repeat(MAX_PAGE_CHARS) } }),
    );
    await storeBatch(kv, projectId, records);
    const cases = [
      { order: "newest", csv: false, sizes: [1, 2, 1] },
      { order: "newest", csv: true, sizes: [1, 2, 1] },
      { order: "oldest", csv: false, sizes: [2, 1, 1] },
    ] as const;
    for (const { order, csv, sizes } of cases) {
      const pages = await allPages(kv, projectId, { csv, order, limit: 1000 });
      const name = `${order}, csv: ${csv}`;
      assert.deepEqual(pages.map((p) => p.rows.length), sizes, name);
      assert.equal(pages.at(-1)!.cursor, null, name);
      const inOrder = order === "newest" ? [...records].reverse() : records;
      assert.deepEqual(
        pages.flatMap((p) => csv ? p.rows : ids(p.rows)),
        inOrder.map((r) => csv ? csvRow(r) : r.id),
        name,
      );
    }
  },
);

queryProjectTest(
  "pages read in parts list each entry once, as one query's pages do",
  async (kv, projectId) => {
    const records = Array.from(
      { length: 730 },
      (_, i) => recordAt(T0 + i * 1000, { data: { title: "Tick", n: i } }),
    );
    for (let at = 0; at < records.length; at += 100) {
      await storeBatch(kv, projectId, records.slice(at, at + 100));
    }
    const pages = await allPages(kv, projectId, { csv: false, limit: 300 });
    assert.deepEqual(pages.map((p) => p.rows.length), [300, 300, 130]);
    const listed = (await queryLogs(kv, projectId, { limit: 1000 })).records;
    assert.deepEqual(
      pages.flatMap((p) => ids(p.rows)),
      listed.map((r) => r.id),
    );
  },
);

queryProjectTest(
  "a page's limit is bounded as a query's: at least one entry, at most 1,000",
  async (kv, projectId) => {
    const records = Array.from(
      { length: 1200 },
      (_, i) => recordAt(T0 + i * 1000, { data: { n: i } }),
    );
    await storeBatch(kv, projectId, records);
    for (const [limit, rows] of [[0, 1], [2.5, 2], [5000, 1000]]) {
      const page = await exportPage(kv, projectId, { csv: false, limit });
      assert.equal(page.rows.length, rows, `limit ${limit}`);
      assert.notEqual(page.cursor, null, `limit ${limit}`);
    }
  },
);

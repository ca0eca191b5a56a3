/**
 * Entries with thousands of members in the explorer: a page of 50 of them
 * stays within its size and memory budgets because each row shows a
 * preview (cut, saying so, with a link to the full entry), and the full
 * entry is one request away. Served on a real socket. The time such a page
 * takes is the dashboard benchmark's to measure (BENCHMARKS.md): here the
 * page's clock stands still, so a busy machine shows the same 50 rows.
 *
 * An entry of one long key above a thousand leaves opens in full within a
 * bound too: its rows show long paths cut in the middle, without links when
 * too long to filter by, and say so.
 *
 * @module
 */
import assert from "node:assert/strict";
import { QUERY_BUDGET_MS } from "../../db/query/query.ts";
import { EntryDetail, jsonStart } from "../../dashboard/pages/entry.tsx";
import { entryLinks } from "../../dashboard/pages/explorer_list.tsx";
import { readState } from "../../dashboard/explorer_state.ts";
import type { LogRecord } from "../../domain/entry.ts";
import { signedInTest, store } from "../_helpers/dashboard.ts";
import { serve } from "../_helpers/harness.ts";
import { wideData } from "../_helpers/dashboard_seed.ts";
import { peakRss } from "../_helpers/memory.ts";

/** Members of each entry's `data`. */
const KEYS = 5600;
/** Budgets of a page of such entries. */
const PAGE_BYTES = 2 * 1024 * 1024;
/** Against a hang only: a page takes about 1 s, 10 s on a busy machine. */
const PAGE_DEADLINE_MS = 120_000;
const PAGE_RSS = 100 * 1024 * 1024;

signedInTest(
  "a page of 50 entries of 5,600 members each stays within 2 MB and 100 MB, and each full entry is one request away",
  async (h, browser) => {
    const project = await h.project(["https://app.example.com"]);
    const bodies = Array.from({ length: 100 }, (_, i) => ({
      level: "info",
      data: { title: `Wide ${i}`, ...wideData(KEYS) },
    }));
    const stored = await store(h, project.id, bodies, 10);
    assert.equal(stored.length, 100);
    assert.ok(
      JSON.stringify(stored[0]!.data).length > 40_000,
      "each entry is large",
    );
    const server = serve((req, info) =>
      h.dash.fetch(req, { remoteAddr: info.remoteAddr })
    );
    const origin = `http://127.0.0.1:${server.addr.port}`;
    const fetchPage = async (path: string) => {
      const rss0 = Deno.memoryUsage().rss;
      const [res, peak] = await peakRss(async () => {
        const res = await fetch(`${origin}${path}`, {
          headers: { cookie: browser.cookie },
          signal: AbortSignal.timeout(PAGE_DEADLINE_MS),
        });
        return { status: res.status, html: await res.text() };
      });
      return { ...res, rss: peak - rss0 };
    };
    try {
      const p = `/projects/${project.id}`;
      const newest = stored.at(-1)!;
      const pages = {
        list: await fetchPage(p),
        open: await fetchPage(`${p}?open=${newest.id}`),
        pinned: await fetchPage(`${p}?open=${stored[0]!.id}`),
        context: await fetchPage(`${p}?around=${stored[50]!.id}`),
      };
      for (const [name, page] of Object.entries(pages)) {
        assert.equal(page.status, 200, name);
        const bytes = new TextEncoder().encode(page.html).length;
        console.log(
          `${name}: ${(bytes / 1024).toFixed(0)} KiB, RSS +${
            (page.rss / 1048576).toFixed(1)
          } MB`,
        );
        assert.ok(bytes <= PAGE_BYTES, `${name}: ${bytes} bytes`);
        assert.ok(page.rss <= PAGE_RSS, `${name}: RSS +${page.rss}`);
      }
      const list = pages.list.html;
      assert.equal(
        [...list.matchAll(/<details class="entry/g)].length,
        50,
        "a full page of rows",
      );
      assert.match(
        list,
        /Preview: \d+ of 56\d\d fields, the JSON cut short\./,
      );
      assert.match(
        list,
        /Not previewed: this page has shown as much as it may\./,
      );
      assert.match(list, /…<\/pre>/, "a cut JSON ends with an ellipsis");
      const link = new RegExp(
        `href="(/projects/${project.id}/entries/${newest.id})" data-fragment="([^"]+)"`,
      ).exec(list);
      assert.ok(link, "a link to the full entry");
      // The older page, as the script asks for it.
      const more = /data-fragment="([^"]+\/entries\?[^"]*cursor=[^"]+)"/.exec(
        list,
      )!;
      const older = await fetchPage(more[1]!.replaceAll("&amp;", "&"));
      assert.equal(older.status, 200);
      assert.ok(older.html.length <= PAGE_BYTES);
      // The full entry: its detail alone, and a page.
      const detail = await fetchPage(link[2]!.replaceAll("&amp;", "&"));
      assert.equal(detail.status, 200);
      assert.doesNotMatch(detail.html, /<html/);
      const lastKey = `k${(KEYS - 1).toString(36)}`;
      assert.match(
        detail.html,
        new RegExp(`&quot;${lastKey}&quot;: ${KEYS - 1}`),
      );
      assert.match(
        detail.html,
        /The first 1000 of 56\d\d fields; the JSON below has them all\./,
      );
      assert.match(detail.html, /Copy JSON/);
      const full = await fetchPage(link[1]!);
      assert.equal(full.status, 200);
      assert.match(full.html, /Back to the list/);
      assert.match(
        full.html,
        new RegExp(`&quot;${lastKey}&quot;: ${KEYS - 1}`),
      );
      console.log(
        `full entry: detail ${
          (detail.html.length / 1024).toFixed(0)
        } KiB, page ${(full.html.length / 1024).toFixed(0)} KiB`,
      );
      assert.ok(detail.rss <= PAGE_RSS && full.rss <= PAGE_RSS);
    } finally {
      await server.shutdown();
    }
  },
  // The page's time budget is not what is tested: its clock stands still,
  // so the page reads all its rows however busy the machine.
  { dashboard: { queryBudget: { ms: QUERY_BUDGET_MS, clock: () => 0 } } },
);

Deno.test("jsonStart writes the start of JSON.stringify(value, null, 2), exactly, and says when it cut", () => {
  const values: unknown[] = [
    null,
    'a\n"b"',
    42,
    [],
    {},
    [1, [2, []], { a: {} }],
    { a: 1, b: [true, null, "x"], c: { d: { e: "ü😀" } }, u: undefined },
    { __proto__: 1, "k\u0000": [undefined] },
    wideData(300),
  ];
  for (const value of values) {
    const whole = JSON.stringify(value, null, 2);
    assert.deepEqual(jsonStart(value, 1e9), { text: whole, cut: false });
    for (const limit of [0, 1, 7, 50, whole.length - 1, whole.length]) {
      const start = jsonStart(value, limit);
      assert.equal(start.text, whole.slice(0, limit));
      assert.equal(start.cut, limit < whole.length);
    }
  }
});

/** Characters of the long key of the entry the full entry page opens. */
const LONG_KEY_CHARS = 32 * 1024;

/** An entry's `data`: one key of `keyChars` above 1,000 leaves. */
function longKeyData(keyChars: number, char = "a"): Record<string, unknown> {
  return { [char.repeat(keyChars)]: wideData(1000) };
}

signedInTest(
  "an entry of one 32 KB key above 1,000 leaves opens in full within 2 MB, its paths cut in the middle and unlinked, saying so",
  async (h, browser) => {
    const project = await h.project(["https://app.example.com"]);
    const [record] = await store(h, project.id, [
      { level: "info", data: longKeyData(LONG_KEY_CHARS) },
    ]);
    const key = "a".repeat(LONG_KEY_CHARS);
    const page = `/projects/${project.id}/entries/${record!.id}`;
    for (const path of [page, `${page}?part=detail`]) {
      const started = performance.now();
      const res = await browser.get(path);
      assert.equal(res.status, 200, path);
      const html = await res.text();
      const ms = performance.now() - started;
      const bytes = new TextEncoder().encode(html).length;
      console.log(
        `${path}: ${(bytes / 1024).toFixed(0)} KiB, ${ms.toFixed(0)} ms`,
      );
      // It was 229 MB, each of the 1,000 rows writing the key six times.
      assert.ok(bytes <= PAGE_BYTES, `${bytes} bytes`);
      assert.equal(
        html.split(key).length - 1,
        1,
        "the key is whole once, in the JSON",
      );
      assert.match(html, /&quot;krr&quot;: 999\n/, "the JSON has every leaf");
      assert.match(
        html,
        /The first 1000 of 100\d fields; the JSON below has them all\./,
      );
      assert.match(
        html,
        /(\d+) fields have paths longer than 200 characters, shown cut in the middle; \1 of them, longer than 1,000 characters, have no links to filter by\. The JSON below has the paths whole\./,
      );
      const row =
        /<tr><th scope="row">(data\.a+…a+\.k0)<\/th><td><span class="value">0<\/span><\/td><td class="exclude"><\/td><\/tr>/
          .exec(html);
      assert.ok(row, "a long path's row: its start and end, no links");
      assert.equal(row[1]!.length, 200);
      assert.doesNotMatch(html, /<tr data-path="data\.a/);
    }
  },
);

Deno.test("the full entry writes at most 1,048,576 characters of paths, links paths of up to 1,000 characters and cuts none in half a surrogate pair", async () => {
  const links = entryLinks("", "p1", readState(new URLSearchParams()).state);
  const record = (data: Record<string, unknown>): LogRecord => ({
    id: "0".repeat(28),
    receivedAt: 0,
    level: "error",
    auth: "signature",
    data,
    device: {},
    context: {},
  });
  const render = async (data: Record<string, unknown>) =>
    await EntryDetail({ record: record(data), links, full: true }).toString();
  // Paths of 900 characters keep their links, until the budget is spent.
  const linked = await render(longKeyData(895, "b"));
  assert.ok(linked.length <= PAGE_BYTES, `${linked.length}`);
  const shown =
    /The first (\d+) of 1002 fields \(the table writes at most 1,048,576 characters of their paths\); the JSON below has them all\./
      .exec(linked);
  assert.ok(shown, "the table says where it stopped");
  assert.ok(Number(shown[1]) > 300 && Number(shown[1]) < 1000, shown[1]);
  assert.match(
    linked,
    /\d+ fields have paths longer than 200 characters, shown cut in the middle\. The JSON/,
  );
  assert.match(linked, /href="\/projects\/p1\?q=data\.b{895}\.k0%3A0"/);
  assert.match(
    linked,
    /title="Show only entries with data\.b+…b+\.k0 = this value"/,
  );
  // A path of emoji is cut between two of them, never inside one.
  const emoji = await render({
    ["😀".repeat(300)]: { ["é😀".repeat(100)]: 1 },
  });
  const th = /<th scope="row">(data\.[^<]+)<\/th>/.exec(emoji)![1]!;
  assert.match(th, /^data\.(?:😀)+…(?:é?😀)+$/u);
  assert.equal(new TextDecoder().decode(new TextEncoder().encode(th)), th);
  assert.match(emoji, /1 field has a path longer than 200 characters/);
  // Paths of up to 200 characters are written as before, pinnable.
  const plain = await render({ ["p".repeat(190)]: 1 });
  assert.match(
    plain,
    new RegExp(
      `<tr data-path="data\\.p{190}"><th scope="row">data\\.p{190}</th>`,
    ),
  );
  assert.doesNotMatch(plain, /shown cut/);
});

/**
 * The explorer through `app.request`: the list and its filters, the state
 * in the URL (permalinks down to one expanded entry), paging fragments and
 * "show in context".
 *
 * @module
 */
import assert from "node:assert/strict";
import { PAGE_SIZE } from "../../dashboard/routes/explorer.ts";
import type { LogRecord } from "../../domain/entry.ts";
import { type Harness, ORIGIN, postEntries } from "../_helpers/harness.ts";
import {
  openIds,
  rowIds,
  signedInProjectTest,
  store,
  textOf,
  withSignedIn,
} from "../_helpers/dashboard.ts";

/** Stores `count` random entries `stepMs` apart; the project's, oldest first. */
function storeMany(
  h: Harness,
  projectId: string,
  count: number,
  stepMs: number,
): Promise<LogRecord[]> {
  return store(h, projectId, Array.from({ length: count }, () => ({})), stepMs);
}

signedInProjectTest(
  "the explorer lists entries newest first with a histogram and the live tail switch",
  async (h, browser, project) => {
    const stored = await store(h, project.id, [{ level: "info" }, {
      level: "error",
    }, {
      level: "warning",
    }]);
    const html = await (await browser.get(`/projects/${project.id}`))
      .text();
    assert.deepEqual(rowIds(html), stored.map((r) => r.id).reverse());
    assert.match(html, /<figure class="histogram"/);
    assert.match(textOf(html), /3 entries · 1 h per bar/);
    assert.match(html, new RegExp(`data-tail="/projects/${project.id}/tail"`));
    assert.match(html, new RegExp(`data-after="${stored[2]!.id}"`));
    assert.match(html, /No older entries in this range/);
  },
);

Deno.test("a word query's histogram past the page's time budget shows its older bars uncounted", async () => {
  for (const [budgetMs, uncounted] of [[0, true], [60_000, false]] as const) {
    await withSignedIn(async (h, browser) => {
      const project = await h.project();
      // Three hours apart, the newer one in the newest bar.
      const declined = { data: { title: "Card declined" } };
      await store(h, project.id, [declined], 3 * 3_600_000);
      await store(h, project.id, [declined], 0);
      const html =
        await (await browser.get(`/projects/${project.id}?q=declined`)).text();
      assert.equal(rowIds(html).length, 2);
      const text = textOf(html);
      if (uncounted) {
        assert.match(html, /class="bucket uncounted"/);
        assert.match(text, /1 entry since .* older bars not counted/);
      } else {
        assert.doesNotMatch(html, /uncounted/);
        assert.match(text, /2 entries · 1 h per bar/);
      }
    }, { dashboard: { histogramBudgetMs: budgetMs } });
  }
});

Deno.test("the search box, level chips and time range filter the list", async (t) => {
  await withSignedIn(async (h, browser) => {
    const project = await h.project();
    const stored = await store(h, project.id, [
      { level: "info", context: { userId: "u-7" } },
      { level: "error", context: { userId: "u-42" } },
      {
        level: "error",
        context: { userId: "u-7" },
        data: { title: "Card declined" },
      },
    ], 20 * 60_000);
    const list = async (query: string) =>
      rowIds(
        await (await browser.get(`/projects/${project.id}${query}`))
          .text(),
      );
    await t.step("level chip", async () => {
      assert.deepEqual(await list("?level=error"), [
        stored[2]!.id,
        stored[1]!.id,
      ]);
    });
    await t.step("field term", async () => {
      assert.deepEqual(await list("?q=context.userId%3Au-7"), [
        stored[2]!.id,
        stored[0]!.id,
      ]);
    });
    await t.step(
      "excluded field and full text together with a chip",
      async () => {
        assert.deepEqual(await list("?q=-context.userId%3Au-42&level=error"), [
          stored[2]!.id,
        ]);
        assert.deepEqual(await list('?q="card declined"'), [stored[2]!.id]);
      },
    );
    await t.step("time preset", async () => {
      // The clock is 20 min past the newest entry.
      assert.deepEqual(await list("?range=15m"), []);
      assert.deepEqual(await list("?range=1h"), [stored[2]!.id, stored[1]!.id]);
    });
    await t.step("absolute range, which turns live tail off", async () => {
      const since = new Date(stored[1]!.receivedAt).toISOString();
      const until = new Date(stored[2]!.receivedAt).toISOString();
      const html = await (await browser.get(
        `/projects/${project.id}?since=${since}&until=${until}`,
      )).text();
      assert.deepEqual(rowIds(html), [stored[1]!.id]);
      assert.doesNotMatch(html, /id="live"/);
    });
  });
});

signedInProjectTest(
  "a field value in an expanded entry links to the view filtered by it, or without it",
  async (h, browser, project) => {
    await store(h, project.id, [{ context: { userId: "u 42", team: "a" } }]);
    const html = await (await browser.get(`/projects/${project.id}?level=info`))
      .text();
    const row = /<tr data-path="context.userId">(.*?)<\/tr>/.exec(html)![1]!;
    const [keep, drop] = [...row.matchAll(/href="([^"]+)"/g)].map((m) =>
      new URL(m[1]!.replaceAll("&amp;", "&"), "http://localhost")
    );
    assert.equal(keep!.searchParams.get("q"), 'context.userId:"u 42"');
    assert.equal(
      keep!.searchParams.get("level"),
      "info",
      "the rest of the state is kept",
    );
    assert.equal(drop!.searchParams.get("q"), '-context.userId:"u 42"');
    const filtered = await (await browser.get(keep!.pathname + keep!.search))
      .text();
    assert.equal(rowIds(filtered).length, 1);
    const excluded = await (await browser.get(drop!.pathname + drop!.search))
      .text();
    assert.equal(rowIds(excluded).length, 0);
  },
);

signedInProjectTest(
  "a malformed query is explained with its column, and lists nothing",
  async (h, browser, project) => {
    await store(h, project.id, [{}]);
    const res = await browser.get(
      `/projects/${project.id}?q=${encodeURIComponent('ok "open')}`,
    );
    assert.equal(res.status, 200);
    const html = await res.text();
    assert.match(
      textOf(html),
      /Cannot parse query at column 4: quoted text is not closed/,
    );
    assert.match(html, /<pre class="caret">ok &quot;open\n {3}\^<\/pre>/);
    assert.deepEqual(rowIds(html), []);
    assert.doesNotMatch(html, /id="live"/);
  },
);

signedInProjectTest(
  "a permalink shows the same view with one entry expanded, even pages down",
  async (h, browser, project) => {
    const stored = await storeMany(h, project.id, PAGE_SIZE + 5, 100);
    const deep = stored[2]!; // on the second page, newest first
    const html =
      await (await browser.get(`/projects/${project.id}?open=${deep.id}`))
        .text();
    assert.deepEqual(openIds(html), [deep.id]);
    assert.ok(rowIds(html).length > PAGE_SIZE, "the list reaches the entry");
    const other = await (await browser.get(
      `/projects/${project.id}?level=error&open=${deep.id}`,
    )).text();
    assert.match(textOf(other), /The linked entry does not match this view/);
    assert.deepEqual(openIds(other), [deep.id]);
  },
);

signedInProjectTest(
  "a permalink to an entry more than 200 rows down shows it pinned above the first page",
  async (h, browser, project) => {
    const stored = await storeMany(h, project.id, 4 * PAGE_SIZE + 3, 100);
    const far = stored[1]!; // row 4 × PAGE_SIZE + 2, newest first
    const html =
      await (await browser.get(`/projects/${project.id}?open=${far.id}`))
        .text();
    assert.deepEqual(openIds(html), [far.id]);
    assert.equal(rowIds(html).length, PAGE_SIZE + 1, "one page and the entry");
    assert.match(textOf(html), /The linked entry is too far down this list/);
    const near = stored[3]!; // row 4 × PAGE_SIZE, the last listed
    const listed =
      await (await browser.get(`/projects/${project.id}?open=${near.id}`))
        .text();
    assert.equal(rowIds(listed).length, 4 * PAGE_SIZE);
    assert.equal(rowIds(listed).at(-1), near.id);
    assert.doesNotMatch(textOf(listed), /linked entry/);
  },
);

signedInProjectTest(
  "older entries come as fragments by cursor, each entry once",
  async (h, browser, project) => {
    const stored = await storeMany(h, project.id, PAGE_SIZE * 2 + 3, 10);
    const seen: string[] = [];
    let html = await (await browser.get(`/projects/${project.id}`))
      .text();
    for (let i = 0; i < 5; i++) {
      seen.push(...rowIds(html));
      const next = /data-fragment="([^"]+)"/.exec(html)?.[1];
      if (!next) break;
      const res = await browser.get(next.replaceAll("&amp;", "&"));
      assert.equal(res.status, 200);
      html = await res.text();
      assert.doesNotMatch(html, /<html/, "a fragment, not a page");
    }
    assert.deepEqual(seen, stored.map((r) => r.id).reverse());
    assert.match(html, /No older entries in this range/);
  },
);

signedInProjectTest(
  "show in context lists the neighbours of an entry, unfiltered",
  async (h, browser, project) => {
    const stored = await store(h, project.id, [
      { level: "info" },
      { level: "warning" },
      { level: "error" },
      { level: "info" },
    ]);
    const target = stored[2]!;
    const html = await (await browser.get(
      `/projects/${project.id}?level=error&around=${target.id}&open=${target.id}`,
    )).text();
    assert.deepEqual(rowIds(html), stored.map((r) => r.id).reverse());
    assert.match(
      html,
      new RegExp(`class="entry lvl-error focus" id="e-${target.id}"`),
    );
    assert.match(textOf(html), /Back to the list/);
  },
);

Deno.test("a search that runs out of its budget says how far back it searched, and its link goes on from there", async () => {
  await withSignedIn(async (h, browser) => {
    const project = await h.project([ORIGIN]);
    for (let i = 0; i < 6; i++) {
      await postEntries(h, project.id, { origin: ORIGIN });
      await h.process();
      h.clock.advance(60_000);
    }
    const q = encodeURIComponent("data.nowhere:*");
    const res = await browser.get(`/projects/${project.id}?q=${q}&range=24h`);
    assert.equal(res.status, 200);
    const html = await res.text();
    assert.match(
      textOf(html),
      /Searched back to \d{4}-\d\d-\d\d \d\d:\d\d:\d\dZ? UTC in the time one page may take/,
    );
    const next = /id="more" href="([^"]+)"/.exec(html)?.[1]?.replaceAll(
      "&amp;",
      "&",
    );
    assert.ok(next, "a link goes on");
    assert.match(next, /cursor=N[0-9a-f]{28}/);
    const again = await browser.get(
      next.replace(/^.*?\/projects/, "/projects"),
    );
    assert.equal(again.status, 200);
  }, { dashboard: { queryBudget: { chunks: 2 } } });
});

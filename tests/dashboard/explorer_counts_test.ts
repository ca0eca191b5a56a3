/**
 * What the explorer counts besides listing, through `app.request`: the
 * facets beside the list (counts, shares, filter and exclude links, pinned
 * fields), a query's pipe as a table and chart with links to each row's
 * entries and a CSV, the histogram split by a field, and the source column.
 *
 * @module
 */
import assert from "node:assert/strict";
import {
  rowIds,
  signedInProjectTest,
  store,
  textOf,
  withSignedIn,
} from "../_helpers/dashboard.ts";

/** The HTML of the element of `html` that starts with `open` and ends with `close`. */
function part(html: string, open: string, close: string): string {
  const at = html.indexOf(open);
  assert.ok(at >= 0, `no ${open}`);
  return html.slice(at, html.indexOf(close, at) + close.length);
}

/** The links of `html`, as URLs. */
function hrefs(html: string): URL[] {
  return [...html.matchAll(/href="([^"]*)"/g)].map((m) =>
    new URL(m[1]!.replaceAll("&amp;", "&"), "http://dash.test")
  );
}

/** The facet of `field` on a page: its values' text, count and share. */
function facetOf(html: string, field: string) {
  const section = part(
    html,
    `<section class="facet" data-field="${field}">`,
    "</section>",
  );
  const items = [...section.matchAll(/<li data-count="(\d+)">(.*?)<\/li>/gs)];
  return {
    section,
    values: items.map((m) => textOf(m[2]!).trim().replace(/ −$/, "")),
    links: hrefs(section),
  };
}

/** Four api entries (three info, one error), one worker, one without a service. */
const ENTRIES = [
  { level: "info", context: { service: "api" } },
  { level: "info", context: { service: "api" } },
  { level: "error", context: { service: "api" }, data: { status: 502 } },
  { level: "info", context: { service: "api" }, data: { status: 200 } },
  { level: "error", context: { service: "worker" }, data: { status: 502 } },
  { level: "info", device: { host: "db-1" } },
];

signedInProjectTest(
  "the explorer's facets count the top values with their share, and link to filter and exclude each",
  async (h, browser, project) => {
    await store(h, project.id, ENTRIES);
    const html = await (await browser.get(`/projects/${project.id}`)).text();
    const service = facetOf(html, "context.service");
    assert.deepEqual(service.values, [
      "api 4 66.7%",
      "worker 1 16.7%",
      "(none) 1 16.7%",
    ]);
    const qs = service.links.map((u) => u.searchParams.get("q"));
    assert.deepEqual(qs, [
      "context.service:api",
      "-context.service:api",
      "context.service:worker",
      "-context.service:worker",
      "-context.service:*",
      "context.service:*",
    ]);
    assert.deepEqual(facetOf(html, "level").values, [
      "info 4 66.7%",
      "error 2 33.3%",
    ]);
    assert.deepEqual(facetOf(html, "origin").values, [
      "https://app.example.com 6 100.0%",
    ]);
    // The facets follow the query: a click's link shows the narrower counts.
    const narrowed = await (await browser.get(
      `/projects/${project.id}?q=${encodeURIComponent("level:error")}`,
    )).text();
    assert.deepEqual(facetOf(narrowed, "context.service").values, [
      "api 1 50.0%",
      "worker 1 50.0%",
    ]);
  },
);

signedInProjectTest(
  "a field pinned in the URL gets a facet of its own, which can be unpinned",
  async (h, browser, project) => {
    await store(h, project.id, ENTRIES);
    const html = await (await browser.get(
      `/projects/${project.id}?facet=data.status`,
    )).text();
    const status = facetOf(html, "data.status");
    assert.deepEqual(status.values, [
      "(none) 3 50.0%",
      "502 2 33.3%",
      "200 1 16.7%",
    ]);
    const unpin = status.links.find((u) =>
      part(status.section, "<h3>", "</h3>").includes("unpin") &&
      u.searchParams.get("facet") === null
    );
    assert.ok(unpin, "an unpin link without the facet");
    // The pin form keeps the view's state.
    const form = part(html, '<form class="pin"', "</form>");
    assert.match(form, /name="facet" value="data.status"/);
    assert.match(form, /<input type="text" name="facet"/);
    const bad = await browser.get(`/projects/${project.id}?facet=nonsense`);
    assert.match(
      textOf(await bad.text()),
      /Cannot pin "nonsense" to the facets/,
    );
  },
);

signedInProjectTest(
  "a query with a pipe shows its rows as a table and bars, each linking to its entries",
  async (h, browser, project) => {
    await store(h, project.id, ENTRIES);
    const q = "level:info | count by context.service";
    const html = await (await browser.get(
      `/projects/${project.id}?q=${encodeURIComponent(q)}&range=1h`,
    )).text();
    assert.deepEqual(rowIds(html), [], "no entry list");
    const table = part(html, '<table class="rows"', "</table>");
    const rows = [...table.matchAll(/<tr>(.*?)<\/tr>/gs)].slice(1);
    assert.deepEqual(rows.map((r) => textOf(r[1]!).trim()), [
      "api 3 Entries",
      "(none) 1 Entries",
    ]);
    const links = hrefs(table);
    assert.deepEqual(links.map((u) => u.searchParams.get("q")), [
      "level:info context.service:api",
      "level:info -context.service:*",
    ]);
    assert.ok(links.every((u) => u.searchParams.get("range") === "1h"));
    // The linked view lists exactly the row's entries.
    const listed = await (await browser.get(
      links[0]!.pathname + links[0]!.search,
    )).text();
    assert.equal(rowIds(listed).length, 3);
    const chart = part(html, '<figure class="rows-chart"', "</figure>");
    assert.match(textOf(chart), /api 3 .*\(none\) 1/);
    assert.doesNotMatch(html, /id="live"/, "no live tail for rows");
    // The rows as CSV, for a signed-in reader.
    const csvHref = hrefs(part(html, '<a href="', 'id="rows-csv"')).at(-1)!;
    assert.equal(csvHref.pathname, `/projects/${project.id}/rows.csv`);
    const csv = await browser.get(csvHref.pathname + csvHref.search);
    assert.equal(csv.status, 200);
    assert.match(csv.headers.get("content-type") ?? "", /text\/csv/);
    assert.equal(
      await csv.text(),
      "context.service,count\r\napi,3\r\n,1\r\n",
    );
    const none = await browser.get(`/projects/${project.id}/rows.csv?q=api`);
    assert.equal(none.status, 400);
    assert.match(await none.text(), /has no aggregation/);
  },
);

Deno.test("a pipe by time buckets is drawn as stacked bars, each row linked to its bucket", async () => {
  await withSignedIn(async (h, browser) => {
    const project = await h.project();
    const at = h.clock.now();
    await store(h, project.id, ENTRIES, 60_000);
    const q = "* | count by (time 1h, level)";
    const html = await (await browser.get(
      `/projects/${project.id}?q=${encodeURIComponent(q)}`,
    )).text();
    const chart = part(html, '<figure class="histogram"', "</figure>");
    assert.match(chart, /data-split="level"/);
    const counts = [...chart.matchAll(/data-counts="([^"]*)"/g)]
      .map((m) => JSON.parse(m[1]!.replaceAll("&quot;", '"')))
      .filter((c) => Object.keys(c).length > 0);
    // The clock starts on the hour: six entries a minute apart, one bucket.
    assert.equal(at % 3_600_000, 0);
    assert.deepEqual(counts, [{ info: 4, error: 2 }]);
    assert.match(textOf(chart), /info.*error|error.*info/);
    const table = part(html, '<table class="rows"', "</table>");
    const first = hrefs(table)[0]!;
    assert.equal(first.searchParams.get("q"), "level:info");
    const since = Date.parse(first.searchParams.get("since")!);
    const until = Date.parse(first.searchParams.get("until")!);
    assert.equal(until - since, 3_600_000);
    assert.equal(since % 3_600_000, 0);
  });
});

signedInProjectTest(
  "the histogram splits by a chosen field's top values, the rest as other",
  async (h, browser, project) => {
    const services = ["a", "a", "a", "b", "b", "c", "d", "e", "f", "g"];
    await store(
      h,
      project.id,
      services.map((service) => ({ context: { service } })),
      10,
    );
    const html = await (await browser.get(
      `/projects/${project.id}?split=context.service`,
    )).text();
    const chart = part(html, '<figure class="histogram"', "</figure>");
    assert.match(chart, /data-split="context.service"/);
    const legend = part(chart, '<ul class="legend"', "</ul>");
    assert.deepEqual(
      [...legend.matchAll(/<\/span>([^<]*)<\/li>/g)].map((m) => m[1]),
      ["a", "b", "c", "d", "e", "other"],
    );
    const counts = [...chart.matchAll(/data-counts="([^"]*)"/g)]
      .map((m) => JSON.parse(m[1]!.replaceAll("&quot;", '"')))
      .reduce((all, c) => {
        for (const [k, n] of Object.entries(c)) all[k] = (all[k] ?? 0) + n;
        return all;
      }, {} as Record<string, number>);
    assert.deepEqual(counts, { a: 3, b: 2, c: 1, d: 1, e: 1, other: 2 });
    assert.match(chart, /class="bar series-5"/);
    // The select keeps the rest of the view and names the choice.
    const form = part(html, '<form class="split"', "</form>");
    assert.match(form, /<option value="context.service" selected/);
    assert.match(form, /<option value="level"\s*>level</);
    const byLevel = await (await browser.get(`/projects/${project.id}`))
      .text();
    assert.doesNotMatch(byLevel, /data-split=/);
  },
);

signedInProjectTest(
  "the source column shows the service, else the device's host, else the origin, with the auth as a tag",
  async (h, browser, project) => {
    await store(h, project.id, [
      { context: { service: "checkout-api" }, device: { host: "web-3" } },
      { device: { host: "db-1" } },
      {},
    ]);
    const html = await (await browser.get(`/projects/${project.id}`)).text();
    const sources = [
      ...html.matchAll(
        /<span class="src"[^>]*>(.*?)<\/span>\s*<span class="msg"/gs,
      ),
    ]
      .map((m) => textOf(m[1]!).trim());
    assert.deepEqual(sources, [
      "https://app.example.com origin",
      "db-1 origin",
      "checkout-api origin",
    ]);
  },
);

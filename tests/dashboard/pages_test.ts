/**
 * The dashboard's render functions, given data (no KV): sender text is
 * inert, the pages say what they show, and the explorer's state survives
 * the round trip through its URL.
 *
 * @module
 */
import type { LogRecord } from "../../domain/entry.ts";
import assert from "node:assert/strict";
import {
  addTerm,
  fieldTerm,
  MAX_LEVEL_CHIPS,
  parseUtc,
  readState,
  stateFilter,
  stateQuery,
} from "../../dashboard/explorer_state.ts";
import { entryFields, EntryRow } from "../../dashboard/pages/entry.tsx";
import { entryLinks } from "../../dashboard/pages/explorer_list.tsx";
import { HistogramChart } from "../../dashboard/pages/histogram.tsx";
import type { PageContext } from "../../dashboard/pages/layout.tsx";
import { ProjectsPage } from "../../dashboard/pages/projects.tsx";
import { RejectionsPage } from "../../dashboard/pages/rejections.tsx";
import { snippetTexts } from "../../dashboard/pages/snippets.tsx";
import { parseQuery } from "../../dashboard/source.ts";
import { textOf } from "../_helpers/dashboard.ts";

const ctx: PageContext = {
  base: "/dashboard",
  nonce: "n0nce",
  csrf: "t0ken",
  assets: {
    "app.css": "/dashboard/assets/app.css?v=1",
    "app.js": "/dashboard/assets/app.js?v=1",
  },
  // These pages are rendered as an account that may open every page.
  opens: () => true,
  posts: () => true,
};

const HOSTILE = `<script>alert(1)</script><img src=x onerror=alert(2)>"'`;

function record(overrides: Partial<LogRecord> = {}): LogRecord {
  return {
    id: "019bc0feac44000000396a613652",
    receivedAt: Date.UTC(2026, 0, 15, 9, 31, 14, 372),
    level: "error",
    data: { title: "Payment failed", message: "Card declined", orderId: 1234 },
    device: { os: "iOS 18.2" },
    context: { userId: "u-42" },
    origin: "https://shop.example.com",
    auth: "origin",
    ...overrides,
  };
}

async function html(
  node: { toString(): string | Promise<string> },
): Promise<string> {
  return await node.toString();
}

Deno.test("sender-supplied text is inert in every place an entry is shown", async () => {
  const hostile = record({
    data: { title: HOSTILE, [HOSTILE]: HOSTILE },
    context: { userId: HOSTILE },
    origin: HOSTILE,
    level: "x",
  });
  const out = await html(
    EntryRow({
      record: hostile,
      links: entryLinks("", "p", readState(new URLSearchParams()).state),
    }),
  );
  assert.doesNotMatch(out, /<script>|<img/);
  assert.match(out, /&lt;script&gt;alert\(1\)&lt;\/script&gt;/);
  const projects = await html(ProjectsPage({
    ctx,
    data: {
      projects: [{
        id: "p1",
        name: HOSTILE,
        entriesDay: 0,
        rejectedDay: { count: 0, atLeast: false },
        accepted: 0,
        rejected: 0,
        lastEntryAt: null,
      }],
      now: 0,
      unknownProject: 0,
    },
  }));
  assert.doesNotMatch(projects, /<script>alert|<img src=x/);
  // Shown, as text.
  assert.match(projects, /&lt;script&gt;alert\(1\)&lt;\/script&gt;/);
});

Deno.test("the projects page marks a 24 h rejection count taken from a full ring as a lower bound", async () => {
  const row = {
    name: "Shop",
    entriesDay: 12_345,
    accepted: 99_000,
    rejected: 4_321,
    lastEntryAt: null,
  };
  const out = await html(ProjectsPage({
    ctx,
    data: {
      projects: [
        { ...row, id: "p1", rejectedDay: { count: 100, atLeast: true } },
        { ...row, id: "p2", rejectedDay: { count: 7, atLeast: false } },
      ],
      now: 0,
      unknownProject: 0,
    },
  }));
  const text = textOf(out);
  assert.match(text, /p1 12,345 ≥ 100 never 99,000 \/ 4,321/);
  assert.match(text, /p2 12,345 7 never/);
  assert.match(out, /href="\/dashboard\/projects\/p1\/rejections"/);
  assert.match(text, /counted from the last 100 the service keeps per project/);
});

Deno.test("an entry row summarises the entry and lists its fields with filter links", async () => {
  const state = readState(new URLSearchParams("q=timeout&level=error")).state;
  const out = await html(
    EntryRow({
      record: record(),
      links: entryLinks("/dashboard", "p1", state),
      open: true,
    }),
  );
  const text = textOf(out);
  assert.match(
    text,
    /2026-01-15 09:31:14\.372 error https:\/\/shop\.example\.com origin Payment failed — Card declined/,
  );
  assert.match(
    out,
    /<details class="entry lvl-error" id="e-019bc0feac44000000396a613652" data-id="019bc0feac44000000396a613652" open>/,
  );
  assert.match(
    out,
    /href="\/dashboard\/projects\/p1\?q=timeout\+context\.userId%3Au-42&amp;level=error"/,
  );
  assert.match(
    out,
    /href="\/dashboard\/projects\/p1\?q=timeout\+-data\.orderId%3A1234&amp;level=error"/,
  );
  assert.match(
    out,
    /href="\/dashboard\/projects\/p1\?q=timeout&amp;level=error&amp;around=019bc0feac44000000396a613652&amp;open=/,
  );
  assert.match(
    out,
    /&quot;receivedAt&quot;: &quot;2026-01-15T09:31:14\.372Z&quot;/,
  );
  assert.deepEqual(
    entryFields(record({ data: { "a b": 1, ok: true } })).map((
      f,
    ) => [f.path, f.value, f.linkable]),
    [
      ["level", "error", true],
      ["auth", "origin", true],
      ["origin", "https://shop.example.com", true],
      ["data.a b", "1", false],
      ["data.ok", "true", true],
      ["context.userId", "u-42", true],
      ["device.os", "iOS 18.2", true],
    ],
  );
});

/** 09:00 UTC on a day of the histogram tests; its bars are a minute each. */
const START = Date.UTC(2026, 0, 15, 9);

/**
 * The histogram of one-minute bars from {@linkcode START}, one per entry of
 * `counts`, counted from `countedFrom`; a bar zooms to `/zoom?from-to`.
 */
async function chartOf(
  counts: Record<string, number>[],
  countedFrom: number | null,
): Promise<string> {
  return await html(HistogramChart({
    histogram: {
      intervalMs: 60_000,
      buckets: counts.map((c, i) => ({ start: START + i * 60_000, counts: c })),
      countedFrom,
    },
    zoom: (a, b) => `/zoom?${a}-${b}`,
  }));
}

Deno.test("the histogram stacks levels and each bar zooms to its interval", async () => {
  const out = await chartOf([
    { info: 3, error: 1 },
    {},
    { critical: 2, audit: 1 },
  ], null);
  assert.equal(out.match(/<rect class="bar /g)?.length, 4);
  assert.match(out, new RegExp(`href="/zoom\\?${START}-${START + 60_000}"`));
  assert.match(out, /class="bar lvl-custom"/);
  assert.match(textOf(out), /7 entries · 1 min per bar · peak 4/);
  assert.doesNotMatch(out, /uncounted/);
});

Deno.test("the histogram draws bars it did not count apart and says so", async () => {
  const out = await chartOf([{}, {}, { error: 2 }], START + 120_000);
  assert.equal(out.match(/class="bucket uncounted"/g)?.length, 2);
  assert.equal(out.match(/<rect class="bar /g)?.length, 1);
  assert.match(out, new RegExp(`href="/zoom\\?${START}-${START + 60_000}"`));
  assert.match(
    textOf(out),
    /2 entries since 2026-01-15 09:02:00 · 1 min per bar · peak 2 · older bars not counted/,
  );
});

Deno.test("the explorer's state round-trips through its URL in canonical order", () => {
  const params = new URLSearchParams(
    "live=off&open=019bc0feac44000000396a613652&q=a+b&level=error,critical&since=2026-01-15T09:30",
  );
  const { state, problems } = readState(params);
  assert.deepEqual(problems, []);
  assert.equal(state.since, Date.UTC(2026, 0, 15, 9, 30));
  assert.equal(
    stateQuery(state),
    "?q=a+b&level=error%2Ccritical&since=2026-01-15T09%3A30%3A00.000Z&open=019bc0feac44000000396a613652&live=off",
  );
  assert.deepEqual(
    readState(new URLSearchParams(stateQuery(state))).state,
    state,
  );
  const bad = readState(
    new URLSearchParams("range=2w&since=yesterday&open=<x>&level=<b>"),
  );
  assert.deepEqual(bad.problems, [
    'Cannot use time range "2w": expected 15m, 1h, 24h or 7d',
    'Cannot read "since" time "yesterday": expected UTC such as 2026-01-15T09:30',
  ]);
  assert.equal(bad.state.open, undefined);
  assert.deepEqual(bad.state.levels, []);
  const many = Array.from({ length: 10_000 }, (_, i) => `l${i}`);
  assert.deepEqual(
    readState(new URLSearchParams({ level: many.join(",") })).state.levels,
    many.slice(0, MAX_LEVEL_CHIPS),
    "every link carries the chips: a bounded number of them",
  );
});

Deno.test("the state's filter joins the query, the chips and the time window", () => {
  const now = Date.UTC(2026, 0, 15, 12);
  const { state } = readState(
    new URLSearchParams("q=level:error,info+x&level=error,warning&range=1h"),
  );
  const filter = stateFilter(state, now);
  assert.deepEqual(filter.levels, ["error"]);
  assert.deepEqual(filter.text, ["x"]);
  assert.equal(filter.since, now + 1 - 3_600_000);
  assert.equal(filter.until, undefined, "a live view has no end");
});

Deno.test("field terms quote values the query syntax would split", () => {
  for (const value of ["u-42", "iOS 18.2", 'say "hi"', "", "*", "a\\b"]) {
    const term = fieldTerm("context.x", value);
    assert.deepEqual(parseQuery(term).fields, [{
      path: "context.x",
      op: "eq",
      value,
    }], term);
    assert.deepEqual(parseQuery(fieldTerm("context.x", value, true)).fields, [
      { path: "context.x", op: "neq", value },
    ]);
  }
  assert.equal(addTerm("", "a:b"), "a:b");
  assert.equal(addTerm(" x ", "a:b"), "x a:b");
  assert.equal(addTerm("x a:b", "a:b"), "x a:b");
  assert.equal(parseUtc("2026-01-15"), Date.UTC(2026, 0, 15));
  assert.equal(
    parseUtc("2026-01-15T09:30:05.5Z"),
    Date.UTC(2026, 0, 15, 9, 30, 5, 500),
  );
  assert.equal(parseUtc("15/01/2026"), null);
});

Deno.test("snippets carry the project id and endpoint and never a secret", () => {
  const texts = snippetTexts({
    projectId: "kVJnjiTjzH553YfV8uhZ4g",
    endpoint: "https://logs.example.com/api/v1/logs",
    origin: "https://shop.example.com",
  });
  assert.match(texts.curl, /-H 'Origin: https:\/\/shop\.example\.com'/);
  assert.match(texts.curl, /"projectId":"kVJnjiTjzH553YfV8uhZ4g"/);
  assert.match(
    texts.browser,
    /fetch\("https:\/\/logs\.example\.com\/api\/v1\/logs"/,
  );
  assert.match(texts.signed, /PROJECT_ID='kVJnjiTjzH553YfV8uhZ4g'/);
  assert.match(texts.signed, /"\$SECRET"/);
  // The signed body is compact JSON with the five members in order.
  const body = /BODY='([^']+)'/.exec(texts.signed)![1]!;
  assert.deepEqual(Object.keys(JSON.parse(body)), [
    "level",
    "projectId",
    "device",
    "context",
    "data",
  ]);
  assert.equal(JSON.stringify(JSON.parse(body)), body);
});

Deno.test("the rejections page shows kept entries inert, a replay button for one that can be replayed and none for one that cannot", async () => {
  const base = { at: 0, projectId: "p1", level: "info" };
  const out = await html(RejectionsPage({
    ctx,
    data: {
      project: { id: "p1", name: "Shop", allowedOrigin: [] },
      accepted: 5,
      replayed: 1,
      rejected: { bad_signature: 2, replayed: 1 },
      lastDay: { bad_signature: 2 },
      lastDayAtLeast: false,
      recent: [{
        entryId: "e1",
        at: 0,
        reason: "bad_signature",
        level: "info",
      }],
      kept: [
        {
          ...base,
          entryId: "e1",
          reason: "bad_signature",
          entry: {
            id: "e1",
            receivedAt: 0,
            level: "info",
            projectId: "p1",
            data: { title: HOSTILE },
            signature: HOSTILE,
            timestamp: "0",
          },
          expected: `p1{"level":"info","projectId":"p1","data":{"title":"x"}}0`,
        },
        { ...base, entryId: "e2", reason: "bad_origin", omittedBytes: 12_345 },
        {
          ...base,
          entryId: "e3",
          reason: "replayed",
          entry: {
            id: "e3",
            receivedAt: 0,
            level: "info",
            projectId: "p1",
            data: {},
          },
        },
        {
          ...base,
          entryId: "e4",
          reason: "bad_origin",
          entry: {
            id: "e4",
            receivedAt: 0,
            level: "info",
            projectId: "p1",
            data: {},
          },
        },
      ],
      keptReplayable: 1,
    },
  }));
  assert.doesNotMatch(out, /<script>alert|<img src=x/);
  const text = textOf(out);
  assert.match(text, /bad_signature 2 2 The signature does not match/);
  assert.match(text, /5 1 of them by a replay/);
  assert.match(text, /Python's json\.dumps default separators add spaces/);
  assert.match(
    out,
    /<pre class="expected" id="expected-e1">p1\{&quot;level&quot;/,
  );
  assert.match(text, /content was not kept: it took 12345 bytes/);
  assert.doesNotMatch(
    out,
    /name="entry" value="e1"/,
    "a replay cannot cure a bad signature",
  );
  assert.doesNotMatch(out, /name="entry" value="e2"/, "nothing to replay");
  assert.doesNotMatch(out, /name="entry" value="e3"/, "its signature is used");
  assert.match(out, /name="entry" value="e4"/, "a bad origin may be cured");
  assert.match(text, /Replay all 1 kept entry/);
});

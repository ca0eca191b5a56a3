/**
 * dashboard/source.ts, the provisional reader the dashboard uses until the
 * query module exists: the query syntax, paging by cursor, "show in
 * context", histograms and live tail, on entries stored by the real
 * pipeline.
 *
 * @module
 */
import assert from "node:assert/strict";
import type { LogRecord } from "../db/logs.ts";
import {
  aroundEntry,
  getEntry,
  histogram,
  parseQuery,
  queryLogs,
  QuerySyntaxError,
  tailLogs,
} from "../dashboard/source.ts";
import { matches } from "../dashboard/source_syntax.ts";
import { type Harness, randomEntry, withHarness } from "./_helpers.ts";

const ORIGIN = { Origin: "https://app.example.com" };

/** Stores one entry per `bodies` item, `stepMs` apart; returns them oldest first. */
async function store(
  h: Harness,
  projectId: string,
  bodies: Record<string, unknown>[],
  stepMs = 1000,
): Promise<LogRecord[]> {
  for (const body of bodies) {
    await h.post(randomEntry({ projectId, ...body }), ORIGIN);
    await h.process();
    h.clock.advance(stepMs);
  }
  return await h.logs(projectId);
}

Deno.test("parseQuery reads words, phrases, fields, exclusions, presence and levels", () => {
  assert.deepEqual(
    parseQuery(
      'Timeout "card declined" context.userId:42 -device.os:"iOS 18" data.x:* -appid:* level:error,critical',
    ),
    {
      text: ["timeout", "card declined"],
      fields: [
        { path: "context.userId", op: "eq", value: "42" },
        { path: "device.os", op: "neq", value: "iOS 18" },
        { path: "data.x", op: "exists" },
        { path: "appid", op: "missing" },
      ],
      levels: ["error", "critical"],
    },
  );
  assert.deepEqual(parseQuery("level>=warning"), { minLevel: "warning" });
  assert.deepEqual(parseQuery('data.quote:"say \\"hi\\""'), {
    fields: [{ path: "data.quote", op: "eq", value: 'say "hi"' }],
  });
  assert.deepEqual(parseQuery("   "), {});
});

Deno.test("parseQuery names the problem and its column", async (t) => {
  const cases: [string, number, RegExp][] = [
    ['ok "open', 4, /quote is never closed/],
    ["context.userId:", 16, /expected a value after "context.userId:"/],
    ["level>=loud", 8, /expected a standard level/],
    ["size>=3", 5, /applies to "level" only/],
    ["a.:b", 1, /expected a field name/],
  ];
  for (const [query, column, message] of cases) {
    await t.step(query, () => {
      assert.throws(() => parseQuery(query), (error) => {
        assert.ok(error instanceof QuerySyntaxError);
        assert.equal(error.column, column);
        assert.match(error.message, message);
        assert.match(error.message, new RegExp(`\\(column ${column}\\)$`));
        return true;
      });
    });
  }
});

Deno.test("matches compares field values as text and keeps entries without an excluded field", () => {
  const record: LogRecord = {
    id: "0".repeat(28),
    receivedAt: 0,
    level: "error",
    data: { status: 42, ok: false },
    device: "api-1",
    context: { userId: "u-1" },
    auth: "signature",
  };
  assert.equal(matches(record, parseQuery("data.status:42")), true);
  assert.equal(matches(record, parseQuery("data.ok:false")), true);
  assert.equal(matches(record, parseQuery("device:api-1")), true);
  assert.equal(matches(record, parseQuery("-context.env:prod")), true);
  assert.equal(matches(record, parseQuery("-context.userId:u-1")), false);
  assert.equal(matches(record, parseQuery("level>=warning")), true);
  assert.equal(matches(record, parseQuery("level>=critical")), false);
  assert.equal(matches(record, parseQuery("auth:signature U-1")), true);
  assert.equal(matches(record, parseQuery("origin:*")), false);
  assert.equal(
    matches({ ...record, level: "audit" }, parseQuery("level>=info")),
    false,
    "custom levels have no rank",
  );
});

Deno.test("queryLogs pages newest first by cursor, each entry once, while new ones arrive", async () => {
  await withHarness(async (h) => {
    const project = await h.project();
    const stored = await store(
      h,
      project.id,
      Array.from({ length: 7 }, () => ({})),
    );
    const seen: string[] = [];
    let cursor: string | undefined;
    for (let page = 0; page < 10; page++) {
      const result = await queryLogs(h.kv, project.id, {
        limit: 3,
        ...(cursor ? { cursor } : {}),
      });
      seen.push(...result.records.map((r) => r.id));
      if (page === 0) await store(h, project.id, [{}]); // arrives meanwhile
      if (result.cursor === null) break;
      cursor = result.cursor;
    }
    assert.deepEqual(seen, stored.map((r) => r.id).reverse());
  });
});

Deno.test("queryLogs applies the filter, the time range and the oldest-first order", async () => {
  await withHarness(async (h) => {
    const project = await h.project();
    const stored = await store(h, project.id, [
      { level: "info" },
      { level: "error", context: { userId: "42" } },
      { level: "warning" },
      { level: "error", context: { userId: "7" } },
    ]);
    const errors = await queryLogs(h.kv, project.id, {
      filter: parseQuery("level:error"),
    });
    assert.deepEqual(errors.records.map((r) => r.id), [
      stored[3]!.id,
      stored[1]!.id,
    ]);
    assert.equal(errors.cursor, null);
    const ranged = await queryLogs(h.kv, project.id, {
      filter: { since: stored[1]!.receivedAt, until: stored[3]!.receivedAt },
      order: "oldest",
    });
    assert.deepEqual(ranged.records.map((r) => r.id), [
      stored[1]!.id,
      stored[2]!.id,
    ]);
    const user = await queryLogs(h.kv, project.id, {
      filter: parseQuery("context.userId:42"),
    });
    assert.deepEqual(user.records.map((r) => r.id), [stored[1]!.id]);
  });
});

Deno.test("getEntry and aroundEntry find an entry and its neighbours, unfiltered", async () => {
  await withHarness(async (h) => {
    const project = await h.project();
    const stored = await store(
      h,
      project.id,
      Array.from({ length: 7 }, () => ({})),
    );
    const middle = stored[3]!;
    assert.deepEqual(await getEntry(h.kv, project.id, middle.id), middle);
    assert.equal(await getEntry(h.kv, project.id, "f".repeat(28)), null);
    assert.equal(await getEntry(h.kv, project.id, "not an id"), null);
    const around = await aroundEntry(h.kv, project.id, middle.id, 2);
    assert.deepEqual(around.before.map((r) => r.id), [
      stored[1]!.id,
      stored[2]!.id,
    ]);
    assert.equal(around.entry?.id, middle.id);
    assert.deepEqual(around.after.map((r) => r.id), [
      stored[4]!.id,
      stored[5]!.id,
    ]);
    const gone = await aroundEntry(h.kv, project.id, "0".repeat(28), 2);
    assert.deepEqual(gone, { before: [], entry: null, after: [] });
  });
});

Deno.test("histogram counts by level in bars sized to fit", async () => {
  await withHarness(async (h) => {
    const project = await h.project();
    const start = h.clock.now();
    await store(h, project.id, [
      { level: "info" },
      { level: "error" },
      { level: "info" },
    ], 60_000);
    const result = await histogram(h.kv, project.id, {
      since: start,
      until: start + 3_600_000,
    });
    assert.equal(result.intervalMs, 60_000);
    assert.equal(result.buckets.length, 60);
    assert.deepEqual(result.buckets.slice(0, 4).map((b) => b.counts), [
      { info: 1 },
      { error: 1 },
      { info: 1 },
      {},
    ]);
    const filtered = await histogram(h.kv, project.id, {
      since: start,
      until: start + 86_400_000,
      filter: parseQuery("level:info"),
    });
    assert.equal(filtered.intervalMs, 3_600_000);
    assert.equal(filtered.buckets.length, 24);
    assert.deepEqual(filtered.buckets[0]!.counts, { info: 2 });
  });
});

Deno.test("tailLogs returns entries after an id once they are settled", async () => {
  await withHarness(async (h) => {
    const project = await h.project();
    const stored = await store(
      h,
      project.id,
      [{}, { level: "error" }, {}],
      600,
    );
    // Received at 0, 600 and 1200 ms, the clock then at 1800 ms: the last
    // one (600 ms old) is not settled yet.
    const first = await tailLogs(h.kv, project.id, {
      afterId: stored[0]!.id,
      now: h.clock.now(),
    });
    assert.deepEqual(first.records.map((r) => r.id), [stored[1]!.id]);
    assert.equal(first.lastId, stored[1]!.id);
    h.clock.advance(1000);
    const second = await tailLogs(h.kv, project.id, {
      afterId: first.lastId,
      now: h.clock.now(),
    });
    assert.deepEqual(second.records.map((r) => r.id), [stored[2]!.id]);
    const errors = await tailLogs(h.kv, project.id, {
      afterId: stored[0]!.id,
      filter: parseQuery("level:error"),
      now: h.clock.now(),
    });
    assert.deepEqual(errors.records.map((r) => r.id), [stored[1]!.id]);
    assert.equal(
      errors.lastId,
      stored[2]!.id,
      "the start moves past non-matching entries",
    );
  });
});

import type { LogRecord } from "../../../domain/entry.ts";
import assert from "node:assert/strict";
import { matches, parseQuery, queryLogs } from "../../../db/query/mod.ts";
import {
  bloomAdd,
  bloomHas,
  bloomHash,
  createBloom,
} from "../../../db/storage/bloom.ts";
import { buildChunk, decodeChunkBlooms } from "../../../db/storage/chunk.ts";
import { compileFilter } from "../../../db/query/filter.ts";
import { containsTerm, termTokens } from "../../../db/storage/text.ts";
import { encodeRecordLine } from "../../../db/storage/lines.ts";
import { createId } from "../../../domain/ids.ts";
import { stepEachGives } from "../../_helpers/table.ts";
import {
  DAY,
  mergeAt,
  queryProjectTest,
  recordAt,
  storeBatch,
  T0,
} from "../../_helpers/query.ts";

function record(overrides: Partial<LogRecord> = {}): LogRecord {
  return {
    id: createId(T0),
    receivedAt: T0,
    level: "error",
    data: {
      title: "Checkout failed",
      message: 'Payment provider answered 502 for "order" ord_1234567; retry',
      status: 502,
      ok: false,
      tags: ["beta", "eu-west"],
      nested: { deep: { value: "Ünïcode Straße" } },
    },
    device: { os: "iOS 18", type: "mobile" },
    context: { userId: "user_42", sessionId: "s-0a1b2c3d", build: 42 },
    appid: "com.example.shop.ios",
    auth: "appid",
    ...overrides,
  };
}

Deno.test("full-text terms match whole words and phrases, case-insensitively, in every value", async (t) => {
  const r = record();
  const cases: [string, boolean][] = [
    ["checkout", true],
    ["CHECKOUT", true],
    ["check", false], // not a whole word
    ["failed", true],
    ['"checkout failed"', true],
    ['"failed checkout"', false],
    ["502", true], // a number's text, from the message and data.status
    ["50", false],
    ["ord_1234567", true], // `_` is part of a word
    ["ord", false],
    ['"\\"order\\""', true], // quotes inside a value
    ["straße", true], // non-ASCII letters
    ["strasse", false],
    ["eu-west", true], // array items, a phrase of two words
    ["eu", true],
    ["ios", true], // device values
    ["com.example.shop.ios", true], // appid
    ["user_42", true], // context values
    ["42", true], // a number in context
    ["mobile", true],
    ["title", false], // member names are not text
    ["error", false], // nor is the level
    ["appid", false], // nor is the auth method
    ["false", false], // nor booleans
    ["retry", true],
    ["-retry", false],
    ["-nothing", true],
    ["checkout -beta", false],
  ];
  await stepEachGives(t, (query) => matches(r, parseQuery(query)), cases);
});

Deno.test("field terms compare values as text on dotted paths", async (t) => {
  const r = record();
  const cases: [string, boolean][] = [
    ["context.userId:user_42", true],
    ["context.userId:USER_42", false], // values compare exactly
    ["context.build:42", true], // 42 matches "42"
    ["data.status:502", true],
    ["data.ok:false", true],
    ["data.tags.1:eu-west", true], // array items by index
    ["data.tags.length:2", false], // an array's length is no field
    ['data.tags:"[\\"beta\\",\\"eu-west\\"]"', true], // objects as JSON
    ['data.nested.deep.value:"Ünïcode Straße"', true],
    ["device.os:iOS", false],
    ['device.os:"iOS 18"', true],
    ["-device.os:Android", true],
    ["-context.userId:user_42", false],
    ["context.missing:*", false],
    ["-context.missing:*", true],
    ["appid:*", true],
    ["origin:*", false],
    ["auth:appid", true],
    ["level:error", true],
    ["level:error,critical", true],
    ["level:info", false],
    ["-level:error", false],
    ["level>=warning", true],
    ["level>=critical", false],
    [`id:${r.id}`, true],
    ["id:019b76daa80000000000ffffffff", false],
  ];
  await stepEachGives(t, (query) => matches(r, parseQuery(query)), cases);
  await t.step("custom levels rank below info", () => {
    const audit = record({ level: "audit" });
    assert.equal(matches(audit, parseQuery("level>=info")), false);
    assert.equal(matches(audit, parseQuery("level:audit")), true);
  });
  await t.step("a device sent as a string is one value", () => {
    const server = record({ device: "api-1" });
    assert.equal(matches(server, parseQuery("device:api-1")), true);
    assert.equal(matches(server, parseQuery("api")), true);
  });
  await t.step("time bounds: since inclusive, until exclusive", () => {
    assert.equal(matches(r, { since: T0, until: T0 + 1 }), true);
    assert.equal(matches(r, { since: T0 + 1 }), false);
    assert.equal(matches(r, { until: T0 }), false);
  });
});

Deno.test("containsTerm checks word boundaries on both ends, phrases included", () => {
  assert.equal(containsTerm("db error: timeout", "error"), true);
  assert.equal(containsTerm("3 errors", "error"), false);
  assert.equal(containsTerm("terror", "error"), false);
  assert.equal(containsTerm("errors and error", "error"), true);
  assert.equal(containsTerm("get /api/v1/users", "/api/v1"), true);
  assert.equal(containsTerm("get /api/v10", "/api/v1"), false);
  assert.equal(containsTerm("x-y", "-"), true);
  assert.deepEqual(termTokens("GET /api/v1 answered 502"), [
    "get",
    "api",
    "v1",
    "answered",
    "502",
  ]);
});

Deno.test("a Bloom filter never loses a member and rarely claims an absent one", () => {
  const members = Array.from({ length: 5000 }, (_, i) => `member-${i}`);
  const bloom = createBloom(members.length);
  for (const m of members) bloomAdd(bloom, bloomHash(m));
  for (const m of members) assert.ok(bloomHas(bloom, bloomHash(m)), m);
  let false_positives = 0;
  for (let i = 0; i < 20_000; i++) {
    if (bloomHas(bloom, bloomHash(`absent-${i}`))) false_positives++;
  }
  assert.ok(false_positives < 20_000 * 0.03, `${false_positives} false`);
});

Deno.test("a chunk's Bloom filters hold every token and field pair its entries can be found by", () => {
  const records = Array.from({ length: 1500 }, (_, i) =>
    record({
      id: createId(T0 + i),
      receivedAt: T0 + i,
      context: { userId: `user_${i}`, n: i },
      data: { title: `Title ${i}`, message: `Über ${i * 7} at /p/${i}` },
    }));
  const chunk = buildChunk(records.map(encodeRecordLine));
  const index = decodeChunkBlooms(chunk.bloomValue, chunk.summary.lastId);
  assert.equal(index.count, 1500);
  assert.equal(index.firstId, records[0]!.id);
  assert.deepEqual(index.levels, { error: 1500 });
  assert.ok(index.blooms.length > 1, `${index.blooms.length} blocks`);
  const blooms = index.blooms;
  for (const [i, r] of records.entries()) {
    for (
      const query of [
        `context.userId:user_${i}`,
        `context.n:${i}`,
        `"über ${i * 7}"`,
        `/p/${i}`,
        `title`,
        `device.os:"iOS 18"`,
        `appid:com.example.shop.ios`,
        `auth:appid`,
      ]
    ) {
      const filter = parseQuery(query);
      assert.ok(matches(r, filter), query);
      const { probes } = compileFilter(filter);
      assert.ok(probes.length > 0, query);
      assert.ok(
        blooms.some((b) => probes.every((p) => bloomHas(b, p))),
        query,
      );
    }
  }
  const absent = compileFilter(parseQuery("zanzibar")).probes;
  for (const b of blooms) {
    assert.equal(absent.every((p) => bloomHas(b, p)), false);
  }
});

queryProjectTest(
  "a search finds what a full scan finds before and after a merge: a capital sigma after an escape, a deep boolean or null",
  async (kv, projectId) => {
    const deep = {
      a: { b: { c: { d: { e: { f: { g: { ok: true, nil: null } } } } } } },
    };
    const records = [
      recordAt(T0 + 1000, { data: { message: "total\nΣ 42" } }),
      recordAt(T0 + 2000, { data: { message: "plain σ 42" } }),
      recordAt(T0 + 3000, { data: deep }),
      ...Array.from({ length: 5 }, (_, i) => recordAt(T0 + 4000 + i)),
    ];
    await storeBatch(kv, projectId, records);
    const queries = [
      "σ",
      "Σ",
      '"Σ 42"',
      "data.a.b.c.d.e.f.g.ok:true",
      "data.a.b.c.d.e.f.g.nil:null",
    ];
    for (const merged of [false, true]) {
      if (merged) await mergeAt(kv, projectId, T0 + DAY);
      for (const q of queries) {
        const filter = parseQuery(q);
        const scanned = records.filter((r) => matches(r, filter)).length;
        assert.ok(scanned > 0, q);
        const page = await queryLogs(kv, projectId, { filter });
        assert.equal(page.records.length, scanned, `${q}, merged: ${merged}`);
      }
    }
  },
);

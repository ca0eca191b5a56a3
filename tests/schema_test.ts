/**
 * The entry schema's fast path (`parseEntry`) against zod itself: on every
 * combination of member values below, whenever the fast path accepts a body,
 * zod accepts it too and returns an equal entry; and it leaves to zod every
 * body zod refuses. So the answers (and zod's messages) stay zod's.
 *
 * @module
 */
import assert from "node:assert/strict";
import { entrySchema, parseEntry } from "../routes/schema.ts";

const strings = (n: number) => "x".repeat(n);

/** Values tried for each member; `undefined` leaves the member out. */
const VALUES: Record<string, unknown[]> = {
  level: [
    undefined,
    "info",
    "custom_level-2",
    "Info",
    "",
    "a".repeat(33),
    "a".repeat(32),
    7,
    null,
    ["info"],
  ],
  projectId: [
    undefined,
    "p1",
    "",
    strings(128),
    strings(129),
    1,
    null,
    {},
  ],
  data: [
    undefined,
    {},
    { a: 1, nested: { __proto__: 1 } },
    JSON.parse('{"__proto__":{"x":1},"a":1}'),
    [],
    "text",
    null,
    0,
  ],
  device: [undefined, {}, { os: "Linux" }, "server-1", "", [], null, 3],
  context: [undefined, {}, { route: "/" }, "ctx", [], null],
  appid: [
    undefined,
    null,
    "com.example.app",
    "",
    strings(256),
    strings(257),
    5,
    {},
  ],
};

function* bodies(): Generator<Record<string, unknown>> {
  const names = Object.keys(VALUES);
  const pick = (i: number, body: Record<string, unknown>): Generator<
    Record<string, unknown>
  > =>
    (function* () {
      if (i === names.length) {
        yield body;
        return;
      }
      for (const value of VALUES[names[i]!]!) {
        const next = { ...body };
        if (value !== undefined) next[names[i]!] = value;
        yield* pick(i + 1, next);
      }
    })();
  yield* pick(0, {});
  yield JSON.parse('{"level":"info","projectId":"p","data":{},"extra":1}');
  yield JSON.parse(
    '{"level":"info","projectId":"p","data":{},"__proto__":{"level":1}}',
  );
}

Deno.test("the fast path of the entry schema answers as zod does", () => {
  let fast = 0;
  let tried = 0;
  for (const body of bodies()) {
    tried++;
    const quick = parseEntry(body);
    const zod = entrySchema.safeParse(body);
    if (quick === undefined) continue;
    fast++;
    assert.ok(zod.success, `zod refuses ${JSON.stringify(body)}`);
    assert.deepStrictEqual(quick, zod.data);
    assert.equal(JSON.stringify(quick), JSON.stringify(zod.data));
  }
  // Both outcomes are exercised: most combinations are refused.
  assert.ok(tried > 50_000, `${tried} bodies`);
  assert.ok(fast > 500, `${fast} accepted by the fast path`);
});

Deno.test("the fast path leaves a data member named __proto__ to zod", () => {
  const body = JSON.parse(
    '{"level":"info","projectId":"p","data":{"__proto__":{"a":1},"b":2}}',
  );
  assert.equal(parseEntry(body), undefined);
  const zod = entrySchema.parse(body);
  assert.equal(JSON.stringify(zod.data), '{"b":2}');
});

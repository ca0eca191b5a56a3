/**
 * The entry's one validator (`validateEntry`) against the zod schema the
 * endpoint applied before it, kept here as the reference of the answers: on
 * every combination of member values below, both accept the same bodies,
 * return equal entries, and refuse with the same issues, in the same order,
 * with the same messages. (A member named `__proto__` inside `data`, which
 * zod's copy dropped, is refused before validation: tests/routes/exact_values_test.ts.)
 *
 * @module
 */
import assert from "node:assert/strict";
import { z } from "zod";
import { LEVEL_PATTERN } from "../../domain/entry.ts";
import { validateEntry } from "../../routes/schema.ts";

const object = (name: string) =>
  z.looseObject({}, {
    error: (issue) =>
      issue.input === undefined
        ? `"${name}" is required`
        : `"${name}" must be an object`,
  });

/** The schema of the request body as zod said it, messages included. */
const reference = z.object({
  level: z.string({
    error: (issue) =>
      issue.input === undefined
        ? `"level" is required`
        : `"level" must be a string`,
  }).regex(LEVEL_PATTERN, {
    error:
      `"level" must be one of info, warning, error, critical, or a custom level matching ${LEVEL_PATTERN.source}`,
  }),
  projectId: z.string({
    error: (issue) =>
      issue.input === undefined
        ? `"projectId" is required`
        : `"projectId" must be a string`,
  }).min(1, { error: `"projectId" must not be empty` })
    .max(128, { error: `"projectId" must be at most 128 characters` }),
  data: object("data"),
  device: z.union([z.looseObject({}), z.string()], {
    error: `"device" must be an object or a string`,
  }).optional(),
  context: object("context").optional(),
  appid: z.string({ error: `"appid" must be a string` })
    .max(256, { error: `"appid" must be at most 256 characters` })
    .nullable().optional(),
});

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

Deno.test("the entry validator accepts and refuses as the reference schema, with its messages", () => {
  let accepted = 0;
  let tried = 0;
  for (const body of bodies()) {
    tried++;
    const checked = validateEntry(body);
    const zod = reference.safeParse(body);
    const text = JSON.stringify(body);
    if (Array.isArray(checked)) {
      assert.ok(!zod.success, `zod accepts ${text}`);
      assert.deepStrictEqual(
        checked,
        zod.error.issues.map((issue) => ({
          path: issue.path.map(String).join("."),
          message: issue.message,
        })),
        text,
      );
      continue;
    }
    accepted++;
    assert.ok(zod.success, `zod refuses ${text}`);
    assert.equal(JSON.stringify(checked), JSON.stringify(zod.data), text);
  }
  // Both outcomes are exercised: most combinations are refused.
  assert.ok(tried > 50_000, `${tried} bodies`);
  assert.ok(accepted > 500, `${accepted} accepted`);
});

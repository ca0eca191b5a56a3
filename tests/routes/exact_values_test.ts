/**
 * A 200 never alters data: inside `data`, `context` and `device`, whatever
 * `JSON.parse` and `JSON.stringify` would not keep as sent (a member named
 * `__proto__`, a name repeated in its object, an integer beyond ±(2^53 - 1),
 * a number that overflows, a number a double cannot hold exactly) is refused with a 400 naming its
 * path, and everything accepted is stored with the value it was sent with.
 *
 * @module
 */
import assert from "node:assert/strict";
import { scanJson } from "../../domain/json.ts";
import { harnessTest, ORIGIN, withHarness } from "../_helpers/harness.ts";

/** A body text whose `data` member is `data`, written as it is. */
function bodyWith(projectId: string, data: string, rest = ""): string {
  return `{"level":"info","projectId":"${projectId}","data":${data}${rest}}`;
}

Deno.test("a value a parse would change answers 400 invalid_body naming its path and why", async (t) => {
  await withHarness(async (h) => {
    const project = await h.project();
    /** POSTs a body with `data` (and `rest`) from the allowed origin. */
    const send = (data: string, rest = "") =>
      h.post(bodyWith(project.id, data, rest), { Origin: ORIGIN });
    const cases: [string, string, string, RegExp][] = [
      [
        "an integer beyond 2^53",
        `{"big":9007199254740993}`,
        "data.big",
        /integer beyond/,
      ],
      [
        "a negative integer beyond 2^53",
        `{"a":[-123456789012345678901]}`,
        "data.a.0",
        /integer beyond/,
      ],
      ["a number that overflows", `{"x":{"y":1e999}}`, "data.x.y", /too large/],
      [
        "a number that underflows to 0",
        `{"tiny":1e-400}`,
        "data.tiny",
        /cannot hold exactly/,
      ],
      [
        "a decimal a double rounds",
        `{"f":1.00000000000000001}`,
        "data.f",
        /cannot hold exactly/,
      ],
      [
        "a member named __proto__",
        `{"a":{"__proto__":{"x":1}}}`,
        "data.a.__proto__",
        /__proto__/,
      ],
      [
        "__proto__ spelled with escapes",
        String.raw`{"\u005f_proto__":1}`,
        "data.__proto__",
        /__proto__/,
      ],
      [
        "__proto__ inside an array",
        `{"list":[1,{"__proto__":2}]}`,
        "data.list.1.__proto__",
        /__proto__/,
      ],
      [
        "a name repeated in an object",
        `{"a":{"x":1,"y":2,"x":3}}`,
        "data.a.x",
        /more than once/,
      ],
      [
        "a name repeated once decoded",
        String.raw`{"a":1,"\u0061":2}`,
        "data.a",
        /more than once/,
      ],
    ];
    for (const [name, data, path, why] of cases) {
      await t.step(name, async () => {
        const res = await send(data);
        assert.equal(res.status, 400);
        const { error } = await res.json();
        assert.equal(error.code, "invalid_body");
        assert.equal(error.issues.length, 1, JSON.stringify(error.issues));
        assert.equal(error.issues[0].path, path);
        assert.match(error.issues[0].message, why);
        assert.ok(error.issues[0].message.startsWith(`"${path}"`));
      });
    }
    await t.step(
      "in context and device too, with every issue listed",
      async () => {
        const res = await send(
          `{"ok":1}`,
          `,"context":{"n":18446744073709551616},"device":{"m":[1e400]}`,
        );
        assert.equal(res.status, 400);
        const { error } = await res.json();
        assert.deepEqual(error.issues.map((i: { path: string }) => i.path), [
          "context.n",
          "device.m.0",
        ]);
        assert.match(error.issues[0].message, /send it as a string/);
      },
    );
    await t.step(
      "the same name in different objects is no repetition",
      async () => {
        const res = await send(
          `{"a":{"x":1},"b":{"x":2},"l":[{"x":1},{"x":2}]}`,
        );
        assert.equal(res.status, 200);
      },
    );
    await t.step(
      "a member outside the stored ones is not checked",
      async () => {
        const res = await send("{}", `,"ignored":{"n":1e999,"__proto__":1}`);
        assert.equal(res.status, 200);
      },
    );
    await h.process();
    const stored = await h.logs(project.id);
    assert.equal(stored.length, 2, "only the last two bodies were accepted");
    assert.deepEqual(stored[0]!.data, {
      a: { x: 1 },
      b: { x: 2 },
      l: [{ x: 1 }, { x: 2 }],
    });
    assert.deepEqual(stored[1]!.data, {});
  });
});

harnessTest(
  "every number a double holds exactly is accepted and stored with the value sent",
  async (h) => {
    const project = await h.project();
    const numbers = [
      "0",
      "-0",
      "1.0",
      "1e2",
      "1E+2",
      "0.1",
      "-0.5",
      "0.30000000000000004",
      "9007199254740991",
      "-9007199254740991",
      "1e300",
      "1.7976931348623157e308",
      "5e-324",
      "123.456000",
      "0.00001",
      "1e21",
      "12345678901234567e3",
    ];
    const data = `{${numbers.map((n, i) => `"n${i}":${n}`).join(",")},` +
      `"nested":{"a":[1.5,{"b":-2.25}]},"text":"__proto__ as a value"}`;
    const sent = bodyWith(project.id, data);
    const res = await h.post(sent, { Origin: ORIGIN });
    assert.equal(res.status, 200, await res.text());
    await h.process();
    const [record] = await h.logs(project.id);
    assert.ok(record);
    const stored = record.data as Record<string, unknown>;
    numbers.forEach((text, i) => {
      // The value kept is the value of the text sent, digit for digit.
      // (`===`: -0 is stored as 0, the same decimal value.)
      assert.ok(stored[`n${i}`] === Number(text), text);
      const written = JSON.stringify(stored[`n${i}`]);
      assert.ok(
        sameDecimal(written, text) || (text === "-0" && written === "0"),
        `${text} was stored as ${written}`,
      );
    });
    assert.deepEqual(stored.nested, { a: [1.5, { b: -2.25 }] });
    assert.equal(stored.text, "__proto__ as a value");
  },
);

Deno.test("scanJson leaves numbers and names inside strings alone", () => {
  const exact = new Set(["data", "context", "device"]);
  const text = JSON.stringify({
    level: "info",
    projectId: "p",
    data: { s: "1e999 and 9007199254740993", "k:1e999": [true, null] },
  });
  assert.equal(scanJson(text, 32, false, exact).inexact, undefined);
});

/** Whether two decimal number texts have the same value (by BigInt scaling). */
function sameDecimal(a: string, b: string): boolean {
  const parse = (text: string): [bigint, number] => {
    const [mantissa, exponent = "0"] = text.toLowerCase().split("e");
    const [whole, fraction = ""] = mantissa!.split(".");
    return [BigInt(whole! + fraction), Number(exponent) - fraction.length];
  };
  const [ma, ea] = parse(a);
  const [mb, eb] = parse(b);
  const shift = Math.min(ea, eb);
  return ma * 10n ** BigInt(ea - shift) === mb * 10n ** BigInt(eb - shift);
}

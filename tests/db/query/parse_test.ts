import assert from "node:assert/strict";
import {
  andFilters,
  type Filter,
  parseQuery,
  QuerySyntaxError,
} from "../../../db/query/mod.ts";

Deno.test("parseQuery reads every form of the syntax", async (t) => {
  const cases: [string, Filter][] = [
    ["", {}],
    ["   ", {}],
    ["timeout", { text: ["timeout"] }],
    ["Timeout DB", { text: ["timeout", "db"] }],
    ['"Payment failed"', { text: ["payment failed"] }],
    ['"say \\"hi\\" \\\\ now"', { text: ['say "hi" \\ now'] }],
    ["-timeout", { notText: ["timeout"] }],
    ['-"payment failed"', { notText: ["payment failed"] }],
    [
      "context.userId:user_42",
      { fields: [{ path: "context.userId", op: "eq", value: "user_42" }] },
    ],
    [
      'data.title:"Checkout failed"',
      { fields: [{ path: "data.title", op: "eq", value: "Checkout failed" }] },
    ],
    [
      "-device.os:iOS",
      { fields: [{ path: "device.os", op: "neq", value: "iOS" }] },
    ],
    ["context.release:*", {
      fields: [{ path: "context.release", op: "exists" }],
    }],
    ["-appid:*", { fields: [{ path: "appid", op: "missing" }] }],
    ["level:error", { levels: ["error"] }],
    ["level:error,critical", { levels: ["error", "critical"] }],
    ["level:error,critical level:critical,info", { levels: ["critical"] }],
    ["level:audit", { levels: ["audit"] }],
    ["-level:info,warning", {
      fields: [
        { path: "level", op: "neq", value: "info" },
        { path: "level", op: "neq", value: "warning" },
      ],
    }],
    ["level>=warning", { minLevel: "warning" }],
    ["level>=warning level>=error level>=info", { minLevel: "error" }],
    ["auth:signature origin:https://app.example.com", {
      fields: [
        { path: "auth", op: "eq", value: "signature" },
        { path: "origin", op: "eq", value: "https://app.example.com" },
      ],
    }],
    ["data.status:502 AND timeout", {
      text: ["timeout"],
      fields: [{ path: "data.status", op: "eq", value: "502" }],
    }],
    ["and or", { text: ["and", "or"] }],
    ["https://shop.example.com/cart 10:30 a=b e.g.", {
      text: ["https://shop.example.com/cart", "10:30", "a=b", "e.g."],
    }],
    ["data:*", { fields: [{ path: "data", op: "exists" }] }],
    ["data.http-code:x", {
      fields: [{ path: "data.http-code", op: "eq", value: "x" }],
    }],
  ];
  for (const [query, expected] of cases) {
    await t.step(query === "" ? "(empty)" : query, () => {
      assert.deepEqual(parseQuery(query), expected);
    });
  }
});

Deno.test("parseQuery refuses malformed queries in one line naming the column", async (t) => {
  const cases: [string, number, RegExp][] = [
    ['timeout "payment', 9, /quoted text is not closed/],
    ['data.title:"open', 12, /quoted text is not closed/],
    ['"a"b', 4, /expected a space after the closing quote/],
    ['""', 1, /the quoted phrase is empty/],
    ["a - b", 3, /expected a term after -/],
    ["(a b)", 1, /parentheses are not supported/],
    ["a OR b", 3, /OR is not supported/],
    ["NOT a", 1, /NOT is not supported: write -term/],
    ["context.userId:", 16, /expected a value after "context.userId:"/],
    ["level:", 7, /expected a value after "level:"/],
    ["level>=loud", 8, /expected one of info, warning, error, critical/],
    ["-level>=error", 1, /cannot be negated/],
    ["data.status>=500", 12, /only level>=LEVEL compares/],
    ["level=error", 6, /expected "level:VALUE"/],
    ["x level:error,Bad", 15, /"Bad" is not a level/],
    ["level:error,", 13, /"" is not a level/],
    ["a user:abc", 3, /unknown field "user"/],
    ["context..userId:1", 8, /expected a name after "context."/],
    ['say"hi"', 4, /unexpected quote inside a word/],
  ];
  for (const [query, column, message] of cases) {
    await t.step(query, () => {
      let caught: unknown;
      try {
        parseQuery(query);
      } catch (e) {
        caught = e;
      }
      assert.ok(caught instanceof QuerySyntaxError, `accepted ${query}`);
      assert.equal(caught.column, column, caught.message);
      assert.match(caught.message, message);
      assert.match(caught.message, new RegExp(`at column ${column}:`));
      assert.equal(caught.message.includes("\n"), false);
    });
  }
});

Deno.test("andFilters intersects ranges and level sets and joins terms", () => {
  // One row a member: its value in a, in b, and in the two together.
  const exists = [{ path: "auth", op: "exists" }];
  const members: [keyof Filter, unknown, unknown, unknown][] = [
    ["since", 10, 20, 20],
    ["until", 100, 200, 100],
    ["levels", ["info", "error"], ["error", "critical"], ["error"]],
    ["minLevel", "info", "warning", "warning"],
    ["text", ["a"], ["b"], ["a", "b"]],
    ["notText", undefined, ["c"], ["c"]],
    ["fields", exists, undefined, exists],
  ];
  const filter = (column: 1 | 2 | 3): Filter =>
    Object.fromEntries(
      members.filter((row) => row[column] !== undefined)
        .map((row) => [row[0], row[column]]),
    );
  assert.deepEqual(andFilters(filter(1), filter(2)), filter(3));
  assert.deepEqual(andFilters({}, {}), {});
  assert.deepEqual(andFilters({ levels: ["info"] }, {}), { levels: ["info"] });
  assert.deepEqual(andFilters({ levels: ["info"] }, { levels: ["error"] }), {
    levels: [],
  });
});

Deno.test("a query of more than 64 terms is refused, naming the first term past them", () => {
  const terms = Array.from({ length: 65 }, (_, i) => `-w${i}`);
  assert.equal(
    parseQuery(terms.slice(0, 64).join(" ")).notText?.length,
    64,
  );
  assert.throws(
    () => parseQuery(terms.join(" ")),
    (error: unknown) =>
      error instanceof QuerySyntaxError &&
      error.column === terms.slice(0, 64).join(" ").length + 2 &&
      /more than 64 terms/.test(error.message),
  );
});

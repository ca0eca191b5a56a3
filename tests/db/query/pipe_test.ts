/**
 * The aggregation pipe at the end of a query: what each form parses to,
 * and malformed pipes refused with the column of the problem.
 *
 * @module
 */
import assert from "node:assert/strict";
import {
  parseQuery,
  parseSearch,
  QuerySyntaxError,
} from "../../../db/query/mod.ts";

Deno.test("a pipe ends a query: count, count by, top, uniq", () => {
  assert.deepEqual(parseSearch("level>=error | count"), {
    filter: { minLevel: "error" },
    pipe: { op: "count", by: [], column: 14 },
  });
  assert.deepEqual(
    parseSearch("level>=error | count by (time 1h, context.service)").pipe,
    {
      op: "count",
      by: [
        { kind: "time", ms: 3_600_000, label: "1h" },
        { kind: "field", path: "context.service" },
      ],
      column: 14,
    },
  );
  assert.deepEqual(parseSearch("* | count by level").pipe, {
    op: "count",
    by: [{ kind: "field", path: "level" }],
    column: 3,
  });
  assert.deepEqual(parseSearch("* | top 10 context.userId"), {
    filter: {},
    pipe: { op: "top", n: 10, field: "context.userId", column: 3 },
  });
  assert.deepEqual(parseSearch('"a | b" | uniq device.os'), {
    filter: { text: ["a | b"] },
    pipe: { op: "uniq", field: "device.os", column: 9 },
  });
  assert.deepEqual(parseSearch("timeout"), {
    filter: { text: ["timeout"] },
    pipe: null,
  });
  for (const bucket of ["1m", "5m", "15m", "1h", "1d"]) {
    assert.equal(
      parseSearch(`| count by (time ${bucket}, appid, origin)`).pipe?.op,
      "count",
    );
  }
});

Deno.test("malformed pipes are refused with the column of the problem", () => {
  const cases: [string, number, RegExp][] = [
    ["x | sum data.n", 5, /expected count, top or uniq after "\|"/],
    ["x |", 4, /expected count, top or uniq/],
    ["x | count by (time 2h)", 20, /expected a bucket after time: one of 1m/],
    ["x | count by (level, data.status", 33, /expected "," or "\)"/],
    ["x | count by", 13, /expected a field after count by/],
    ["x | top 0 level", 9, /expected a number from 1 to 1000 after top/],
    ["x | top 10", 11, /expected a field after top 10/],
    ["x | uniq title", 10, /"title" is not a field to aggregate/],
    ["x | count | top 1 level", 11, /only one aggregation may end a query/],
    ["x | count extra", 11, /unexpected "extra" after the aggregation/],
    [
      "x | count by (level, appid, origin, auth, data.a)",
      49,
      /at most 4 fields/,
    ],
  ];
  for (const [query, column, message] of cases) {
    assert.throws(
      () => parseSearch(query),
      (error) =>
        error instanceof QuerySyntaxError && error.column === column &&
        message.test(error.detail),
      query,
    );
  }
});

Deno.test("parseQuery, which lists entries, refuses a pipe", () => {
  assert.throws(
    () => parseQuery("level:error | count"),
    (error) =>
      error instanceof QuerySyntaxError && error.column === 13 &&
      /aggregation .* is not accepted here/.test(error.detail),
  );
  assert.deepEqual(parseQuery("*"), {});
});

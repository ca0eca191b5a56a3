/**
 * The largest groups of a tally: `top N` keeps the N best as the groups go
 * by instead of sorting them all, and answers what a full sort answers.
 */
import assert from "node:assert/strict";
import { Distinct, Groups, MAX_CELL_CHARS } from "../../../db/query/tally.ts";

Deno.test("the largest n groups are those of a full sort, ties in value order, for any n", () => {
  let x = 7;
  const next = () => (x = Math.imul(x ^ (x >>> 13), 0x5bd1e995) >>> 0) % 50;
  const groups = new Groups(100_000);
  for (let i = 0; i < 20_000; i++) {
    const value = next();
    groups.add([value % 3 === 0 ? null : `user_${value}`], 1 + (value % 4));
  }
  const sorted = [...groups.map.values()].sort((a, b) =>
    b.count - a.count ||
    (a.cells[0] === null ? 1 : b.cells[0] === null ? -1 : 0) ||
    (String(a.cells[0]) < String(b.cells[0]) ? -1 : 1)
  );
  for (const n of [1, 3, 10, 12, 49, 50, 60]) {
    assert.deepEqual(groups.largest(n), sorted.slice(0, n), `n = ${n}`);
  }
});

Deno.test("a long text is grouped and answered by its first 1,000 characters, and counted distinct exactly by a digest", () => {
  const head = "x".repeat(MAX_CELL_CHARS);
  const a = head + "a".repeat(60_000);
  const b = head + "b".repeat(60_000);
  const groups = new Groups(100);
  groups.add([a]);
  groups.add([b]);
  groups.add(["short"]);
  const [long, short] = groups.largest(2);
  assert.equal(long!.count, 2, "one group of the two long values");
  assert.equal(long!.cells[0], head + "…");
  assert.deepEqual(short!.cells, ["short"]);
  const distinct = new Distinct(100);
  for (const value of [a, b, a, "short", head + "…"]) distinct.add(value);
  assert.equal(distinct.count, 4);
});

Deno.test("groups of several fields stay apart whatever their texts hold", () => {
  const groups = new Groups(10);
  groups.add(["x\u0000sy", "z"]);
  groups.add(["x", "y\u0000sz"]);
  groups.add(["x", "y\u0000sz"]);
  assert.deepEqual(
    [...groups.map.values()].map((g) => [g.cells, g.count]),
    [[["x\u0000sy", "z"], 1], [["x", "y\u0000sz"], 2]],
  );
});

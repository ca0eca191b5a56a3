/**
 * A read gives the event loop a turn once its slice has passed, and only
 * then: before it, awaiting costs no timer.
 *
 * @module
 */
import assert from "node:assert/strict";
import { SLICE_MS, turnTaker } from "../../../db/query/turns.ts";

Deno.test("a turn is given once the slice has passed since the last, and not before", async () => {
  let now = 0;
  const turn = turnTaker(SLICE_MS, () => now);
  now = SLICE_MS - 1;
  assert.equal(turn(), undefined, "within the slice: no turn");
  // A timer set before the turn runs before it resolves: it waited for one.
  let timerRan = false;
  setTimeout(() => timerRan = true, 0);
  now = SLICE_MS;
  const given = turn();
  assert.ok(given instanceof Promise, "past the slice: a turn");
  await given;
  assert.ok(timerRan, "the event loop ran a timer first");
  assert.equal(turn(), undefined, "the slice counts again from the turn");
});

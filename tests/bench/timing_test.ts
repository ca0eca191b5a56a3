import assert from "node:assert/strict";
import { median, timeRuns } from "../../bench/timing.ts";

Deno.test("median takes the middle value, the upper one of an even count, 0 of none", () => {
  assert.equal(median([5, 1, 3]), 3);
  assert.equal(median([4, 1, 3, 2]), 3);
  assert.equal(median([]), 0);
});

Deno.test("timeRuns runs once, then the given number of times more, and answers the first run's value and time and the others' median", async () => {
  let calls = 0;
  let now = 0;
  // Run n takes 10 × n ms: the first 10, the next five 20 to 60.
  const { first, firstMs, medianMs } = await timeRuns(
    () => {
      calls++;
      now += 10 * calls;
      return Promise.resolve(calls);
    },
    5,
    () => now,
  );
  assert.equal(calls, 6);
  assert.equal(first, 1);
  assert.equal(firstMs, 10);
  assert.equal(medianMs, 40);
});

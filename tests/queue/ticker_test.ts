/**
 * The timer that runs only while there is work (queue/ticker.ts): the rate
 * counters' loops use it so that a service at rest does not wake.
 *
 * @module
 */
import assert from "node:assert/strict";
import { BusyTicker } from "../../queue/ticker.ts";
import { manualTimers } from "../_helpers/timers.ts";

Deno.test("a busy ticker ticks every period while busy, rests once not, and a wake starts it again", () => {
  const timer = manualTimers();
  let work = 2;
  let ticks = 0;
  const ticker = new BusyTicker(250, () => work > 0, () => {
    ticks++;
    work--;
  }, timer.after);
  assert.deepEqual(timer.armed, [], "nothing is armed before a wake");
  ticker.wake();
  ticker.wake();
  assert.deepEqual(timer.armed, [250], "one tick due, however many wakes");
  timer.fire();
  assert.equal(ticks, 1);
  assert.deepEqual(timer.armed, [250], "still busy: the next tick is armed");
  timer.fire();
  assert.equal(ticks, 2);
  assert.deepEqual(timer.armed, [], "no work left: it rests");
  work = 1;
  ticker.wake();
  assert.deepEqual(timer.armed, [250]);
  ticker.stop();
  assert.deepEqual(timer.armed, [], "stop cancels the tick due");
  ticker.wake();
  assert.deepEqual(timer.armed, [], "a stopped ticker stays stopped");
  assert.equal(ticks, 2);
});

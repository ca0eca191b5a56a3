/**
 * Tests of the CPU-per-request tool's parts (bench/cpu.ts, bench/process.ts)
 * on fixture text: nothing here starts a server or runs wrk.
 */
import assert from "node:assert/strict";
import { median } from "../../bench/cpu.ts";
import { parseCpuTicks, parseThreadTicks } from "../../bench/process.ts";

Deno.test("parseCpuTicks adds utime and stime after a command name holding spaces and parentheses", () => {
  const stat =
    "4242 (deno (x) y) S 1 4242 4242 0 -1 4194560 9021 0 0 0 310 45 0 0 20 0 9 0";
  assert.equal(parseCpuTicks(stat), 355);
});

Deno.test("parseCpuTicks names what it cannot read", () => {
  assert.throws(
    () => parseCpuTicks("not a stat line"),
    /Cannot read CPU time in "not a stat line": expected \/proc\/<pid>\/stat/,
  );
});

Deno.test("median takes the middle value, or the mean of the middle two", () => {
  assert.equal(median([3, 1, 2]), 2);
  assert.equal(median([4, 1, 3, 2]), 2.5);
});

Deno.test("parseThreadTicks adds up the CPU time of threads of the same name", () => {
  const text = [
    "7 (deno) S 1 7 7 0 -1 0 0 0 0 0 30 5 0 0",
    "8 (V8 DefaultWorke) S 1 7 7 0 -1 0 0 0 0 0 0 4 0 0",
    "9 (sw-0) S 1 7 7 0 -1 0 0 0 0 0 8 2 0 0",
    "10 (deno) S 1 7 7 0 -1 0 0 0 0 0 1 0 0 0",
    "",
  ].join("\n");
  assert.deepEqual(
    parseThreadTicks(text),
    new Map([["deno", 36], ["V8 DefaultWorke", 4], ["sw-0", 10]]),
  );
});

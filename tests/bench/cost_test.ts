/**
 * Tests of the cost benchmark's pure parts (bench/cost.ts, bench/cpu.ts):
 * its command line, its loads, CPU ticks read from /proc text, and the
 * report's CPU per entry. Nothing here starts a server or runs wrk.
 *
 * @module
 */
import assert from "node:assert/strict";
import {
  type CostReport,
  type CostTurn,
  loadsOf,
  parseCostOptions,
  renderCost,
  threadLines,
} from "../../bench/cost.ts";
import { cpuTicks, threadTicks } from "../../bench/cpu.ts";
import type { WrkResult } from "../../bench/wrk.ts";

Deno.test("the cost run's command line has bounded defaults and refuses what it cannot run", () => {
  const options = parseCostOptions([]);
  assert.deepEqual(options.rates, [200, 2000]);
  assert.equal(options.connections, 128);
  assert.equal(options.duration, 8);
  assert.equal(options.burst, 5);
  assert.deepEqual(parseCostOptions(["--rates", ""]).rates, []);
  assert.throws(() => parseCostOptions(["--rates", "5"]), /--rates/);
  assert.throws(() => parseCostOptions(["--turns", "0"]), /--turns/);
});

Deno.test("each rate is offered by one connection per 40 req/s, at least 10, then the burst", () => {
  const loads = loadsOf(parseCostOptions([]));
  assert.deepEqual(loads, [
    { name: "200/s", connections: 10, delayMs: 50, seconds: 8 },
    { name: "2000/s", connections: 50, delayMs: 25, seconds: 8 },
    { name: "burst", connections: 128, delayMs: 0, seconds: 5 },
  ]);
  assert.equal(loadsOf(parseCostOptions(["--burst", "0"])).length, 2);
});

Deno.test("CPU ticks are user + system of the processes asked for, whatever their names hold", () => {
  const stat = [
    "7 (deno) S 1 7 7 0 -1 0 0 0 0 0 120 30 0 0",
    "8 (tokio (x) y) S 7 7 7 0 -1 0 0 0 0 0 5 6 0 0",
    "9 (other) S 1 9 9 0 -1 0 0 0 0 0 1000 1000 0 0",
  ].join("\n");
  assert.equal(cpuTicks(stat, [7, 8]), 161);
  assert.equal(cpuTicks(stat, []), 0);
});

Deno.test("a process's threads are summed by name, in seconds", () => {
  const stat = [
    "7 (deno) S 1 7 7 0 -1 0 0 0 0 0 120 30 0 0",
    "11 (sw-0) S 1 7 7 0 -1 0 0 0 0 0 40 10 0 0",
    "12 (V8 DefaultWorke) S 1 7 7 0 -1 0 0 0 0 0 7 3 0 0",
    "13 (V8 DefaultWorke) S 1 7 7 0 -1 0 0 0 0 0 5 5 0 0",
  ].join("\n");
  assert.deepEqual(
    [...threadTicks(stat, 100)],
    [["deno", 1.5], ["sw-0", 0.5], ["V8 DefaultWorke", 0.2]],
  );
});

const wrk = (rps: number, p99: number): WrkResult => ({
  requestsPerSec: rps,
  requests: rps * 8,
  non2xx: 0,
  socketErrors: { connect: 0, read: 0, write: 0, timeout: 0 },
  latencyMs: { avg: 1, max: p99, p50: 1, p75: 1, p90: 1, p99 },
});

Deno.test("the report gives CPU per entry over every turn's entries, and its ratio to bare", () => {
  const turn = (server: string, rps: number, cpuSeconds: number): CostTurn => ({
    server,
    load: "2000/s",
    turn: 1,
    wrk: wrk(rps, 5),
    accepted: rps * 8,
    cpuSeconds,
    seconds: 10,
    atRest: true,
    settleMs: 2000,
  });
  const report: CostReport = {
    command: "deno task bench",
    date: "2026-11-26T00:00:00Z",
    cores: 2,
    cpu: "x",
    deno: "2.9.6",
    loadAverage: { start: "1", end: "1" },
    options: parseCostOptions([]),
    // 1.6 s of CPU over 16,000 entries: 100 µs; bare 0.4 s: 25 µs.
    turns: [turn("service", 2000, 1.6), turn("bare", 2000, 0.4)],
    rest: { service: 0.005, bare: 0 },
    peakRssKiB: { service: 102400, bare: 51200 },
    stores: {},
  };
  const text = renderCost(report);
  assert.match(
    text,
    /\| 2000\/s \| service \| 2,000 \| 1\.00 \| 5\.00 \| 100\.0 \| 1\.00 \| 4\.0 \| 0 \| yes \|/,
  );
  assert.match(text, /service 0\.50 % of a core/);
});

Deno.test("CPU by thread is given per entry over a service's turns, largest first, the bare server left out", () => {
  const turn = (
    server: string,
    threads: Record<string, number> | undefined,
  ): CostTurn => ({
    server,
    load: "2000/s",
    turn: 1,
    wrk: wrk(2000, 5),
    accepted: 10_000,
    cpuSeconds: 2,
    seconds: 10,
    atRest: true,
    settleMs: 2000,
    ...(threads ? { threads } : {}),
  });
  const turns = [
    turn("service", { deno: 1, "sw-0": 0.3, "worker-1": 0.00001 }),
    turn("service", { deno: 0.5, "sw-0": 0.1, "worker-1": 0.3 }),
    turn("bare", undefined),
  ];
  assert.deepEqual(
    threadLines(turns, ["2000/s"], ["service", "bare"]),
    [
      "By thread, µs per entry: service 2000/s: deno 75, sw-0 20, worker-1 15",
      "",
    ],
  );
  assert.deepEqual(threadLines([turns[2]!], ["2000/s"], ["bare"]), []);
});

/**
 * Tests of the benchmark's report (bench/report.ts): the summaries of the
 * turns, the service/bare ratios, and the rendered text, which
 * BENCHMARKS.md quotes and must therefore not drift.
 */
import assert from "node:assert/strict";
import {
  type BenchReport,
  formatCount,
  formatMs,
  markdownTable,
  renderReport,
  summarizeTurns,
  type TurnResult,
} from "../../bench/report.ts";
import { parseOptions } from "../../bench/options.ts";

function turn(
  server: "service" | "bare",
  connections: number,
  n: number,
  rps: number,
  p50: number,
  p99: number,
  drain?: [number, boolean, number, number],
): TurnResult {
  const t: TurnResult = {
    server,
    connections,
    turn: n,
    wrk: {
      requestsPerSec: rps,
      requests: Math.round(rps * 10),
      non2xx: server === "service" && connections === 256 ? 3 : 0,
      socketErrors: {
        connect: 0,
        read: connections === 256 ? 1 : 0,
        write: 0,
        timeout: n === 2 && server === "bare" ? 2 : 0,
      },
      latencyMs: {
        avg: p50,
        max: p99 * 3.5,
        p50,
        p75: p50 * 1.2,
        p90: p50 * 1.4,
        p99,
      },
    },
    command:
      `wrk -t2 -c${connections} -d10s --timeout 10s --latency -s bench/post.lua http://127.0.0.1:8000/api/v1/logs -- '<entry>' 0 2`,
  };
  if (drain) {
    [t.drainMs, t.drained, t.pendingAtFirstPoll, t.storedDelta] = drain;
  }
  return t;
}

const TURNS: TurnResult[] = [
  turn("service", 64, 1, 31295.4, 1.789, 6.3, [12.6, true, 0, 312_954]),
  turn("bare", 64, 1, 107640.2, 0.6, 3.58),
  turn("service", 256, 1, 34857, 7.1, 15.3, [1.9, true, 0, 348_567]),
  turn("bare", 256, 1, 202070, 0.94, 4.53),
  turn("service", 64, 2, 37450, 1.54, 6.12, [29.4, true, 2, 374_500]),
  turn("bare", 64, 2, 181710, 0.4, 3.25),
  turn("service", 256, 2, 32876, 7.48, 146.2, [
    180_012.7,
    false,
    10_000,
    300_000,
  ]),
  turn("bare", 256, 2, 219467, 0.96, 4.31),
];

function fixtureReport(): BenchReport {
  const { summaries, ratios } = summarizeTurns(TURNS, [64, 256]);
  return {
    command: "deno task bench",
    expandedCommand:
      "deno run --allow-net --allow-env --allow-read --allow-write --allow-run bench/ingest.ts",
    serviceCommand: "deno run --allow-net main.ts",
    date: "2026-11-22T00:37:16.000Z",
    cores: 2,
    cpu: "AMD EPYC",
    deno: "2.9.6",
    loadAverage: { start: "1.25 1.10 0.90", end: "2.17 1.50 1.00" },
    // The documented defaults (tests/bench/ingest_test.ts checks them).
    options: parseOptions([]),
    entryBytes: 295,
    serviceEnv: {
      KV_PATH: "<temporary directory>/kv.sqlite",
      PORT: "8000",
      HOSTNAME: "127.0.0.1",
      TRUST_PROXY: "1",
    },
    summaries,
    ratios,
    turns: TURNS,
    drain: {
      lastMs: 180_012.7,
      lastDrained: false,
      lastPendingAtFirstPoll: 10_000,
      accepted2xx: 1_363_561,
      store: {
        stored: 1_367_801,
        accepted: 1_367_801,
        pendingBatches: 1,
        deadLetters: 0,
      },
    },
    memory: {
      service: {
        pid: 4242,
        command: "deno run --allow-net main.ts",
        vmHwmKiB: 203_878,
        vmRssKiB: 190_000,
      },
      serviceSampledPeakKiB: 203_059,
      bare: null,
    },
    serverStderrLines: { service: 1, bare: 0 },
  };
}

/** What the report printed for this fixture before the benchmark was split into modules. */
const EXPECTED = [
  "Command: deno task bench",
  "  which runs: deno run --allow-net --allow-env --allow-read --allow-write --allow-run bench/ingest.ts",
  "Service: KV_PATH=<temporary directory>/kv.sqlite PORT=8000 HOSTNAME=127.0.0.1 TRUST_PROXY=1 deno run --allow-net main.ts",
  "wrk: wrk -t2 -c64 -d10s --timeout 10s --latency -s bench/post.lua http://127.0.0.1:8000/api/v1/logs -- '<entry>' 0 2 (per turn)",
  "Date: 2026-11-22T00:37:16.000Z",
  "Machine: 2 cores (AMD EPYC), Deno 2.9.6, load average 1.25 1.10 0.90 at start, 2.17 1.50 1.00 at end",
  "Turns: 2 per server and connection count, 10 s each, wrk -t2, alternating service/bare, connection counts interleaved; entry 295 bytes",
  "",
  "| server | conns | req/s mean | req/s min–max | p50 ms (mean) | p99 ms (worst turn) | service/bare | requests | non-2xx | socket errors |",
  "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
  "| service | 64 | 34,373 | 31,295–37,450 | 1.66 | 6.30 | 23.8 % | 687,454 | 0 | 0 |",
  "| bare | 64 | 144,675 | 107,640–181,710 | 0.50 | 3.58 |  | 2,893,502 | 0 | 2 |",
  "| service | 256 | 33,867 | 32,876–34,857 | 7.29 | 146 | 16.1 % | 677,330 | 6 | 2 |",
  "| bare | 256 | 210,769 | 202,070–219,467 | 0.95 | 4.53 |  | 4,215,370 | 0 | 4 |",
  "",
  "Turns in the order run:",
  "",
  "| # | server | conns | req/s | p50 ms | p90 ms | p99 ms | max ms | non-2xx | drain ms | batches pending at first poll | stored in turn (accepted counter) |",
  "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
  "| 1 | service | 64 | 31,295 | 1.79 | 2.50 | 6.30 | 22.1 | 0 | ≤ 13 | 0 | 312,954 |",
  "| 2 | bare | 64 | 107,640 | 0.60 | 0.84 | 3.58 | 12.5 | 0 |  |  |  |",
  "| 3 | service | 256 | 34,857 | 7.10 | 9.94 | 15.3 | 53.6 | 3 | ≤ 2 | 0 | 348,567 |",
  "| 4 | bare | 256 | 202,070 | 0.94 | 1.32 | 4.53 | 15.9 | 0 |  |  |  |",
  "| 5 | service | 64 | 37,450 | 1.54 | 2.16 | 6.12 | 21.4 | 0 | 29 | 2 | 374,500 |",
  "| 6 | bare | 64 | 181,710 | 0.40 | 0.56 | 3.25 | 11.4 | 0 |  |  |  |",
  "| 7 | service | 256 | 32,876 | 7.48 | 10.5 | 146 | 512 | 3 | > 180,013 (timed out) | 10,000 | 300,000 |",
  "| 8 | bare | 256 | 219,467 | 0.96 | 1.34 | 4.31 | 15.1 | 0 |  |  |  |",
  "",
  'Drain after the last service turn: > 180,013 (timed out) ms (polled every 25 ms; "≤" when the first poll already found no pending batch)',
  "Stored entries: 1,367,801 in the project's chunks; accepted counter 1,367,801; 2xx answers seen by wrk over all service turns 1,363,561 (difference 4,240); pending batches 1; dead letters 0",
  "Service peak RSS: VmHWM 199.1 MiB (pid 4242: deno run --allow-net main.ts); sampled VmRSS peak 198.3 MiB; bare server VmHWM ? MiB",
  "Lines on stderr: service 1, bare 0",
].join("\n");

Deno.test("markdownTable renders a header, a rule and one line per row", () => {
  assert.equal(
    markdownTable(["server", "req/s"], [["service", "1,000"], ["bare", ""]]),
    "| server | req/s |\n| --- | --- |\n| service | 1,000 |\n| bare |  |",
  );
});

Deno.test("formatCount groups thousands and formatMs keeps three figures", () => {
  assert.equal(formatCount(1_234_567.5), "1,234,568");
  assert.equal(formatCount(199.06, 1), "199.1");
  assert.equal(formatMs(1.666), "1.67");
  assert.equal(formatMs(15.34), "15.3");
  assert.equal(formatMs(146.2), "146");
});

Deno.test("summarizeTurns gives mean, range, mean p50, worst p99 and ratios per connection count", () => {
  const { summaries, ratios } = summarizeTurns(TURNS, [64, 256]);
  assert.deepEqual(
    summaries.map((s) => `${s.server}@${s.connections}`),
    ["service@64", "bare@64", "service@256", "bare@256"],
  );
  const service256 = summaries[2]!;
  assert.equal(service256.turns, 2);
  assert.equal(service256.meanRequestsPerSec, (34857 + 32876) / 2);
  assert.equal(service256.minRequestsPerSec, 32876);
  assert.equal(service256.maxRequestsPerSec, 34857);
  assert.equal(service256.p50Ms, (7.1 + 7.48) / 2);
  assert.equal(service256.p99Ms, 146.2);
  assert.equal(service256.requests, 348570 + 328760);
  assert.equal(service256.non2xx, 6);
  assert.equal(service256.socketErrors, 2);
  assert.equal(summaries[1]!.socketErrors, 2, "bare@64: two timeouts");
  assert.deepEqual(ratios.map((r) => r.connections), [64, 256]);
  assert.equal(
    ratios[0]!.serviceOverBare,
    ((31295.4 + 37450) / 2) / ((107640.2 + 181710) / 2),
  );
});

Deno.test("summarizeTurns refuses a connection count without turns of both servers", () => {
  assert.throws(
    () => summarizeTurns(TURNS.filter((t) => t.server === "service"), [64]),
    /^RangeError: Cannot summarize bare at 64 connections/,
  );
});

Deno.test("renderReport prints the report in the format BENCHMARKS.md quotes", () => {
  const text = renderReport(fixtureReport());
  // Line by line first, so that a difference names its line.
  const lines = text.split("\n");
  EXPECTED.split("\n").forEach((line, i) => assert.equal(lines[i], line));
  assert.equal(text, EXPECTED);
});

Deno.test("renderReport marks drains bounded by the first poll and timed-out drains", () => {
  const lines = renderReport(fixtureReport()).split("\n");
  const cell = (turn: number) =>
    lines.find((l) => l.startsWith(`| ${turn} |`))!.split(" | ")[9];
  assert.equal(cell(1), "≤ 13");
  assert.equal(cell(5), "29");
  assert.equal(cell(7), "> 180,013 (timed out)");
  assert.equal(cell(2), "");
});

/**
 * Tests of the load benchmark's parsers on fixture text: wrk's output
 * (bench/wrk.ts), the command line and deno.json's tasks (bench/options.ts),
 * /proc files (bench/process.ts), and the entry it posts (bench/ingest.ts).
 * Nothing here starts a server or runs wrk.
 */
import assert from "node:assert/strict";
import { benchEntry } from "../../bench/ingest.ts";
import { denoArgs, parseOptions, taskCommand } from "../../bench/options.ts";
import {
  descendants,
  parseCmdline,
  parseCpuModel,
  parseLoadAverage,
  parseParentPids,
  parseStatus,
} from "../../bench/process.ts";
import { parseWrk, wrkArgs, type WrkResult } from "../../bench/wrk.ts";
import { BENCH_ORIGIN } from "../../bench/store.ts";

/** wrk 4.2 with `--latency`, as printed against the bare server. */
const WRK_FAST = `Running 1s test @ http://127.0.0.1:8917/
  2 threads and 8 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency   273.26us  589.29us   5.23ms   90.44%
    Req/Sec    42.11k     9.85k   54.49k    65.00%
  Latency Distribution
     50%   70.00us
     75%  135.00us
     90%  812.00us
     99%    3.01ms
  83843 requests in 1.00s, 10.15MB read
Requests/sec:  83589.31
Transfer/sec:     10.12MB
`;

/** A slow run: seconds and minutes, socket errors, non-2xx answers. */
const WRK_SLOW = `Running 2m test @ http://127.0.0.1:8000/api/v1/logs
  2 threads and 256 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency     1.52s   402.11ms   1.05m    70.00%
    Req/Sec    80.12     20.01   150.00     75.00%
  Latency Distribution
     50%    1.40s
     75%    1.80s
     90%    2.50s
     99%    9.99s
  19200 requests in 2.00m, 3.10MB read
  Socket errors: connect 3, read 12, write 1, timeout 42
  Non-2xx or 3xx responses: 517
Requests/sec:    159.97
Transfer/sec:     26.45KB
`;

function close(actual: number, expected: number, what: string) {
  assert.ok(
    Math.abs(actual - expected) < 1e-9,
    `${what}: expected ${expected}, got ${actual}`,
  );
}

/** Asserts the counts exactly and each latency named in `latencyMs` closely. */
function assertSummary(
  result: WrkResult,
  expected: Omit<WrkResult, "latencyMs"> & {
    latencyMs: Partial<WrkResult["latencyMs"]>;
  },
) {
  const { latencyMs, ...counts } = expected;
  assert.deepEqual(
    {
      requestsPerSec: result.requestsPerSec,
      requests: result.requests,
      non2xx: result.non2xx,
      socketErrors: result.socketErrors,
    },
    counts,
  );
  for (const [what, ms] of Object.entries(latencyMs)) {
    close(result.latencyMs[what as keyof WrkResult["latencyMs"]]!, ms, what);
  }
}

const FAST_SUMMARY: Parameters<typeof assertSummary>[1] = {
  requestsPerSec: 83589.31,
  requests: 83843,
  non2xx: 0,
  socketErrors: { connect: 0, read: 0, write: 0, timeout: 0 },
  latencyMs: {
    avg: 0.27326,
    max: 5.23,
    p50: 0.07,
    p75: 0.135,
    p90: 0.812,
    p99: 3.01,
  },
};

Deno.test("parseWrk reads wrk's summary with latencies in us and ms", () => {
  assertSummary(parseWrk(WRK_FAST), FAST_SUMMARY);
});

Deno.test("parseWrk reads seconds, minutes, socket errors and non-2xx answers", () => {
  assertSummary(parseWrk(WRK_SLOW), {
    latencyMs: { avg: 1520, max: 63_000, p50: 1400, p99: 9990 },
    requestsPerSec: 159.97,
    requests: 19200,
    non2xx: 517,
    socketErrors: { connect: 3, read: 12, write: 1, timeout: 42 },
  });
});

Deno.test("parseWrk names what it cannot find or read", async (t) => {
  await t.step("no Requests/sec line", () => {
    assert.throws(
      () => parseWrk(WRK_FAST.replace(/^Requests\/sec.*$/m, "")),
      /^SyntaxError: Cannot find Requests\/sec in wrk's output/,
    );
  });
  await t.step("no latency distribution (run without --latency)", () => {
    const output = WRK_FAST.replace(
      / {2}Latency Distribution[^]*?3\.01ms\n/,
      "",
    );
    assert.ok(!output.includes("99%"), "precondition: the fixture lost p99");
    assert.throws(() => parseWrk(output), /Cannot find p50 in wrk's output/);
  });
  await t.step("no thread stats line, only the distribution's heading", () => {
    const output = WRK_FAST.replace(/^ {4}Latency .*\n/m, "");
    assert.ok(output.includes("Latency Distribution"), "precondition");
    assert.throws(
      () => parseWrk(output),
      /Cannot find the latency line in wrk's output/,
    );
  });
  await t.step("an unknown time unit", () => {
    assert.throws(
      () => parseWrk(WRK_FAST.replace("3.01ms", "3.01ns")),
      /Cannot read wrk duration "3.01ns": expected a number and us, ms, s, m or h/,
    );
  });
});

Deno.test("wrkArgs passes post.lua its body, address offset and threads, and shows the command without the body", async () => {
  const body = benchEntry("AAAAAAAAAAAAAAAAAAAAAA");
  const { args, shown } = wrkArgs({
    url: "http://127.0.0.1:8000/api/v1/logs",
    connections: 64,
    threads: 2,
    durationSeconds: 3,
    body,
    addressOffset: 4096,
  }, "/somewhere/bench/post.lua");
  assert.deepEqual(args.slice(args.indexOf("--") + 1), [body, "4096", "2"]);
  assert.equal(
    shown,
    "wrk -t2 -c64 -d3s --timeout 10s --latency -s bench/post.lua http://127.0.0.1:8000/api/v1/logs -- '<entry>' 4096 2",
  );
  // The order above is the one the script reads; it prints nothing of its
  // own (no done() hook), so parseWrk sees wrk's summary only.
  const lua = await Deno.readTextFile(
    new URL("../../bench/post.lua", import.meta.url),
  );
  assert.match(
    lua,
    /bodies = read_bodies\(args\[1\]\)\s+offset = tonumber\(args\[2\]\)/,
  );
  assert.match(lua, /stride = tonumber\(args\[3\]\)/);
  assert.match(lua, /pause = tonumber\(args\[4\]\)/);
  // The bench project allows this Origin only: any other is refused.
  assert.ok(
    lua.includes(`["Origin"] = "${BENCH_ORIGIN}"`),
    "post.lua's Origin",
  );
  assert.doesNotMatch(lua, /function done/);
});

Deno.test("parseOptions gives the documented defaults", () => {
  assert.deepEqual(parseOptions([]), {
    duration: 10,
    turns: 2,
    connections: [64, 256],
    threads: 2,
    drainTimeout: 180,
    json: false,
  });
});

Deno.test("parseOptions reads every option", () => {
  assert.deepEqual(
    parseOptions([
      "--duration",
      "3",
      "--turns=1",
      "--connections",
      "32, 128,512",
      "--threads",
      "4",
      "--drain-timeout",
      "60",
      "--json",
    ]),
    {
      duration: 3,
      turns: 1,
      connections: [32, 128, 512],
      threads: 4,
      drainTimeout: 60,
      json: true,
    },
  );
});

Deno.test("parseOptions refuses malformed values, naming the option", async (t) => {
  const cases: [string[], RegExp][] = [
    [
      ["--duration", "1.5"],
      /^Cannot read "--duration": expected a whole number from 1 to 600, got "1.5"$/,
    ],
    [["--duration", ""], /^Cannot read "--duration"/],
    [
      ["--turns", "0"],
      /^Cannot read "--turns": expected a whole number from 1 to 20, got "0"$/,
    ],
    [
      ["--connections", "64,abc"],
      /^Cannot read "--connections": .* got "abc"$/,
    ],
    [["--connections", "64,"], /^Cannot read "--connections": .* got ""$/],
    [["--drain-timeout", "9999"], /^Cannot read "--drain-timeout"/],
    [
      ["--threads", "4", "--connections", "64,2"],
      /^Cannot run 2 connections on 4 threads/,
    ],
  ];
  for (const [args, message] of cases) {
    await t.step(args.join(" "), () => {
      assert.throws(() => parseOptions(args), (error: Error) => {
        assert.ok(error instanceof RangeError);
        assert.match(error.message, message);
        return true;
      });
    });
  }
  await t.step("an unknown option", () => {
    assert.throws(() => parseOptions(["--bogus"]), /--bogus/);
  });
});

Deno.test("taskCommand reads a task of deno.json, as a string or an object", () => {
  const config = JSON.stringify({
    tasks: {
      start: "  deno run --allow-net main.ts ",
      bench: { command: "deno run bench/ingest.ts", description: "load" },
    },
  });
  assert.equal(taskCommand(config, "start"), "deno run --allow-net main.ts");
  assert.equal(taskCommand(config, "bench"), "deno run bench/ingest.ts");
  assert.throws(
    () => taskCommand(config, "dev"),
    /^TypeError: Cannot read the "dev" task of deno.json: expected a command string$/,
  );
  assert.throws(
    () => taskCommand("{ tasks: ", "start"),
    /^SyntaxError: Cannot parse deno.json: expected JSON/,
  );
});

Deno.test("denoArgs keeps the deno arguments and refuses what needs a shell", () => {
  assert.deepEqual(
    denoArgs(
      "deno run --allow-net --v8-flags=--max-semi-space-size=8 main.ts",
      "main.ts",
    ),
    ["run", "--allow-net", "--v8-flags=--max-semi-space-size=8", "main.ts"],
  );
  for (
    const command of [
      "node main.ts",
      "deno main.ts",
      "deno run cli/main.ts",
      "deno run main.ts && echo done",
      "deno run main.ts | tee out",
      "PORT=1 deno run main.ts",
      "deno run '--allow-net' main.ts",
      "deno run --allow-env=$HOME main.ts",
    ]
  ) {
    assert.throws(
      () => denoArgs(command, "main.ts"),
      /^SyntaxError: Cannot run ".*": expected "deno <subcommand> \[flags\] main.ts" without shell syntax$/,
      command,
    );
  }
});

Deno.test("the repository's start and bench tasks are commands the bench can run", async () => {
  const config = await Deno.readTextFile(
    new URL("../../deno.json", import.meta.url),
  );
  const args = denoArgs(taskCommand(config, "start"), "main.ts");
  assert.equal(args[0], "run");
  assert.match(taskCommand(config, "bench"), /^deno run .*bench\/ingest\.ts$/);
  assert.match(taskCommand(config, "bench"), /--allow-run/);
});

Deno.test("parseStatus reads VmHWM and VmRSS in KiB, 0 when absent", () => {
  const status = [
    "Name:\tdeno",
    "VmPeak:\t 1212340 kB",
    "VmHWM:\t  203878 kB",
    "VmRSS:\t  190004 kB",
    "RssAnon:\t  150000 kB",
    "",
  ].join("\n");
  assert.deepEqual(parseStatus(status), {
    vmHwmKiB: 203878,
    vmRssKiB: 190004,
  });
  // A kernel thread's status has no Vm lines.
  assert.deepEqual(parseStatus("Name:\tkthreadd\nKthread:\t1\n"), {
    vmHwmKiB: 0,
    vmRssKiB: 0,
  });
});

Deno.test("parseCmdline joins NUL-separated arguments", () => {
  assert.equal(
    parseCmdline("deno\0run\0--allow-net\0main.ts\0"),
    "deno run --allow-net main.ts",
  );
  assert.equal(parseCmdline(""), "");
});

Deno.test("parseParentPids reads the parent id after a command name holding spaces and parentheses", () => {
  const stat = [
    "1 (init) S 0 1 1 0 -1 4194560",
    "40 (deno) S 1 40 40 0 -1 4194560",
    "41 (tokio-runtime-w) S 40 40 40 0 -1",
    "57 (a (b) c) R 41 57 40 0 -1",
    "garbage",
    "",
  ].join("\n");
  const parents = parseParentPids(stat);
  assert.deepEqual([...parents], [[1, 0], [40, 1], [41, 40], [57, 41]]);
  assert.deepEqual(descendants(40, parents), [40, 41, 57]);
  assert.deepEqual(descendants(57, parents), [57]);
});

Deno.test("parseLoadAverage and parseCpuModel read /proc/loadavg and /proc/cpuinfo", () => {
  assert.equal(
    parseLoadAverage("1.25 1.10 0.90 2/188 6914\n"),
    "1.25 1.10 0.90",
  );
  assert.equal(
    parseCpuModel(
      "processor\t: 0\nmodel name\t: AMD EPYC 7B13\nprocessor\t: 1\nmodel name\t: other\n",
    ),
    "AMD EPYC 7B13",
  );
  assert.equal(parseCpuModel("processor\t: 0\n"), "?");
});

Deno.test("benchEntry is the 295-byte entry BENCHMARKS.md shows", () => {
  const text = benchEntry("AAAAAAAAAAAAAAAAAAAAAA");
  assert.equal(new TextEncoder().encode(text).length, 295);
  const entry = JSON.parse(text);
  assert.equal(entry.projectId, "AAAAAAAAAAAAAAAAAAAAAA");
  assert.equal(entry.level, "info");
  assert.equal(entry.data.title, "Checkout failed");
});

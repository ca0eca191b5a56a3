/**
 * `deno task bench`: CPU per entry, all in, beside requests per second, at
 * three loads — about 200 req/s and about 2,000 req/s (one connection per
 * 40 req/s, at least 10, each waiting between requests) and a burst (128
 * connections at full speed) — for the service and a bare `Deno.serve` (bench/bare.ts) in the same run,
 * in alternating turns; with `--base DIR`, a second checkout's service too,
 * so that two builds are compared turn by turn.
 *
 * CPU of a turn: user + system of the server's whole process tree from
 * /proc (bench/cpu.ts), from just before the load until its background work
 * has settled — no batch pending, then under 2 % of a core for 2 s (the
 * quiet window itself not counted) — divided by the entries accepted (2xx
 * answers). At the end every server is measured at rest for `--rest`
 * seconds, all at once.
 *
 * Bodies are varied entries (bench/query/generate.ts), cycled.
 *
 * @module
 */
import { parseArgs } from "node:util";
import {
  CLOCK_TICKS,
  threadSeconds,
  treeCpuSeconds,
  untilAtRest,
} from "./cpu.ts";
import { denoArgs, taskCommand, wholeNumber } from "./options.ts";
import { cpuModel, loadAverage, sampleRss, serverMemory } from "./process.ts";
import { createGenerator } from "./query/generate.ts";
import { formatCount, formatMs, markdownTable } from "./report.ts";
import type { ServerProcess } from "./server.ts";
import { freePort, startServer, startService } from "./server.ts";
import { countStore, createBenchProject, waitForDrain } from "./store.ts";
import { runWrk, type WrkResult } from "./wrk.ts";

const ROOT = new URL("../", import.meta.url);
const LOGS_PATH = "/api/v1/logs";
const BODIES = 5_000;
/**
 * Connections of a fixed-rate load: one per 40 req/s offered, at least 10,
 * so that each waits 25 ms or more between requests (a request waits for
 * its commit, several milliseconds on a loaded disk).
 */
function rateConnections(rate: number): number {
  return Math.max(10, Math.round(rate / 40));
}

/** Options of a cost run, from the command line. */
export interface CostOptions {
  /** Seconds of each fixed-rate turn. @default {8} */
  duration: number;
  /** Seconds of each burst turn. @default {5} */
  burst: number;
  /** Fixed rates offered, req/s. @default {[200, 2000]} */
  rates: number[];
  /** Connections of the burst. @default {128} */
  connections: number;
  /** Turns per server and load. @default {1} */
  turns: number;
  /** Seconds every server is measured at rest at the end; 0 for none. @default {10} */
  rest: number;
  /** Longest wait for a server to settle after a turn, s. @default {30} */
  settleTimeout: number;
  /** Another checkout whose service runs too, in alternation. */
  base?: string;
  /** A directory for `--cpu-prof` profiles of the services. */
  cpuProf?: string;
  json: boolean;
}

/**
 * Parses the cost run's command line; throws naming the option at fault.
 *
 * @example
 * ```ts
 * parseCostOptions(["--rates", "200,2000"]).rates; // [200, 2000]
 * ```
 */
export function parseCostOptions(args: string[]): CostOptions {
  const { values } = parseArgs({
    args,
    options: {
      duration: { type: "string", default: "8" },
      burst: { type: "string", default: "5" },
      rates: { type: "string", default: "200,2000" },
      connections: { type: "string", default: "128" },
      turns: { type: "string", default: "1" },
      rest: { type: "string", default: "10" },
      "settle-timeout": { type: "string", default: "30" },
      base: { type: "string" },
      "cpu-prof": { type: "string" },
      json: { type: "boolean", default: false },
    },
  });
  const rates = values.rates.trim() === "" ? [] : values.rates.split(",").map(
    (r) => wholeNumber("rates", r.trim(), 10, 10_000),
  );
  return {
    duration: wholeNumber("duration", values.duration, 1, 600),
    burst: wholeNumber("burst", values.burst, 0, 600),
    rates,
    connections: wholeNumber("connections", values.connections, 2, 10_000),
    turns: wholeNumber("turns", values.turns, 1, 20),
    rest: wholeNumber("rest", values.rest, 0, 600),
    settleTimeout: wholeNumber(
      "settle-timeout",
      values["settle-timeout"],
      1,
      3600,
    ),
    ...(values.base ? { base: values.base } : {}),
    ...(values["cpu-prof"] ? { cpuProf: values["cpu-prof"] } : {}),
    json: values.json,
  };
}

/** One load of the run: a fixed rate or the burst. */
interface Load {
  name: string;
  connections: number;
  delayMs: number;
  seconds: number;
}

/**
 * The loads of a run, in order: each rate (one connection per 40 req/s, at
 * least 10, each waiting `connections × 1000 / rate` ms between requests),
 * then the burst.
 *
 * @example
 * ```ts
 * loadsOf(parseCostOptions([]))[1]; // { name: "2000/s", connections: 50, delayMs: 25, seconds: 8 }
 * ```
 */
export function loadsOf(options: CostOptions): Load[] {
  const loads = options.rates.map((rate) => {
    const connections = rateConnections(rate);
    return {
      name: `${rate}/s`,
      connections,
      delayMs: Math.max(1, Math.round(connections * 1000 / rate)),
      seconds: options.duration,
    };
  });
  if (options.burst > 0) {
    loads.push({
      name: "burst",
      connections: options.connections,
      delayMs: 0,
      seconds: options.burst,
    });
  }
  return loads;
}

/** A server of the run, with what its turns need. */
interface Runner {
  name: string;
  server: ServerProcess;
  /** Service only: its KV file and project. */
  kvPath?: string;
  projectId?: string;
  bodiesFile: string;
  offset: number;
}

/** One turn of one server under one load. */
export interface CostTurn {
  server: string;
  load: string;
  turn: number;
  wrk: WrkResult;
  accepted: number;
  cpuSeconds: number;
  /** From the start of the load until at rest, s. */
  seconds: number;
  atRest: boolean;
  settleMs: number;
  /**
   * A service's CPU seconds by thread name over the same span (until its
   * rest was seen), from /proc/<pid>/task.
   */
  threads?: Record<string, number>;
}

/** CPU µs per accepted entry of a turn. */
export function microsPerEntry(turn: CostTurn): number {
  return turn.accepted === 0 ? 0 : turn.cpuSeconds * 1e6 / turn.accepted;
}

function bodiesFor(projectId: string): string {
  const generator = createGenerator(32);
  const lines: string[] = [];
  for (let i = 0; i < BODIES; i++) {
    lines.push(JSON.stringify({ ...generator.next(), projectId }));
  }
  return lines.join("\n") + "\n";
}

const log = (line: string) => console.error(line);

async function startRunner(
  name: string,
  checkout: URL,
  dir: string,
  cpuProf: string | undefined,
): Promise<Runner> {
  const kvPath = `${dir}/${name}.sqlite`;
  const project = await createBenchProject(kvPath, "bench");
  const config = await Deno.readTextFile(new URL("deno.json", checkout));
  let args = denoArgs(taskCommand(config, "start"), "main.ts");
  if (cpuProf) {
    args = [
      args[0]!,
      "--cpu-prof",
      `--cpu-prof-dir=${cpuProf}/${name}`,
      ...args.slice(1),
    ];
  }
  const port = freePort();
  log(`Starting ${name} (${checkout.pathname}) on 127.0.0.1:${port}`);
  const { service } = await startService({ cwd: checkout, args, kvPath, port });
  const bodiesFile = `${dir}/${name}.jsonl`;
  await Deno.writeTextFile(bodiesFile, bodiesFor(project.id));
  return {
    name,
    server: service,
    kvPath,
    projectId: project.id,
    bodiesFile,
    offset: 0,
  };
}

async function startBare(dir: string): Promise<Runner> {
  const port = freePort();
  const server = await startServer({
    name: "the bare server",
    args: ["run", "--allow-net", "bench/bare.ts", "--port", String(port)],
    cwd: ROOT,
    port,
  });
  const bodiesFile = `${dir}/bare.jsonl`;
  await Deno.writeTextFile(bodiesFile, bodiesFor("A".repeat(22)));
  return { name: "bare", server, bodiesFile, offset: 0 };
}

/** Seconds of one segment of a fixed-rate load. */
const SEGMENT_SECONDS = 2;

/**
 * Runs `load` against `runner`. A fixed rate runs in segments of
 * {@linkcode SEGMENT_SECONDS}, wrk's delay set again after each from the
 * rate the last one reached (each request also waits for its answer, so
 * the nominal delay alone offers less than the rate).
 */
async function offer(runner: Runner, load: Load): Promise<WrkResult> {
  const segments: WrkResult[] = [];
  const period = load.delayMs;
  let delay = period;
  let left = load.seconds;
  while (left > 0) {
    const seconds = load.delayMs === 0 ? left : Math.min(SEGMENT_SECONDS, left);
    const { result } = await runWrk({
      url: `${runner.server.url}${LOGS_PATH}`,
      connections: load.connections,
      threads: 2,
      durationSeconds: seconds,
      body: `@${runner.bodiesFile}`,
      addressOffset: runner.offset,
      delayMs: Math.max(0, Math.round(delay)),
    });
    runner.offset += result.requests;
    segments.push(result);
    left -= seconds;
    const reached = result.requests / seconds;
    if (load.delayMs > 0 && reached > 0) {
      delay = Math.max(0, period - (load.connections * 1000 / reached - delay));
    }
  }
  return joinSegments(segments, load.seconds);
}

/** The segments of a load as one wrk result: p50 their mean, p99 their worst. */
function joinSegments(segments: WrkResult[], seconds: number): WrkResult {
  const requests = segments.reduce((n, r) => n + r.requests, 0);
  return {
    ...segments[0]!,
    requests,
    requestsPerSec: requests / seconds,
    non2xx: segments.reduce((n, r) => n + r.non2xx, 0),
    latencyMs: {
      ...segments[0]!.latencyMs,
      p50: segments.reduce((n, r) => n + r.latencyMs.p50, 0) / segments.length,
      p99: Math.max(...segments.map((r) => r.latencyMs.p99)),
    },
  };
}

/** Runs one turn: load, drain, rest; CPU from before the load to the rest. */
async function runTurn(
  runner: Runner,
  load: Load,
  turn: number,
  options: CostOptions,
): Promise<CostTurn> {
  const pid = runner.server.child.pid;
  const before = await treeCpuSeconds(pid);
  const threadsBefore = runner.kvPath ? await threadSeconds(pid) : null;
  const t0 = performance.now();
  const result = await offer(runner, load);
  const loadEnded = performance.now();
  if (runner.kvPath) {
    await waitForDrain({
      kvPath: runner.kvPath,
      projectId: runner.projectId!,
      loadEnded,
      timeoutMs: options.settleTimeout * 1000,
    });
  }
  const rest = await untilAtRest(pid, {
    timeoutMs: options.settleTimeout * 1000,
  });
  const threads = threadsBefore
    ? threadDelta(threadsBefore, await threadSeconds(pid))
    : undefined;
  const accepted = result.requests - result.non2xx;
  const record: CostTurn = {
    server: runner.name,
    load: load.name,
    turn,
    wrk: result,
    accepted,
    cpuSeconds: rest.cpuSeconds - before,
    seconds: (performance.now() - t0) / 1000,
    atRest: rest.atRest,
    settleMs: performance.now() - loadEnded,
    ...(threads ? { threads } : {}),
  };
  log(
    `  ${runner.name} ${load.name}: ${
      formatCount(result.requestsPerSec)
    } req/s, p99 ${formatMs(result.latencyMs.p99)} ms, ${
      formatCount(microsPerEntry(record), 1)
    } µs CPU per entry (${record.cpuSeconds.toFixed(2)} s CPU, settled in ${
      formatCount(record.settleMs)
    } ms${rest.atRest ? "" : ", not at rest"})`,
  );
  return record;
}

/** CPU seconds of each thread name between two readings. */
function threadDelta(
  before: Map<string, number>,
  after: Map<string, number>,
): Record<string, number> {
  const delta: Record<string, number> = {};
  for (const [name, seconds] of after) {
    delta[name] = seconds - (before.get(name) ?? 0);
  }
  return delta;
}

/** CPU share of a core each server uses at rest over `seconds`, all at once. */
async function measureRest(
  runners: Runner[],
  seconds: number,
): Promise<Record<string, number>> {
  const before = await Promise.all(
    runners.map((r) => treeCpuSeconds(r.server.child.pid)),
  );
  const t0 = performance.now();
  await new Promise((r) => setTimeout(r, seconds * 1000));
  const after = await Promise.all(
    runners.map((r) => treeCpuSeconds(r.server.child.pid)),
  );
  const elapsed = (performance.now() - t0) / 1000;
  return Object.fromEntries(
    runners.map((r, i) => [r.name, (after[i]! - before[i]!) / elapsed]),
  );
}

/** What a cost run measured. */
export interface CostReport {
  command: string;
  date: string;
  cores: number;
  cpu: string;
  deno: string;
  loadAverage: { start: string; end: string };
  options: CostOptions;
  turns: CostTurn[];
  /** Share of one core at rest, per server. */
  rest: Record<string, number>;
  /** Peak RSS of each service's process tree, sampled, KiB. */
  peakRssKiB: Record<string, number>;
  stores: Record<string, Awaited<ReturnType<typeof countStore>>>;
}

/** Runs the turns; answers the report. */
export async function runCost(
  options: CostOptions,
  args: string[],
): Promise<CostReport> {
  const startLoad = await loadAverage();
  const date = new Date().toISOString();
  const dir = await Deno.makeTempDir({ prefix: "cost-bench-" });
  const runners: Runner[] = [];
  try {
    runners.push(await startRunner("service", ROOT, dir, options.cpuProf));
    if (options.base) {
      const base = new URL(`${options.base.replace(/\/$/, "")}/`, `file://`);
      runners.push(await startRunner("base", base, dir, options.cpuProf));
    }
    runners.push(await startBare(dir));
    const samplers = runners.map((r) => sampleRss(r.server.child.pid));
    for (const r of runners) {
      await untilAtRest(r.server.child.pid, { timeoutMs: 10_000 });
    }
    const turns: CostTurn[] = [];
    for (let turn = 1; turn <= options.turns; turn++) {
      for (const load of loadsOf(options)) {
        log(`Turn ${turn}/${options.turns}: ${load.name}`);
        // Alternate which server goes first from turn to turn.
        const order = turn % 2 === 1 ? runners : [...runners].reverse();
        for (const runner of order) {
          turns.push(await runTurn(runner, load, turn, options));
        }
      }
    }
    const rest = options.rest > 0
      ? await measureRest(runners, options.rest)
      : {};
    const peakRssKiB: Record<string, number> = {};
    for (const [i, r] of runners.entries()) {
      peakRssKiB[r.name] = await samplers[i]!.stop();
      const memory = await serverMemory(r.server.child.pid, "main.ts");
      if (memory && r.kvPath) {
        peakRssKiB[r.name] = Math.max(peakRssKiB[r.name]!, memory.vmHwmKiB);
      }
    }
    const stores: CostReport["stores"] = {};
    for (const r of runners) {
      if (r.kvPath) stores[r.name] = await countStore(r.kvPath, r.projectId!);
    }
    return {
      command: ["deno task bench", ...args].join(" "),
      date,
      cores: navigator.hardwareConcurrency,
      cpu: await cpuModel(),
      deno: Deno.version.deno,
      loadAverage: { start: startLoad, end: await loadAverage() },
      options,
      turns,
      rest,
      peakRssKiB,
      stores,
    };
  } finally {
    // SIGINT lets a service write its --cpu-prof profile as it exits.
    for (const r of runners) {
      try {
        r.server.child.kill("SIGINT");
      } catch { /* gone */ }
    }
    for (const r of runners) await r.server.stop();
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
}

/** Mean of `f` over `turns`. */
function mean(turns: CostTurn[], f: (t: CostTurn) => number): number {
  return turns.reduce((n, t) => n + f(t), 0) / turns.length;
}

/**
 * The report as Markdown: per load and server, the mean req/s, worst p99,
 * CPU µs per entry (all turns' CPU over all their entries) and the ratios to
 * the bare server's; then rest and memory.
 */
export function renderCost(report: CostReport): string {
  const out: string[] = [];
  out.push(`Command: ${report.command}`);
  out.push(
    `Date: ${report.date}; ${report.cores} cores (${report.cpu}), Deno ${report.deno}, load ${report.loadAverage.start} at start, ${report.loadAverage.end} at end`,
  );
  const servers = [...new Set(report.turns.map((t) => t.server))];
  const loads = [...new Set(report.turns.map((t) => t.load))];
  const rows: string[][] = [];
  for (const load of loads) {
    const of = (server: string) =>
      report.turns.filter((t) => t.server === server && t.load === load);
    const bare = of("bare");
    const bareRps = mean(bare, (t) => t.wrk.requestsPerSec);
    const bareUs = cpuOver(bare);
    for (const server of servers) {
      const turns = of(server);
      if (turns.length === 0) continue;
      const rps = mean(turns, (t) => t.wrk.requestsPerSec);
      const us = cpuOver(turns);
      rows.push([
        load,
        server,
        formatCount(rps),
        formatMs(mean(turns, (t) => t.wrk.latencyMs.p50)),
        formatMs(Math.max(...turns.map((t) => t.wrk.latencyMs.p99))),
        formatCount(us, 1),
        server === "bare" ? "" : (rps / bareRps).toFixed(2),
        server === "bare" ? "" : (us / bareUs).toFixed(1),
        String(turns.reduce((n, t) => n + t.wrk.non2xx, 0)),
        turns.every((t) => t.atRest) ? "yes" : "no",
      ]);
    }
  }
  out.push("");
  out.push(markdownTable([
    "load",
    "server",
    "req/s",
    "p50 ms",
    "p99 ms (worst)",
    "CPU µs/entry",
    "req/s of bare",
    "CPU of bare",
    "non-2xx",
    "settled",
  ], rows));
  out.push("");
  out.push(...threadLines(report.turns, loads, servers));
  if (report.options.rest === 0) out.push("At rest: not measured (--rest 0)");
  else {
    out.push(
      `At rest (${report.options.rest} s): ${
        Object.entries(report.rest).map(([k, v]) =>
          `${k} ${(v * 100).toFixed(2)} % of a core`
        ).join(", ")
      }`,
    );
  }
  out.push(
    `Peak RSS: ${
      Object.entries(report.peakRssKiB).map(([k, v]) =>
        `${k} ${(v / 1024).toFixed(1)} MiB`
      ).join(", ")
    }`,
  );
  for (const [name, s] of Object.entries(report.stores)) {
    out.push(
      `${name}: stored ${s.stored}, accepted counter ${s.accepted}, pending ${s.pendingBatches}, dead letters ${s.deadLetters}`,
    );
  }
  out.push(`(CPU from /proc in ticks of ${1000 / CLOCK_TICKS} ms)`);
  return out.join("\n");
}

/**
 * Per load and service, CPU µs per entry by thread (the threads that took
 * at least 1 µs), over all its turns.
 *
 * @example
 * ```ts
 * threadLines(turns, ["2000/s"], ["service"]);
 * // ["By thread, µs per entry: service 2000/s: deno 152, worker-1 40, sw-0 31", ""]
 * ```
 */
export function threadLines(
  turns: CostTurn[],
  loads: string[],
  servers: string[],
): string[] {
  const out: string[] = [];
  for (const load of loads) {
    for (const server of servers) {
      const of = turns.filter((t) =>
        t.server === server && t.load === load && t.threads
      );
      const entries = of.reduce((n, t) => n + t.accepted, 0);
      if (of.length === 0 || entries === 0) continue;
      const sums = new Map<string, number>();
      for (const t of of) {
        for (const [name, s] of Object.entries(t.threads!)) {
          sums.set(name, (sums.get(name) ?? 0) + s);
        }
      }
      const parts = [...sums].map(([name, s]) => [name, s * 1e6 / entries])
        .filter(([, us]) => (us as number) >= 1)
        .sort((a, b) => (b[1] as number) - (a[1] as number))
        .map(([name, us]) => `${name} ${formatCount(us as number)}`);
      out.push(`${server} ${load}: ${parts.join(", ")}`);
    }
  }
  return out.length === 0
    ? []
    : ["By thread, µs per entry: " + out.join("; "), ""];
}

/** CPU µs per entry over several turns: their CPU over their entries. */
function cpuOver(turns: CostTurn[]): number {
  const entries = turns.reduce((n, t) => n + t.accepted, 0);
  const cpu = turns.reduce((n, t) => n + t.cpuSeconds, 0);
  return entries === 0 ? 0 : cpu * 1e6 / entries;
}

/**
 * Ingestion benchmark: drives the service (`main.ts`) and a bare
 * `Deno.serve` server (`bench/bare.ts`) with wrk in alternating turns, then
 * reports requests/s, latency percentiles, the service/bare ratio, non-2xx
 * answers, how long the consumer takes to store what was accepted (drain
 * time), stored versus accepted counts and the service's peak RSS.
 *
 * It is a benchmark, not a test: `deno task test` does not run it. It starts
 * both servers on 127.0.0.1 only, with a KV file in a fresh temporary
 * directory, and removes both when it ends. wrk must be installed; the script
 * does not install it (it prints how and exits 1).
 *
 * ```sh
 * deno task bench                                  # 10 s turns, 2 turns, 64 and 256 connections
 * deno task bench --duration 3 --turns 1           # quick run
 * deno task bench --json > summary.json            # machine-readable summary on stdout
 * ```
 *
 * Options: `--duration <s>` per turn (10), `--turns <n>` per server and
 * connection count (2), `--connections <list>` ("64,256"), `--threads <n>`
 * wrk threads (2), `--drain-timeout <s>` (180), `--json`.
 *
 * After each service turn it waits until the service has stored everything
 * it accepted (no batch left under `pending_batches`) before the next turn,
 * so that the consumer's catch-up neither lands in a bare turn nor carries
 * into the next service turn. Progress goes to stderr, the report to stdout.
 *
 * @module
 */
import { parseArgs } from "node:util";
import { countStoredEntries } from "../db/query/mod.ts";
import { createProject } from "../db/projects.ts";
import {
  acceptedCountKey,
  deadLettersPrefix,
  pendingBatchesPrefix,
} from "../db/keys.ts";

/** Options of one benchmark run, from the command line. */
export interface BenchOptions {
  /** Seconds per wrk turn. @default {10} */
  duration: number;
  /** Turns per server and connection count. @default {2} */
  turns: number;
  /** Connection counts, each run in its own series of turns. @default {[64, 256]} */
  connections: number[];
  /** wrk threads (`-t`). @default {2} */
  threads: number;
  /** Longest wait for the service to store what it accepted, seconds. @default {180} */
  drainTimeout: number;
  /** Print the summary as JSON instead of tables. @default {false} */
  json: boolean;
}

/** What one wrk run printed, parsed. */
export interface WrkResult {
  requestsPerSec: number;
  /** Completed responses, any status. */
  requests: number;
  /** Responses with a status of 400 or more ("Non-2xx or 3xx responses"). */
  non2xx: number;
  socketErrors: {
    connect: number;
    read: number;
    write: number;
    timeout: number;
  };
  latencyMs: {
    avg: number;
    max: number;
    p50: number;
    p75: number;
    p90: number;
    p99: number;
  };
}

/** One turn of one server. */
export interface TurnResult {
  server: "service" | "bare";
  connections: number;
  turn: number;
  wrk: WrkResult;
  /** The exact wrk command line (body elided). */
  command: string;
  /** Service turns: time from the end of load until no batch was pending, ms. */
  drainMs?: number;
  /** Service turns: whether the drain finished before the timeout. */
  drained?: boolean;
  /** Service turns: batches still pending at the first poll after the load. */
  pendingAtFirstPoll?: number;
  /** Service turns: growth of the project's accepted counter during the turn and its drain. */
  storedDelta?: number;
}

/** Summary of one server at one connection count. */
export interface SeriesSummary {
  server: "service" | "bare";
  connections: number;
  turns: number;
  meanRequestsPerSec: number;
  minRequestsPerSec: number;
  maxRequestsPerSec: number;
  /** Mean over turns of each turn's p50. */
  p50Ms: number;
  /** Highest p99 of the turns. */
  p99Ms: number;
  requests: number;
  non2xx: number;
  socketErrors: number;
}

/** Memory of one process, from /proc/<pid>/status, KiB. */
export interface Memory {
  pid: number;
  command: string;
  vmHwmKiB: number;
  vmRssKiB: number;
}

const ROOT = new URL("../", import.meta.url);
const ENTRY_ORIGIN = "https://bench.example";
const LOGS_PATH = "/api/v1/logs";
/** Address numbers available to X-Forwarded-For (10.x.y.z). */
const ADDRESS_SPACE = 2 ** 24;
/**
 * The `deno` arguments of the `start` task in deno.json, so that the service
 * runs here exactly as `deno task start` runs it.
 */
const SERVICE_ARGS = await startTaskArgs();

async function startTaskArgs(): Promise<string[]> {
  const config = JSON.parse(
    await Deno.readTextFile(new URL("deno.json", ROOT)),
  );
  const words = String(config.tasks?.start ?? "").trim().split(/\s+/);
  if (words[0] !== "deno" || words.at(-1) !== "main.ts") {
    throw new Error(
      `Cannot read the "start" task of deno.json: ${words.join(" ")}`,
    );
  }
  return words.slice(1);
}

/**
 * Parses the command line.
 *
 * @example
 * ```ts
 * parseOptions(["--duration", "3", "--turns", "1"]).connections; // [64, 256]
 * ```
 */
export function parseOptions(args: string[]): BenchOptions {
  const { values } = parseArgs({
    args,
    options: {
      duration: { type: "string", default: "10" },
      turns: { type: "string", default: "2" },
      connections: { type: "string", default: "64,256" },
      threads: { type: "string", default: "2" },
      "drain-timeout": { type: "string", default: "180" },
      json: { type: "boolean", default: false },
    },
  });
  const whole = (name: string, text: string, min: number, max: number) => {
    const n = Number(text);
    if (!Number.isInteger(n) || n < min || n > max) {
      throw new RangeError(
        `Cannot read "--${name}": expected a whole number from ${min} to ${max}, got "${text}"`,
      );
    }
    return n;
  };
  const threads = whole("threads", values.threads, 1, 16);
  const connections = values.connections.split(",").map((c) =>
    whole("connections", c.trim(), 1, 10_000)
  );
  for (const c of connections) {
    if (c < threads) {
      throw new RangeError(
        `Cannot run ${c} connections on ${threads} threads: wrk needs one connection per thread at least`,
      );
    }
  }
  return {
    duration: whole("duration", values.duration, 1, 600),
    turns: whole("turns", values.turns, 1, 20),
    connections,
    threads,
    drainTimeout: whole("drain-timeout", values["drain-timeout"], 1, 3600),
    json: values.json,
  };
}

/**
 * The entry every request posts: about 300 bytes of JSON for `projectId`.
 *
 * @example
 * ```ts
 * new TextEncoder().encode(benchEntry("AAAAAAAAAAAAAAAAAAAAAA")).length; // ~300
 * ```
 */
export function benchEntry(projectId: string): string {
  return JSON.stringify({
    level: "info",
    projectId,
    data: {
      title: "Checkout failed",
      message: "Payment provider answered 502 after 3 retries; cart kept",
    },
    device: { os: "Android 15", model: "Pixel 9", app: "2.14.0" },
    context: { route: "/checkout", session: "s-4f9a2c71", release: "2026.7.1" },
  });
}

const UNIT_MS: Record<string, number> = {
  us: 0.001,
  ms: 1,
  s: 1000,
  m: 60_000,
  h: 3_600_000,
};

function durationMs(text: string): number {
  const match = /^([\d.]+)(us|ms|s|m|h)$/.exec(text);
  if (!match) throw new SyntaxError(`Cannot read wrk duration "${text}"`);
  return Number(match[1]) * UNIT_MS[match[2]!]!;
}

/**
 * Parses the output of `wrk --latency`.
 *
 * @example
 * ```ts
 * parseWrk(output).latencyMs.p99;
 * ```
 */
export function parseWrk(output: string): WrkResult {
  const need = (pattern: RegExp, what: string): RegExpExecArray => {
    const match = pattern.exec(output);
    if (!match) {
      throw new SyntaxError(`Cannot find ${what} in wrk's output:\n${output}`);
    }
    return match;
  };
  const latency = need(
    /^\s*Latency\s+(\S+)\s+\S+\s+(\S+)/m,
    "the latency line",
  );
  const percentile = (p: number) =>
    durationMs(need(new RegExp(`^\\s*${p}%\\s+(\\S+)`, "m"), `p${p}`)[1]!);
  const socket =
    /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/
      .exec(output);
  return {
    requestsPerSec: Number(
      need(/Requests\/sec:\s+([\d.]+)/, "Requests/sec")[1],
    ),
    requests: Number(need(/(\d+) requests in /, "the request count")[1]),
    non2xx: Number(/Non-2xx or 3xx responses: (\d+)/.exec(output)?.[1] ?? 0),
    socketErrors: {
      connect: Number(socket?.[1] ?? 0),
      read: Number(socket?.[2] ?? 0),
      write: Number(socket?.[3] ?? 0),
      timeout: Number(socket?.[4] ?? 0),
    },
    latencyMs: {
      avg: durationMs(latency[1]!),
      max: durationMs(latency[2]!),
      p50: percentile(50),
      p75: percentile(75),
      p90: percentile(90),
      p99: percentile(99),
    },
  };
}

/** Exits 1 with install instructions when wrk cannot be run. */
export async function requireWrk(): Promise<void> {
  try {
    // `wrk -v` prints its version and exits 1; only a missing binary throws.
    await new Deno.Command("wrk", {
      args: ["-v"],
      stdout: "null",
      stderr: "null",
    })
      .output();
  } catch (error) {
    if (!(error instanceof Deno.errors.NotFound)) throw error;
    console.error(
      "Cannot find wrk on PATH: install it first, e.g. `apt-get install -y wrk` (Debian, Ubuntu) or `brew install wrk` (macOS)",
    );
    Deno.exit(1);
  }
}

/** Asks the kernel for a free port on 127.0.0.1. */
export function freePort(): number {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const { port } = listener.addr as Deno.NetAddr;
  listener.close();
  return port;
}

/** A server started as a subprocess, its output collected. */
export interface ServerProcess {
  name: string;
  child: Deno.ChildProcess;
  url: string;
  /** Lines the process wrote to stderr so far. */
  stderrLines(): number;
  /** The last lines of its stdout and stderr. */
  tail(): string;
  /** SIGTERM, then SIGKILL after `graceMs`; resolves once it exited. */
  stop(graceMs?: number): Promise<void>;
}

/** Options of {@linkcode startServer}. */
export interface StartServerOptions {
  name: string;
  args: string[];
  port: number;
  env?: Record<string, string>;
  /** Longest wait for the first answer. @default {30000} */
  readyTimeoutMs?: number;
}

/**
 * Starts `deno <args>` in the repository root and waits until
 * `http://127.0.0.1:<port>/` answers (any status).
 */
export async function startServer(
  options: StartServerOptions,
): Promise<ServerProcess> {
  const child = new Deno.Command(Deno.execPath(), {
    args: options.args,
    cwd: ROOT,
    // Added to the inherited environment.
    env: options.env ?? {},
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const lines: string[] = [];
  let errLines = 0;
  const collect = async (
    stream: ReadableStream<Uint8Array>,
    isErr: boolean,
  ) => {
    const reader = stream.pipeThrough(new TextDecoderStream()).getReader();
    let rest = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      const parts = (rest + value).split("\n");
      rest = parts.pop()!;
      for (const line of parts) {
        if (isErr) errLines++;
        lines.push(line);
        if (lines.length > 40) lines.shift();
      }
    }
  };
  const reading = Promise.all([
    collect(child.stdout, false),
    collect(child.stderr, true),
  ]).catch(() => {});
  let exited = false;
  const status = child.status.then((s) => {
    exited = true;
    return s;
  });
  const url = `http://127.0.0.1:${options.port}`;
  const server: ServerProcess = {
    name: options.name,
    child,
    url,
    stderrLines: () => errLines,
    tail: () => lines.join("\n"),
    async stop(graceMs = 10_000) {
      if (!exited) {
        try {
          child.kill("SIGTERM");
        } catch { /* already gone */ }
        const timer = setTimeout(() => {
          try {
            child.kill("SIGKILL");
          } catch { /* already gone */ }
        }, graceMs);
        await status;
        clearTimeout(timer);
      }
      await reading;
    },
  };
  const deadline = Date.now() + (options.readyTimeoutMs ?? 30_000);
  for (;;) {
    if (exited) {
      await reading;
      throw new Error(
        `Cannot start ${options.name}: it exited with code ${
          (await status).code
        }\n${server.tail()}`,
      );
    }
    try {
      const res = await fetch(`${url}/`, { signal: AbortSignal.timeout(1000) });
      await res.body?.cancel();
      return server;
    } catch {
      if (Date.now() > deadline) {
        await server.stop();
        throw new Error(
          `Cannot reach ${options.name} at ${url} within ${
            options.readyTimeoutMs ?? 30_000
          } ms\n${server.tail()}`,
        );
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
}

/** Options of {@linkcode runWrk}. */
export interface RunWrkOptions {
  url: string;
  connections: number;
  threads: number;
  durationSeconds: number;
  body: string;
  /** First X-Forwarded-For address number of this run. */
  addressOffset: number;
  /** Kills wrk when aborted. */
  signal?: AbortSignal;
}

/** Runs wrk once with bench/post.lua; returns its parsed output and command. */
export async function runWrk(
  options: RunWrkOptions,
): Promise<{ result: WrkResult; command: string; output: string }> {
  const script = new URL("./post.lua", import.meta.url).pathname;
  const args = [
    `-t${options.threads}`,
    `-c${options.connections}`,
    `-d${options.durationSeconds}s`,
    "--timeout",
    "10s",
    "--latency",
    "-s",
    script,
    options.url,
    "--",
    options.body,
    String(options.addressOffset),
    String(options.threads),
  ];
  const out = await new Deno.Command("wrk", {
    args,
    stdout: "piped",
    stderr: "piped",
    ...(options.signal ? { signal: options.signal } : {}),
  }).output();
  const output = new TextDecoder().decode(out.stdout) +
    new TextDecoder().decode(out.stderr);
  if (!out.success) {
    throw new Error(`Cannot run wrk (exit code ${out.code}):\n${output}`);
  }
  const shown = args.map((a) =>
    a === options.body ? "'<entry>'" : a === script ? "bench/post.lua" : a
  );
  return {
    result: parseWrk(output),
    command: `wrk ${shown.join(" ")}`,
    output,
  };
}

async function countPrefix(kv: Deno.Kv, prefix: Deno.KvKey): Promise<number> {
  let n = 0;
  for await (const _ of kv.list({ prefix }, { batchSize: 1000 })) n++;
  return n;
}

/** Counts the stored entries (pages and compacted chunks). */
function countStored(kv: Deno.Kv, projectId: string): Promise<number> {
  return countStoredEntries(kv, projectId);
}

async function acceptedCount(kv: Deno.Kv, projectId: string): Promise<number> {
  const entry = await kv.get<Deno.KvU64>(acceptedCountKey(projectId));
  return entry.value === null ? 0 : Number(entry.value.value);
}

/** Options of {@linkcode waitForDrain}. */
export interface WaitForDrainOptions {
  kvPath: string;
  projectId: string;
  /** When the load ended (`performance.now()`). */
  loadEnded: number;
  timeoutMs: number;
  /** Poll period. @default {25} */
  pollMs?: number;
}

/** What {@linkcode waitForDrain} saw. */
export interface DrainResult {
  /** Whether no batch was pending before the timeout. */
  drained: boolean;
  /** From the end of load to the first poll that found no pending batch, ms. */
  drainMs: number;
  /** Batches pending at the first poll (counted up to 10,000). */
  pendingAtFirstPoll: number;
  /** The project's accepted counter at the end. */
  accepted: number;
}

/**
 * Polls the service's KV file until no batch is pending. The drain time is
 * exact to `pollMs` plus the time of one poll.
 */
export async function waitForDrain(
  options: WaitForDrainOptions,
): Promise<DrainResult> {
  const kv = await Deno.openKv(options.kvPath);
  try {
    const deadline = options.loadEnded + options.timeoutMs;
    let pendingAtFirstPoll: number | undefined;
    for (;;) {
      let pending = 0;
      const iter = kv.list({ prefix: pendingBatchesPrefix() }, {
        limit: pendingAtFirstPoll === undefined ? 10_000 : 1,
      });
      for await (const _ of iter) pending++;
      pendingAtFirstPoll ??= pending;
      const now = performance.now();
      if (pending === 0 || now > deadline) {
        return {
          drained: pending === 0,
          drainMs: now - options.loadEnded,
          pendingAtFirstPoll,
          accepted: await acceptedCount(kv, options.projectId),
        };
      }
      await new Promise((resolve) => setTimeout(resolve, options.pollMs ?? 25));
    }
  } finally {
    kv.close();
  }
}

/** What the KV file holds for the project at the end. */
export interface StoreCount {
  /** Keys under `logs/<projectId>`. */
  stored: number;
  /** The project's accepted counter. */
  accepted: number;
  pendingBatches: number;
  deadLetters: number;
}

/** Counts stored entries, pending batches and dead letters. */
export async function countStore(
  kvPath: string,
  projectId: string,
): Promise<StoreCount> {
  const kv = await Deno.openKv(kvPath);
  try {
    return {
      stored: await countStored(kv, projectId),
      accepted: await acceptedCount(kv, projectId),
      pendingBatches: await countPrefix(kv, pendingBatchesPrefix()),
      deadLetters: await countPrefix(kv, deadLettersPrefix()),
    };
  } finally {
    kv.close();
  }
}

/**
 * Reads files under /proc through `cat`: Deno refuses /proc to anything but
 * `--allow-all`, while the task grants `--allow-run`. Returns `null` when
 * `cat` fails (a process that exited meanwhile); with several paths, what it
 * could read.
 */
export async function readProc(paths: string[]): Promise<string | null> {
  try {
    const out = await new Deno.Command("cat", {
      args: paths,
      stdout: "piped",
      stderr: "null",
    }).output();
    if (!out.success && paths.length === 1) return null;
    return new TextDecoder().decode(out.stdout);
  } catch {
    return null;
  }
}

async function parentPids(): Promise<Map<number, number>> {
  const parents = new Map<number, number>();
  const out = await new Deno.Command("sh", {
    args: ["-c", "cat /proc/[0-9]*/stat 2>/dev/null"],
    stdout: "piped",
    stderr: "null",
  }).output();
  for (const line of new TextDecoder().decode(out.stdout).split("\n")) {
    // "pid (comm) state ppid ...": comm may hold spaces and parentheses.
    const close = line.lastIndexOf(")");
    if (close < 0) continue;
    const pid = Number(line.slice(0, line.indexOf(" ")));
    const ppid = Number(line.slice(close + 2).split(" ")[1]);
    if (Number.isInteger(pid) && Number.isInteger(ppid)) parents.set(pid, ppid);
  }
  return parents;
}

/**
 * Returns `pid` and all its descendants, from the parent ids in
 * /proc/<pid>/stat (kernels built without CONFIG_PROC_CHILDREN have no
 * /proc/<pid>/task/<tid>/children).
 */
export async function processTree(pid: number): Promise<number[]> {
  const parents = await parentPids();
  const tree = [pid];
  for (let i = 0; i < tree.length; i++) {
    for (const [child, parent] of parents) {
      if (parent === tree[i]) tree.push(child);
    }
  }
  return tree;
}

/** Reads VmHWM and VmRSS of a process, or `null` once it is gone. */
export async function readMemory(pid: number): Promise<Memory | null> {
  try {
    const status = await readProc([`/proc/${pid}/status`]);
    if (status === null) return null;
    const cmdline = (await readProc([`/proc/${pid}/cmdline`]) ?? "")
      .split("\0").filter((s) => s !== "").join(" ");
    const field = (name: string) =>
      Number(new RegExp(`^${name}:\\s+(\\d+) kB`, "m").exec(status)?.[1] ?? 0);
    return {
      pid,
      command: cmdline,
      vmHwmKiB: field("VmHWM"),
      vmRssKiB: field("VmRSS"),
    };
  } catch {
    return null;
  }
}

/**
 * Samples the summed VmRSS of a process tree every `periodMs`; `stop()`
 * returns the highest sum seen.
 */
export function sampleRss(
  pid: number,
  periodMs = 250,
): { stop(): Promise<number> } {
  let peak = 0;
  let tree = [pid];
  let running = true;
  const loop = (async () => {
    let round = 0;
    while (running) {
      try {
        if (round++ % 40 === 0) tree = await processTree(pid);
        let sum = 0;
        for (const p of tree) sum += (await readMemory(p))?.vmRssKiB ?? 0;
        peak = Math.max(peak, sum);
      } catch { /* a failed sample is skipped */ }
      await new Promise((resolve) => setTimeout(resolve, periodMs));
    }
  })();
  return {
    async stop() {
      running = false;
      await loop;
      return peak;
    },
  };
}

/** Summarizes the turns of one server at one connection count. */
export function summarize(turns: TurnResult[]): SeriesSummary {
  const first = turns[0]!;
  const rps = turns.map((t) => t.wrk.requestsPerSec);
  const sum = (f: (t: TurnResult) => number) =>
    turns.reduce((total, t) => total + f(t), 0);
  return {
    server: first.server,
    connections: first.connections,
    turns: turns.length,
    meanRequestsPerSec: sum((t) => t.wrk.requestsPerSec) / turns.length,
    minRequestsPerSec: Math.min(...rps),
    maxRequestsPerSec: Math.max(...rps),
    p50Ms: sum((t) => t.wrk.latencyMs.p50) / turns.length,
    p99Ms: Math.max(...turns.map((t) => t.wrk.latencyMs.p99)),
    requests: sum((t) => t.wrk.requests),
    non2xx: sum((t) => t.wrk.non2xx),
    socketErrors: sum((t) => {
      const e = t.wrk.socketErrors;
      return e.connect + e.read + e.write + e.timeout;
    }),
  };
}

function fmt(n: number, digits = 0): string {
  return n.toLocaleString("en-US", {
    minimumFractionDigits: digits,
    maximumFractionDigits: digits,
  });
}

function ms(n: number): string {
  return n < 10 ? n.toFixed(2) : n < 100 ? n.toFixed(1) : n.toFixed(0);
}

/** Renders rows as a Markdown table. */
export function markdownTable(head: string[], rows: string[][]): string {
  const line = (cells: string[]) => `| ${cells.join(" | ")} |`;
  return [line(head), line(head.map(() => "---")), ...rows.map(line)].join(
    "\n",
  );
}

/** Everything a run measured. */
export interface BenchReport {
  command: string;
  /** What `deno task bench` runs. */
  expandedCommand: string;
  /** How the service was started (environment in `serviceEnv`). */
  serviceCommand: string;
  date: string;
  cores: number;
  cpu: string;
  deno: string;
  loadAverage: { start: string; end: string };
  options: BenchOptions;
  entryBytes: number;
  serviceEnv: Record<string, string>;
  summaries: SeriesSummary[];
  ratios: { connections: number; serviceOverBare: number }[];
  turns: TurnResult[];
  drain: {
    /** Drain of the last service turn. */
    lastMs: number;
    lastDrained: boolean;
    lastPendingAtFirstPoll: number;
    /** 2xx answers wrk saw over all service turns. */
    accepted2xx: number;
    store: StoreCount;
  };
  memory: {
    service: Memory | null;
    serviceSampledPeakKiB: number;
    bare: Memory | null;
  };
  serverStderrLines: { service: number; bare: number };
}

/**
 * A drain time as printed: when the first poll already found nothing pending,
 * the time of that poll is only an upper bound.
 */
function drainText(
  drainMs: number,
  drained: boolean,
  pendingAtFirstPoll: number,
): string {
  if (!drained) return `> ${fmt(drainMs)} (timed out)`;
  return pendingAtFirstPoll === 0 ? `≤ ${fmt(drainMs)}` : fmt(drainMs);
}

/** Renders the human-readable report. */
export function renderReport(report: BenchReport): string {
  const out: string[] = [];
  out.push(`Command: ${report.command}`);
  out.push(`  which runs: ${report.expandedCommand}`);
  out.push(
    `Service: ${
      Object.entries(report.serviceEnv).map(([k, v]) => `${k}=${v}`).join(" ")
    } ${report.serviceCommand}`,
  );
  out.push(`wrk: ${report.turns[0]?.command ?? "?"} (per turn)`);
  out.push(`Date: ${report.date}`);
  out.push(
    `Machine: ${report.cores} cores (${report.cpu}), Deno ${report.deno}, load average ${report.loadAverage.start} at start, ${report.loadAverage.end} at end`,
  );
  out.push(
    `Turns: ${report.options.turns} per server and connection count, ${report.options.duration} s each, wrk -t${report.options.threads}, alternating service/bare, connection counts interleaved; entry ${report.entryBytes} bytes`,
  );
  out.push("");
  out.push(markdownTable(
    [
      "server",
      "conns",
      "req/s mean",
      "req/s min–max",
      "p50 ms (mean)",
      "p99 ms (worst turn)",
      "service/bare",
      "requests",
      "non-2xx",
      "socket errors",
    ],
    report.summaries.map((s) => {
      const ratio = report.ratios.find((r) => r.connections === s.connections);
      return [
        s.server,
        String(s.connections),
        fmt(s.meanRequestsPerSec),
        `${fmt(s.minRequestsPerSec)}–${fmt(s.maxRequestsPerSec)}`,
        ms(s.p50Ms),
        ms(s.p99Ms),
        s.server === "service" && ratio
          ? `${(ratio.serviceOverBare * 100).toFixed(1)} %`
          : "",
        fmt(s.requests),
        fmt(s.non2xx),
        fmt(s.socketErrors),
      ];
    }),
  ));
  out.push("");
  out.push("Turns in the order run:");
  out.push("");
  out.push(markdownTable(
    [
      "#",
      "server",
      "conns",
      "req/s",
      "p50 ms",
      "p90 ms",
      "p99 ms",
      "max ms",
      "non-2xx",
      "drain ms",
      "batches pending at first poll",
      "stored in turn (accepted counter)",
    ],
    report.turns.map((t, i) => [
      String(i + 1),
      t.server,
      String(t.connections),
      fmt(t.wrk.requestsPerSec),
      ms(t.wrk.latencyMs.p50),
      ms(t.wrk.latencyMs.p90),
      ms(t.wrk.latencyMs.p99),
      ms(t.wrk.latencyMs.max),
      fmt(t.wrk.non2xx),
      t.drainMs === undefined
        ? ""
        : drainText(t.drainMs, t.drained!, t.pendingAtFirstPoll!),
      t.pendingAtFirstPoll === undefined ? "" : fmt(t.pendingAtFirstPoll),
      t.storedDelta === undefined ? "" : fmt(t.storedDelta),
    ]),
  ));
  const d = report.drain;
  out.push("");
  out.push(
    `Drain after the last service turn: ${
      drainText(d.lastMs, d.lastDrained, d.lastPendingAtFirstPoll)
    } ms (polled every 25 ms; "≤" when the first poll already found no pending batch)`,
  );
  out.push(
    `Stored entries: ${
      fmt(d.store.stored)
    } under logs/<project>; accepted counter ${
      fmt(d.store.accepted)
    }; 2xx answers seen by wrk over all service turns ${
      fmt(d.accepted2xx)
    } (difference ${
      fmt(d.store.stored - d.accepted2xx)
    }); pending batches ${d.store.pendingBatches}; dead letters ${d.store.deadLetters}`,
  );
  const m = report.memory;
  out.push(
    `Service peak RSS: VmHWM ${
      m.service ? fmt(m.service.vmHwmKiB / 1024, 1) : "?"
    } MiB (pid ${m.service?.pid ?? "?"}: ${
      m.service?.command ?? "?"
    }); sampled VmRSS peak ${
      fmt(m.serviceSampledPeakKiB / 1024, 1)
    } MiB; bare server VmHWM ${
      m.bare ? fmt(m.bare.vmHwmKiB / 1024, 1) : "?"
    } MiB`,
  );
  out.push(
    `Lines on stderr: service ${report.serverStderrLines.service}, bare ${report.serverStderrLines.bare}`,
  );
  return out.join("\n");
}

async function loadAverage(): Promise<string> {
  const text = await readProc(["/proc/loadavg"]);
  return text === null ? "?" : text.split(" ").slice(0, 3).join(" ");
}

async function cpuModel(): Promise<string> {
  const info = await readProc(["/proc/cpuinfo"]) ?? "";
  return /^model name\s*:\s*(.+)$/m.exec(info)?.[1] ?? "?";
}

/** The server process of a `deno run` tree: the deepest one running `script`. */
async function serverMemory(
  pid: number,
  script: string,
): Promise<Memory | null> {
  const tree = await processTree(pid);
  let found: Memory | null = null;
  for (const p of tree) {
    const memory = await readMemory(p);
    if (memory && memory.command.includes(script)) {
      // The binary's path names this machine; the report says "deno".
      found = {
        ...memory,
        command: memory.command.replace(Deno.execPath(), "deno"),
      };
    }
  }
  return found ?? await readMemory(pid);
}

/** Runs the whole benchmark; returns the report. */
export async function runBench(options: BenchOptions): Promise<BenchReport> {
  const log = (line: string) => console.error(line);
  const startLoad = await loadAverage();
  const date = new Date().toISOString();
  const dir = await Deno.makeTempDir({ prefix: "ingest-bench-" });
  const kvPath = `${dir}/kv.sqlite`;
  const servers: ServerProcess[] = [];
  const aborter = new AbortController();
  let cleaning: Promise<void> | undefined;
  const cleanup = () =>
    cleaning ??= (async () => {
      aborter.abort();
      for (const server of servers) await server.stop();
      await Deno.remove(dir, { recursive: true }).catch(() => {});
    })();
  let interrupted = false;
  const onSignal = () => {
    interrupted = true;
    log(
      "Interrupted: stopping the servers and removing the temporary directory",
    );
    cleanup().finally(() => Deno.exit(130));
  };
  Deno.addSignalListener("SIGINT", onSignal);
  try {
    const kv = await Deno.openKv(kvPath);
    const project = await createProject(kv, {
      name: "bench",
      allow: [ENTRY_ORIGIN],
    });
    kv.close();
    const body = benchEntry(project.id);

    const servicePort = freePort();
    const serviceEnv = {
      KV_PATH: kvPath,
      PORT: String(servicePort),
      HOSTNAME: "127.0.0.1",
      TRUST_PROXY: "1",
    };
    log(`Starting the service on 127.0.0.1:${servicePort}`);
    const service = await startServer({
      name: "the service",
      args: SERVICE_ARGS,
      port: servicePort,
      env: serviceEnv,
    });
    servers.push(service);
    const barePort = freePort();
    log(`Starting the bare server on 127.0.0.1:${barePort}`);
    const bare = await startServer({
      name: "the bare server",
      args: [
        "run",
        "--allow-net",
        "bench/bare.ts",
        "--port",
        String(barePort),
        "--hostname",
        "127.0.0.1",
      ],
      port: barePort,
    });
    servers.push(bare);
    const sampler = sampleRss(service.child.pid);

    const serviceTurns = options.connections.length * options.turns;
    const slice = Math.floor(ADDRESS_SPACE / serviceTurns);
    let serviceTurn = 0;
    const turns: TurnResult[] = [];
    let accepted = 0;
    // Turn-major order (64, 256, 64, 256, ...): the database grows and the
    // machine's other load drifts during the run, and this order spreads both
    // over every connection count instead of giving the later ones all of it.
    for (let turn = 1; turn <= options.turns; turn++) {
      for (const connections of options.connections) {
        for (const which of ["service", "bare"] as const) {
          const server = which === "service" ? service : bare;
          const offset = which === "service" ? serviceTurn++ * slice : 0;
          log(
            `Turn ${turn}/${options.turns}: ${which}, ${connections} connections, ${options.duration} s`,
          );
          const { result, command } = await runWrk({
            url: `${server.url}${LOGS_PATH}`,
            connections,
            threads: options.threads,
            durationSeconds: options.duration,
            body,
            addressOffset: offset,
            signal: aborter.signal,
          });
          const loadEnded = performance.now();
          const record: TurnResult = {
            server: which,
            connections,
            turn,
            wrk: result,
            command,
          };
          log(
            `  ${fmt(result.requestsPerSec)} req/s, p50 ${
              ms(result.latencyMs.p50)
            } ms, p99 ${ms(result.latencyMs.p99)} ms, non-2xx ${result.non2xx}`,
          );
          if (which === "service") {
            if (result.requests > slice) {
              log(
                `  ${result.requests} requests exceed the ${slice} distinct X-Forwarded-For addresses of a turn: addresses repeated`,
              );
            }
            // Waiting here keeps the consumer's work out of the bare turn that follows.
            const drain = await waitForDrain({
              kvPath,
              projectId: project.id,
              loadEnded,
              timeoutMs: options.drainTimeout * 1000,
            });
            record.drainMs = drain.drainMs;
            record.drained = drain.drained;
            record.pendingAtFirstPoll = drain.pendingAtFirstPoll;
            record.storedDelta = drain.accepted - accepted;
            accepted = drain.accepted;
            log(
              `  drain ${fmt(drain.drainMs)} ms${
                drain.drained ? "" : " (timed out)"
              }, ${drain.pendingAtFirstPoll} batches pending at the first poll, ${
                fmt(record.storedDelta)
              } stored in this turn`,
            );
          }
          turns.push(record);
        }
      }
    }

    const serviceMemory = await serverMemory(service.child.pid, "main.ts");
    const bareMemory = await serverMemory(bare.child.pid, "bare.ts");
    const sampledPeak = await sampler.stop();
    const lastService = turns.findLast((t) => t.server === "service")!;
    const store = await countStore(kvPath, project.id);
    const summaries: SeriesSummary[] = [];
    for (const connections of options.connections) {
      for (const which of ["service", "bare"] as const) {
        summaries.push(summarize(
          turns.filter((t) =>
            t.server === which && t.connections === connections
          ),
        ));
      }
    }
    const ratios = options.connections.map((connections) => {
      const of = (which: string) =>
        summaries.find((s) =>
          s.server === which && s.connections === connections
        )!.meanRequestsPerSec;
      return { connections, serviceOverBare: of("service") / of("bare") };
    });
    const serviceSeries = turns.filter((t) => t.server === "service");
    return {
      command: ["deno task bench", ...Deno.args].join(" "),
      expandedCommand: [
        "deno run --allow-net --allow-env --allow-read --allow-write --allow-run bench/ingest.ts",
        ...Deno.args,
      ].join(" "),
      serviceCommand: ["deno", ...SERVICE_ARGS].join(" "),
      date,
      cores: navigator.hardwareConcurrency,
      cpu: await cpuModel(),
      deno: Deno.version.deno,
      loadAverage: { start: startLoad, end: await loadAverage() },
      options,
      entryBytes: new TextEncoder().encode(body).length,
      serviceEnv: { ...serviceEnv, KV_PATH: "<temporary directory>/kv.sqlite" },
      summaries,
      ratios,
      turns,
      drain: {
        lastMs: lastService.drainMs!,
        lastDrained: lastService.drained!,
        lastPendingAtFirstPoll: lastService.pendingAtFirstPoll!,
        accepted2xx: serviceSeries.reduce(
          (n, t) => n + t.wrk.requests - t.wrk.non2xx,
          0,
        ),
        store,
      },
      memory: {
        service: serviceMemory,
        serviceSampledPeakKiB: sampledPeak,
        bare: bareMemory,
      },
      serverStderrLines: {
        service: service.stderrLines(),
        bare: bare.stderrLines(),
      },
    };
  } finally {
    const tails = servers.map((s) => ({ name: s.name, tail: s.tail() }));
    Deno.removeSignalListener("SIGINT", onSignal);
    await cleanup();
    if (interrupted) Deno.exit(130);
    for (const { name, tail } of tails) {
      if (tail.trim() !== "") log(`Last output of ${name}:\n${tail}`);
    }
  }
}

if (import.meta.main) {
  let options: BenchOptions;
  try {
    options = parseOptions(Deno.args);
  } catch (error) {
    console.error((error as Error).message);
    Deno.exit(2);
  }
  await requireWrk();
  const report = await runBench(options);
  console.log(
    options.json ? JSON.stringify(report, null, 2) : renderReport(report),
  );
}

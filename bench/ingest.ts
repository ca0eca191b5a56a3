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
 * does not install it (it prints how and exits 1). The service runs with the
 * command of deno.json's `start` task, read when the bench starts.
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
 * This module is the orchestration; the parts live beside it: options.ts
 * (command line, deno.json tasks), turns.ts (the turns and their drains),
 * wrk.ts (load and its output), server.ts
 * (the servers as subprocesses), process.ts (/proc), store.ts (the KV file),
 * report.ts (summaries and rendering).
 *
 * @module
 */
import {
  type BenchOptions,
  denoArgs,
  parseOptions,
  taskCommand,
} from "./options.ts";
import { parseCostOptions, renderCost, runCost } from "./cost.ts";
import { cpuModel, loadAverage, sampleRss, serverMemory } from "./process.ts";
import {
  type BenchReport,
  renderReport,
  summarizeTurns,
  type TurnResult,
} from "./report.ts";
import {
  freePort,
  type ServerProcess,
  startServer,
  startService,
} from "./server.ts";
import { countStore, createBenchProject } from "./store.ts";
import { runTurns, type Servers } from "./turns.ts";
import { hasWrk } from "./wrk.ts";

const ROOT = new URL("../", import.meta.url);

/**
 * The entry every request posts: 295 bytes of JSON for a 22-character
 * `projectId`.
 *
 * @example
 * ```ts
 * new TextEncoder().encode(benchEntry("AAAAAAAAAAAAAAAAAAAAAA")).length; // 295
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

/** The commands of deno.json's `start` and `bench` tasks, read now. */
async function readTasks(): Promise<{ service: string[]; bench: string }> {
  const config = await Deno.readTextFile(new URL("deno.json", ROOT));
  return {
    service: denoArgs(taskCommand(config, "start"), "main.ts"),
    bench: taskCommand(config, "bench"),
  };
}

/** Options of {@linkcode runBench}. */
interface RunBenchOptions {
  options: BenchOptions;
  /** The arguments given to `deno task bench`, as reported. */
  args: string[];
}

const log = (line: string) => console.error(line);

/**
 * Starts the service over `kvPath` and the bare server, each pushed on
 * `started` as soon as it runs, so that a failure stops what did start.
 */
async function startServers(
  kvPath: string,
  serviceArgs: string[],
  started: ServerProcess[],
): Promise<Servers> {
  const servicePort = freePort();
  log(`Starting the service on 127.0.0.1:${servicePort}`);
  const { service, env: serviceEnv } = await startService({
    cwd: ROOT,
    args: serviceArgs,
    kvPath,
    port: servicePort,
  });
  started.push(service);
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
    cwd: ROOT,
    port: barePort,
  });
  started.push(bare);
  return { service, bare, serviceEnv };
}

/**
 * What is read once the turns are over, in this order: the servers' memory,
 * then the sampled peak, then the store.
 */
async function measureAfter(
  { service, bare }: Servers,
  sampler: { stop(): Promise<number> },
  kvPath: string,
  projectId: string,
) {
  const serviceMemory = await serverMemory(service.child.pid, "main.ts");
  const bareMemory = await serverMemory(bare.child.pid, "bare.ts");
  const sampledPeak = await sampler.stop();
  return {
    memory: {
      service: serviceMemory,
      serviceSampledPeakKiB: sampledPeak,
      bare: bareMemory,
    },
    store: await countStore(kvPath, projectId),
  };
}

/** What a run measured. */
interface Measured {
  tasks: { service: string[]; bench: string };
  date: string;
  startLoad: string;
  body: string;
  turns: TurnResult[];
  after: Awaited<ReturnType<typeof measureAfter>>;
}

/** The report of a run. */
async function assembleReport(
  { options, args }: RunBenchOptions,
  { service, bare, serviceEnv }: Servers,
  measured: Measured,
): Promise<BenchReport> {
  const { tasks, turns } = measured;
  const lastService = turns.findLast((t) => t.server === "service")!;
  const { summaries, ratios } = summarizeTurns(turns, options.connections);
  const serviceSeries = turns.filter((t) => t.server === "service");
  return {
    command: ["deno task bench", ...args].join(" "),
    expandedCommand: [tasks.bench, ...args].join(" "),
    serviceCommand: ["deno", ...tasks.service].join(" "),
    date: measured.date,
    cores: navigator.hardwareConcurrency,
    cpu: await cpuModel(),
    deno: Deno.version.deno,
    loadAverage: { start: measured.startLoad, end: await loadAverage() },
    options,
    entryBytes: new TextEncoder().encode(measured.body).length,
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
      store: measured.after.store,
    },
    memory: measured.after.memory,
    serverStderrLines: {
      service: service.stderrLines(),
      bare: bare.stderrLines(),
    },
  };
}

/** Runs the whole benchmark; returns the report. */
async function runBench(bench: RunBenchOptions): Promise<BenchReport> {
  const tasks = await readTasks();
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
    const project = await createBenchProject(kvPath, "bench");
    const body = benchEntry(project.id);
    const started = await startServers(kvPath, tasks.service, servers);
    const sampler = sampleRss(started.service.child.pid);
    const turns = await runTurns({
      options: bench.options,
      kvPath,
      projectId: project.id,
      body,
      signal: aborter.signal,
    }, started);
    const after = await measureAfter(started, sampler, kvPath, project.id);
    return await assembleReport(bench, started, {
      tasks,
      date,
      startLoad,
      body,
      turns,
      after,
    });
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

/**
 * Parses `args` with `parse`, runs `run` and prints its report with
 * `render` (or as JSON); returns the exit code: 2 for a malformed command
 * line, 1 without wrk.
 */
async function runCommand<O extends { json: boolean }, R>(
  args: string[],
  parse: (args: string[]) => O,
  run: (options: O) => Promise<R>,
  render: (report: R) => string,
): Promise<number> {
  let options: O;
  try {
    options = parse(args);
  } catch (error) {
    console.error((error as Error).message);
    return 2;
  }
  if (!await hasWrk()) {
    console.error(
      "Cannot find wrk on PATH: install it first, e.g. `apt-get install -y wrk` (Debian, Ubuntu) or `brew install wrk` (macOS)",
    );
    return 1;
  }
  const report = await run(options);
  console.log(options.json ? JSON.stringify(report, null, 2) : render(report));
  return 0;
}

/**
 * Runs the benchmark for the command line `args`: CPU per entry at three
 * loads (bench/cost.ts), or with `--series` the burst at each connection
 * count of `--connections`.
 */
function main(args: string[]): Promise<number> {
  if (!args.includes("--series")) {
    return runCommand(
      args,
      parseCostOptions,
      (options) => runCost(options, args),
      renderCost,
    );
  }
  const rest = args.filter((a) => a !== "--series");
  return runCommand(
    rest,
    parseOptions,
    (options) => runBench({ options, args }),
    renderReport,
  );
}

if (import.meta.main) {
  // Not awaited at the top level: importing this module runs nothing. A
  // failure rejects the promise, which ends the process with the error.
  main(Deno.args).then((code) => {
    if (code !== 0) Deno.exit(code);
  });
}

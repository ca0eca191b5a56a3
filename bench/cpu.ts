/**
 * CPU time per request: the cost measure of the ingestion path that repeats
 * on a shared machine where requests per second do not (BENCHMARKS.md, "CPU
 * per request").
 *
 * Each server runs pinned to one CPU (`taskset`), wrk to another. Around a
 * wrk run of `--duration` seconds the tool reads the server's CPU time
 * (user + system, all threads, from /proc/<pid>/stat); for the service it
 * reads it again only once every batch accepted in the turn is stored, so
 * the consumer's work is counted too. CPU time divided by the answers wrk
 * counted is the cost of one request. Other processes on the machine slow a
 * turn down but hardly change what one request costs, so turns repeat within
 * a few per cent; the tool reports every turn and the median per server.
 *
 * Servers: the service of one or more checkouts (`--service <dir>`, default
 * this one; each runs as its deno.json `start` task runs it, with its own KV
 * file and the bench project) and the bare server (`bench/bare.ts`). They are
 * driven in turns, one server after the other, `--turns` times.
 *
 * ```sh
 * deno run -A bench/cpu.ts                                 # service and bare, 3 turns of 5 s, 64 connections
 * deno run -A bench/cpu.ts --service . --service ../base   # two checkouts side by side
 * deno run -A bench/cpu.ts --service .,QUEUE=off            # a checkout with variables of its own
 * ```
 *
 * With `--split`, only the server's main thread (the JavaScript) stays on
 * `--server-cpu`; its other threads (KV's writer, the garbage collector's
 * worker threads) share `--wrk-cpu` with wrk, as on a machine where they run on
 * another core. The main thread's CPU per request is then the cost that
 * bounds requests per second.
 *
 * Two processes of the same checkout differ: on this shared machine their
 * medians over 8 to 10 turns came 8 to 19 % apart. Compare builds with two
 * processes each (`--service a --service b --service a/ --service b/`) and
 * trust only differences well beyond that.
 *
 * Options: `--duration <s>` (5), `--turns <n>` (3), `--connections <n>` (64),
 * `--threads <n>` (2), `--server-cpu <list>` ("1"), `--wrk-cpu <list>` ("0"),
 * `--drain-timeout <s>` (180: longest wait for a service to store what it
 * accepted), `--json`.
 *
 * @module
 */
import { parseArgs } from "node:util";
import { benchEntry } from "./ingest.ts";
import { denoArgs, taskCommand } from "./options.ts";
import { cpuTicks, loadAverage, threadTicks } from "./process.ts";
import { formatCount, markdownTable } from "./report.ts";
import { freePort, type ServerProcess, startServer } from "./server.ts";
import { createBenchProject, waitForDrain } from "./store.ts";
import { runWrk } from "./wrk.ts";

const ROOT = new URL("../", import.meta.url);
const LOGS_PATH = "/api/v1/logs";
/** Address numbers available to X-Forwarded-For (10.x.y.z). */
const ADDRESS_SPACE = 2 ** 24;

/** One server under measurement. */
interface Target {
  label: string;
  server: ServerProcess;
  /** Set for a service: its KV file and project, to wait for the drain. */
  store?: { kvPath: string; projectId: string };
}

/** One turn of one server. */
export interface CpuTurn {
  label: string;
  turn: number;
  requests: number;
  non2xx: number;
  requestsPerSec: number;
  /** CPU time of the server over the turn (and its drain), ms. */
  cpuMs: number;
  /** CPU µs per answered request. */
  usPerRequest: number;
  /** CPU µs of the main thread (the JavaScript's) per answered request. */
  mainUsPerRequest: number;
  /**
   * CPU µs per answered request of each kind of thread, by name: "deno"
   * (the main thread), "sw-0" (KV's writer), "V8 DefaultWorke" (the
   * garbage collector's worker threads).
   */
  threads: Record<string, number>;
  drainMs?: number;
}

/**
 * The median of `values` (the mean of the middle two for an even count).
 *
 * @example
 * ```ts
 * median([3, 1, 2]); // 2
 * ```
 */
export function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1
    ? sorted[mid]!
    : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

async function clockTicksPerSecond(): Promise<number> {
  try {
    const out = await new Deno.Command("getconf", {
      args: ["CLK_TCK"],
      stdout: "piped",
    }).output();
    const n = Number(new TextDecoder().decode(out.stdout).trim());
    return Number.isInteger(n) && n > 0 ? n : 100;
  } catch {
    return 100;
  }
}

async function taskset(args: string[]): Promise<void> {
  const out = await new Deno.Command("taskset", {
    args,
    stdout: "null",
    stderr: "piped",
  }).output();
  if (!out.success) {
    throw new Error(
      `Cannot run taskset ${args.join(" ")}: ${
        new TextDecoder().decode(out.stderr)
      }`,
    );
  }
}

/**
 * Pins every thread of `pid` to `cpus`; with `others`, every thread but the
 * main one goes to `others` instead (KV's writer, the garbage collector's
 * worker threads), as they would run on another core than the JavaScript.
 */
async function pin(pid: number, cpus: string, others?: string): Promise<void> {
  await taskset(["-a", "-p", "-c", others ?? cpus, String(pid)]);
  if (others !== undefined) await taskset(["-p", "-c", cpus, String(pid)]);
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    args: Deno.args,
    options: {
      duration: { type: "string", default: "5" },
      turns: { type: "string", default: "3" },
      connections: { type: "string", default: "64" },
      threads: { type: "string", default: "2" },
      service: { type: "string", multiple: true },
      bare: { type: "boolean", default: true },
      "server-cpu": { type: "string", default: "1" },
      "wrk-cpu": { type: "string", default: "0" },
      json: { type: "boolean", default: false },
      split: { type: "boolean", default: false },
      "drain-timeout": { type: "string", default: "180" },
    },
    allowNegative: true,
  });
  const duration = Number(values.duration);
  const turns = Number(values.turns);
  const connections = Number(values.connections);
  const threads = Number(values.threads);
  const services = values.service ?? ["."];
  const log = (line: string) => console.error(line);
  const ticksPerSecond = await clockTicksPerSecond();
  const targets: Target[] = [];
  const dirs: string[] = [];
  const cleanup = async () => {
    for (const t of targets) await t.server.stop();
    for (const dir of dirs) {
      await Deno.remove(dir, { recursive: true }).catch(() => {});
    }
  };
  Deno.addSignalListener(
    "SIGINT",
    () => cleanup().finally(() => Deno.exit(130)),
  );
  let body = "";
  try {
    for (const [i, spec] of services.entries()) {
      // "<dir>[,NAME=value...]": a checkout and variables of its own.
      const [service = ".", ...assignments] = spec.split(",");
      const extraEnv = Object.fromEntries(
        assignments.map((
          a,
        ) => [a.slice(0, a.indexOf("=")), a.slice(a.indexOf("=") + 1)]),
      );
      const cwd = new URL(
        `${service.replace(/\/?$/, "/")}`,
        `file://${Deno.cwd()}/`,
      );
      const config = await Deno.readTextFile(new URL("deno.json", cwd));
      const dir = await Deno.makeTempDir({ prefix: "cpu-bench-" });
      dirs.push(dir);
      const kvPath = `${dir}/kv.sqlite`;
      const project = await createBenchProject(kvPath, "bench");
      body = benchEntry(project.id);
      const port = freePort();
      const label = services.length === 1 ? "service" : `service ${spec}`;
      log(`Starting ${label} on 127.0.0.1:${port}`);
      const server = await startServer({
        name: label,
        args: denoArgs(taskCommand(config, "start"), "main.ts"),
        cwd,
        port,
        env: {
          ...extraEnv,
          KV_PATH: kvPath,
          PORT: String(port),
          HOSTNAME: "127.0.0.1",
          TRUST_PROXY: "1",
        },
      });
      targets.push({
        label: services.length === 1 ? "service" : `service#${i + 1} ${spec}`,
        server,
        store: { kvPath, projectId: project.id },
      });
    }
    if (values.bare) {
      const port = freePort();
      const server = await startServer({
        name: "bare",
        args: ["run", "--allow-net", "bench/bare.ts", "--port", String(port)],
        cwd: ROOT,
        port,
      });
      targets.push({ label: "bare", server });
    }
    for (const t of targets) {
      await pin(
        t.server.child.pid,
        values["server-cpu"],
        values.split ? values["wrk-cpu"] : undefined,
      );
    }
    const results: CpuTurn[] = [];
    const slice = Math.floor(ADDRESS_SPACE / (turns * targets.length));
    let offset = 0;
    const load = await loadAverage();
    for (let turn = 1; turn <= turns; turn++) {
      // Every other turn in reverse order, so that no server always runs
      // after the same one.
      const order = turn % 2 === 1 ? targets : [...targets].reverse();
      for (const t of order) {
        const pid = t.server.child.pid;
        const before = await cpuTicks(pid);
        // The main thread's id is the process's: the JavaScript runs there.
        const mainBefore = await cpuTicks(pid, pid);
        const threadsBefore = await threadTicks(pid);
        const { result } = await runWrk({
          url: `${t.server.url}${LOGS_PATH}`,
          connections,
          threads,
          durationSeconds: duration,
          body,
          addressOffset: offset,
          cpus: values["wrk-cpu"],
        });
        offset += slice;
        const loadEnded = performance.now();
        let drainMs: number | undefined;
        if (t.store) {
          const drain = await waitForDrain({
            ...t.store,
            loadEnded,
            timeoutMs: Number(values["drain-timeout"]) * 1000,
          });
          drainMs = drain.drainMs;
        }
        const cpuMs = (await cpuTicks(pid) - before) * 1000 / ticksPerSecond;
        const mainMs = (await cpuTicks(pid, pid) - mainBefore) * 1000 /
          ticksPerSecond;
        const byThread: Record<string, number> = {};
        for (const [name, ticks] of await threadTicks(pid)) {
          const used = ticks - (threadsBefore.get(name) ?? 0);
          if (used > 0) {
            byThread[name] = used * 1e6 / ticksPerSecond / result.requests;
          }
        }
        const row: CpuTurn = {
          label: t.label,
          turn,
          requests: result.requests,
          non2xx: result.non2xx,
          requestsPerSec: result.requestsPerSec,
          cpuMs,
          usPerRequest: cpuMs * 1000 / result.requests,
          mainUsPerRequest: mainMs * 1000 / result.requests,
          threads: byThread,
          ...(drainMs === undefined ? {} : { drainMs }),
        };
        results.push(row);
        log(
          `turn ${turn} ${t.label}: ${
            formatCount(result.requestsPerSec)
          } req/s, ${row.usPerRequest.toFixed(2)} µs CPU/request (main thread ${
            row.mainUsPerRequest.toFixed(2)
          })${result.non2xx ? `, ${result.non2xx} non-2xx` : ""}`,
        );
      }
    }
    const labels = targets.map((t) => t.label);
    const first = results.filter((r) => r.label === labels[0]);
    const summary = labels.map((label) => {
      const own = results.filter((r) => r.label === label);
      return {
        label,
        usPerRequest: median(own.map((r) => r.usPerRequest)),
        mainUsPerRequest: median(own.map((r) => r.mainUsPerRequest)),
        threads: Object.fromEntries(
          [...new Set(own.flatMap((r) => Object.keys(r.threads)))].map((
            name,
          ) => [name, median(own.map((r) => r.threads[name] ?? 0))]),
        ),
        requestsPerSec: median(own.map((r) => r.requestsPerSec)),
        all: own.map((r) => r.usPerRequest),
        // Each turn against the first server's turn just before it: load
        // that drifts between turns cancels out.
        relative: median(
          own.map((r, i) => r.usPerRequest / first[i]!.usPerRequest),
        ),
      };
    });
    if (values.json) {
      console.log(JSON.stringify({ load, summary, turns: results }, null, 2));
      return;
    }
    console.log(
      `${turns} turns of ${duration} s, ${connections} connections, wrk -t${threads} on CPU ${
        values["wrk-cpu"]
      }, servers on CPU ${values["server-cpu"]}; load average ${load}\n`,
    );
    console.log(markdownTable(
      [
        "server",
        "CPU µs/request (median)",
        "main thread µs/request",
        "by thread (medians)",
        `against ${labels[0]} (median of turns)`,
        "turns",
        "req/s (median)",
      ],
      summary.map((s) => [
        s.label,
        s.usPerRequest.toFixed(2),
        s.mainUsPerRequest.toFixed(2),
        Object.entries(s.threads).sort((a, b) => b[1] - a[1])
          .filter(([, us]) => us >= 0.05)
          .map(([name, us]) => `${name} ${us.toFixed(1)}`).join(", "),
        s.relative.toFixed(3),
        s.all.map((v) => v.toFixed(2)).join(", "),
        formatCount(s.requestsPerSec),
      ]),
    ));
  } finally {
    await cleanup();
  }
}

if (import.meta.main) await main();

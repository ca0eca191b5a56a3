/**
 * The benchmark's report: per-series summaries of the turns, the
 * service/bare ratios, and the human-readable rendering (Markdown tables,
 * the format BENCHMARKS.md quotes). Pure functions of measured data.
 *
 * @module
 */
import type { BenchOptions } from "./options.ts";
import type { Memory } from "./process.ts";
import type { StoreCount } from "./store.ts";
import type { WrkResult } from "./wrk.ts";

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
interface SeriesSummary {
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

/** The service's mean requests/s over the bare server's, at one connection count. */
interface Ratio {
  connections: number;
  serviceOverBare: number;
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
  ratios: Ratio[];
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

/** Summarizes the turns of one server at one connection count. */
function summarize(turns: TurnResult[]): SeriesSummary {
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

/**
 * One summary per connection count and server (service first), and the
 * service/bare ratio of mean requests/s per connection count. Every
 * connection count must have turns of both servers.
 *
 * @example
 * ```ts
 * const { summaries, ratios } = summarizeTurns(turns, [64, 256]);
 * ```
 */
export function summarizeTurns(
  turns: TurnResult[],
  connections: number[],
): { summaries: SeriesSummary[]; ratios: Ratio[] } {
  const summaries: SeriesSummary[] = [];
  for (const c of connections) {
    for (const which of ["service", "bare"] as const) {
      const series = turns.filter((t) =>
        t.server === which && t.connections === c
      );
      if (series.length === 0) {
        throw new RangeError(
          `Cannot summarize ${which} at ${c} connections: expected at least one turn`,
        );
      }
      summaries.push(summarize(series));
    }
  }
  const ratios = connections.map((c) => {
    const of = (which: string) =>
      summaries.find((s) => s.server === which && s.connections === c)!
        .meanRequestsPerSec;
    return { connections: c, serviceOverBare: of("service") / of("bare") };
  });
  return { summaries, ratios };
}

/**
 * A count as the report prints it: grouped thousands, `digits` decimals.
 *
 * @example
 * ```ts
 * formatCount(1234567.8); // "1,234,568"
 * ```
 */
export function formatCount(n: number, digits = 0): string {
  return n.toLocaleString("en-US", {
    minimumFractionDigits: digits,
    maximumFractionDigits: digits,
  });
}

/**
 * Milliseconds with three significant figures, or fewer above 100.
 *
 * @example
 * ```ts
 * formatMs(1.666); // "1.67"
 * ```
 */
export function formatMs(n: number): string {
  return n < 10 ? n.toFixed(2) : n < 100 ? n.toFixed(1) : n.toFixed(0);
}

/**
 * Renders rows as a Markdown table.
 *
 * @example
 * ```ts
 * markdownTable(["a"], [["1"]]); // "| a |\n| --- |\n| 1 |"
 * ```
 */
export function markdownTable(head: string[], rows: string[][]): string {
  const line = (cells: string[]) => `| ${cells.join(" | ")} |`;
  return [line(head), line(head.map(() => "---")), ...rows.map(line)].join(
    "\n",
  );
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
  if (!drained) return `> ${formatCount(drainMs)} (timed out)`;
  return pendingAtFirstPoll === 0
    ? `≤ ${formatCount(drainMs)}`
    : formatCount(drainMs);
}

/** The run's settings: commands, date, machine, turns. */
function settingsLines(report: BenchReport): string[] {
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
  return out;
}

/** The summary per server and connection count. */
function summaryTable(report: BenchReport): string {
  return markdownTable(
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
        formatCount(s.meanRequestsPerSec),
        `${formatCount(s.minRequestsPerSec)}–${
          formatCount(s.maxRequestsPerSec)
        }`,
        formatMs(s.p50Ms),
        formatMs(s.p99Ms),
        s.server === "service" && ratio
          ? `${(ratio.serviceOverBare * 100).toFixed(1)} %`
          : "",
        formatCount(s.requests),
        formatCount(s.non2xx),
        formatCount(s.socketErrors),
      ];
    }),
  );
}

/** Every turn, in the order run. */
function turnsTable(report: BenchReport): string {
  return markdownTable(
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
      formatCount(t.wrk.requestsPerSec),
      formatMs(t.wrk.latencyMs.p50),
      formatMs(t.wrk.latencyMs.p90),
      formatMs(t.wrk.latencyMs.p99),
      formatMs(t.wrk.latencyMs.max),
      formatCount(t.wrk.non2xx),
      t.drainMs === undefined
        ? ""
        : drainText(t.drainMs, t.drained!, t.pendingAtFirstPoll!),
      t.pendingAtFirstPoll === undefined
        ? ""
        : formatCount(t.pendingAtFirstPoll),
      t.storedDelta === undefined ? "" : formatCount(t.storedDelta),
    ]),
  );
}

/** The drain, the stored counts, the memory and the servers' stderr. */
function endLines(report: BenchReport): string[] {
  const out: string[] = [];
  const d = report.drain;
  out.push(
    `Drain after the last service turn: ${
      drainText(d.lastMs, d.lastDrained, d.lastPendingAtFirstPoll)
    } ms (polled every 25 ms; "≤" when the first poll already found no pending batch)`,
  );
  out.push(
    `Stored entries: ${
      formatCount(d.store.stored)
    } in the project's chunks; accepted counter ${
      formatCount(d.store.accepted)
    }; 2xx answers seen by wrk over all service turns ${
      formatCount(d.accepted2xx)
    } (difference ${
      formatCount(d.store.stored - d.accepted2xx)
    }); pending batches ${d.store.pendingBatches}; dead letters ${d.store.deadLetters}`,
  );
  const m = report.memory;
  out.push(
    `Service peak RSS: VmHWM ${
      m.service ? formatCount(m.service.vmHwmKiB / 1024, 1) : "?"
    } MiB (pid ${m.service?.pid ?? "?"}: ${
      m.service?.command ?? "?"
    }); sampled VmRSS peak ${
      formatCount(m.serviceSampledPeakKiB / 1024, 1)
    } MiB; bare server VmHWM ${
      m.bare ? formatCount(m.bare.vmHwmKiB / 1024, 1) : "?"
    } MiB`,
  );
  out.push(
    `Lines on stderr: service ${report.serverStderrLines.service}, bare ${report.serverStderrLines.bare}`,
  );
  return out;
}

/**
 * Renders the human-readable report: the run's settings, the summary table,
 * the turns in the order run, drain, stored counts and memory.
 *
 * @example
 * ```ts
 * console.log(renderReport(report));
 * ```
 */
export function renderReport(report: BenchReport): string {
  return [
    ...settingsLines(report),
    "",
    summaryTable(report),
    "",
    "Turns in the order run:",
    "",
    turnsTable(report),
    "",
    ...endLines(report),
  ].join("\n");
}

/**
 * CPU time of a process tree from /proc: user + system of every process of
 * the tree (fields 14 and 15 of /proc/<pid>/stat, in clock ticks, each the
 * sum of the process's threads: the isolate, KV's SQLite writer, the
 * runtime's pool), and the wait until a server is back at rest after a load.
 *
 * @module
 */
import { descendants, parseParentPids } from "./process.ts";

/** Clock ticks per second of /proc's CPU times (`getconf CLK_TCK`; 100 on Linux). */
export const CLOCK_TICKS = 100;

/**
 * Summed user + system ticks of the processes in `pids`, from concatenated
 * /proc/<pid>/stat lines (comm may hold spaces and parentheses).
 *
 * @example
 * ```ts
 * cpuTicks("7 (deno) S 1 7 7 0 -1 0 0 0 0 0 120 30 0 0\n", [7]); // 150
 * ```
 */
export function cpuTicks(statText: string, pids: number[]): number {
  const wanted = new Set(pids);
  let ticks = 0;
  for (const line of statText.split("\n")) {
    const close = line.lastIndexOf(")");
    if (close < 0) continue;
    if (!wanted.has(Number(line.slice(0, line.indexOf(" "))))) continue;
    // After ") ": state(3) ppid(4) ... utime(14) stime(15).
    const fields = line.slice(close + 2).split(" ");
    ticks += Number(fields[11]) + Number(fields[12]);
  }
  return ticks;
}

async function allStats(): Promise<string> {
  const out = await new Deno.Command("sh", {
    args: ["-c", "cat /proc/[0-9]*/stat 2>/dev/null"],
    stdout: "piped",
    stderr: "null",
  }).output();
  return new TextDecoder().decode(out.stdout);
}

/**
 * CPU seconds (user + system) used so far by `pid` and its descendants.
 *
 * @example
 * ```ts
 * const before = await treeCpuSeconds(child.pid);
 * ```
 */
export async function treeCpuSeconds(pid: number): Promise<number> {
  const text = await allStats();
  const tree = descendants(pid, parseParentPids(text));
  return cpuTicks(text, tree) / CLOCK_TICKS;
}

/**
 * CPU seconds (user + system) of each thread of `pid` so far, summed by the
 * thread's name (`deno`: the isolate's thread, which also serves HTTP;
 * `worker-1`: the merger's Worker; `sw-0`: KV's SQLite writer;
 * `V8 DefaultWorke`: V8's helpers, mostly the collector), read by `cat`
 * (Deno asks for every permission to read even its own /proc entry).
 *
 * @example
 * ```ts
 * const before = await threadSeconds(Deno.pid);
 * ```
 */
export async function threadSeconds(
  pid: number,
): Promise<Map<string, number>> {
  const out = await new Deno.Command("sh", {
    args: ["-c", `cat /proc/${pid}/task/*/stat 2>/dev/null`],
    stdout: "piped",
    stderr: "null",
  }).output();
  return threadTicks(new TextDecoder().decode(out.stdout), CLOCK_TICKS);
}

/**
 * Sums concatenated /proc/<pid>/task/<tid>/stat lines by thread name:
 * user + system ticks over `perSecond`.
 *
 * @example
 * ```ts
 * threadTicks("9 (sw-0) S 1 7 7 0 -1 0 0 0 0 0 120 30 0 0\n", 100); // sw-0 → 1.5
 * ```
 */
export function threadTicks(
  statText: string,
  perSecond: number,
): Map<string, number> {
  const seconds = new Map<string, number>();
  for (const stat of statText.split("\n")) {
    const close = stat.lastIndexOf(")");
    if (close < 0) continue;
    const name = stat.slice(stat.indexOf("(") + 1, close);
    const fields = stat.slice(close + 2).split(" ");
    const ticks = Number(fields[11]) + Number(fields[12]);
    seconds.set(name, (seconds.get(name) ?? 0) + ticks / perSecond);
  }
  return seconds;
}

/** Options of {@linkcode untilAtRest}. */
export interface RestOptions {
  /** Share of one core under which the tree counts as at rest. @default {0.02} */
  share?: number;
  /** For how long it must stay under `share`, ms. @default {2000} */
  windowMs?: number;
  /** Longest wait, ms. */
  timeoutMs: number;
  /** Sampling period, ms. @default {250} */
  periodMs?: number;
}

/**
 * Waits until the tree of `pid` has used under `share` of a core for
 * `windowMs`; answers its CPU seconds at the start of that quiet window (so
 * the window itself is not counted) and whether it came to rest in time.
 */
export async function untilAtRest(
  pid: number,
  options: RestOptions,
): Promise<{ cpuSeconds: number; atRest: boolean; waitedMs: number }> {
  const share = options.share ?? 0.02;
  const windowMs = options.windowMs ?? 2000;
  const periodMs = options.periodMs ?? 250;
  const start = performance.now();
  const samples: { at: number; cpu: number }[] = [];
  for (;;) {
    const at = performance.now();
    const cpu = await treeCpuSeconds(pid);
    samples.push({ at, cpu });
    // The oldest sample at least windowMs back.
    let from = -1;
    for (let i = samples.length - 1; i >= 0; i--) {
      if (at - samples[i]!.at >= windowMs) {
        from = i;
        break;
      }
    }
    if (from >= 0) {
      const base = samples[from]!;
      if ((cpu - base.cpu) * 1000 <= share * (at - base.at)) {
        return { cpuSeconds: base.cpu, atRest: true, waitedMs: at - start };
      }
      samples.splice(0, from);
    }
    if (at - start > options.timeoutMs) {
      return { cpuSeconds: cpu, atRest: false, waitedMs: at - start };
    }
    await new Promise((r) => setTimeout(r, periodMs));
  }
}

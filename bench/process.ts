/**
 * Process and machine facts from /proc: a process's memory (VmHWM, VmRSS),
 * its tree of descendants, a sampler of the tree's summed RSS, the load
 * average and the CPU model. Parsing is kept apart from reading, so the
 * parsers are tested on fixture text.
 *
 * Deno reads /proc only with `--allow-all`, while the bench task grants
 * `--allow-run`: files are read through `cat`.
 *
 * @module
 */

/** Memory of one process, from /proc/<pid>/status, KiB. */
export interface Memory {
  pid: number;
  command: string;
  vmHwmKiB: number;
  vmRssKiB: number;
}

/** Rounds of {@linkcode sampleRss} between two walks of the process tree. */
const TREE_REFRESH_ROUNDS = 40;

/**
 * Reads files under /proc through `cat`. Returns `null` when `cat` fails
 * (a process that exited meanwhile); with several paths, what it could read.
 */
async function readProc(paths: string[]): Promise<string | null> {
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

/**
 * VmHWM and VmRSS of the text of /proc/<pid>/status, KiB; 0 when absent (a
 * kernel thread has neither).
 *
 * @example
 * ```ts
 * parseStatus("VmHWM:\t  2048 kB\nVmRSS:\t  1024 kB\n"); // { vmHwmKiB: 2048, vmRssKiB: 1024 }
 * ```
 */
export function parseStatus(
  text: string,
): { vmHwmKiB: number; vmRssKiB: number } {
  const field = (name: string) =>
    Number(new RegExp(`^${name}:\\s+(\\d+) kB`, "m").exec(text)?.[1] ?? 0);
  return { vmHwmKiB: field("VmHWM"), vmRssKiB: field("VmRSS") };
}

/**
 * The command line of the text of /proc/<pid>/cmdline (NUL-separated).
 *
 * @example
 * ```ts
 * parseCmdline("deno\0run\0main.ts\0"); // "deno run main.ts"
 * ```
 */
export function parseCmdline(text: string): string {
  return text.split("\0").filter((s) => s !== "").join(" ");
}

/**
 * Parent ids by process id, from concatenated /proc/<pid>/stat lines
 * (`pid (comm) state ppid ...`, where comm may hold spaces and parentheses).
 *
 * @example
 * ```ts
 * parseParentPids("12 (deno) S 1 12 ...\n").get(12); // 1
 * ```
 */
export function parseParentPids(text: string): Map<number, number> {
  const parents = new Map<number, number>();
  for (const line of text.split("\n")) {
    const close = line.lastIndexOf(")");
    if (close < 0) continue;
    const pid = Number(line.slice(0, line.indexOf(" ")));
    const ppid = Number(line.slice(close + 2).split(" ")[1]);
    if (Number.isInteger(pid) && Number.isInteger(ppid)) parents.set(pid, ppid);
  }
  return parents;
}

/**
 * `pid` followed by all its descendants, breadth first.
 *
 * @example
 * ```ts
 * descendants(1, new Map([[2, 1], [3, 2], [4, 9]])); // [1, 2, 3]
 * ```
 */
export function descendants(
  pid: number,
  parents: Map<number, number>,
): number[] {
  const tree = [pid];
  for (let i = 0; i < tree.length; i++) {
    for (const [child, parent] of parents) {
      if (parent === tree[i]) tree.push(child);
    }
  }
  return tree;
}

/**
 * The first three numbers of /proc/loadavg.
 *
 * @example
 * ```ts
 * parseLoadAverage("0.28 0.23 0.10 1/88 6914\n"); // "0.28 0.23 0.10"
 * ```
 */
export function parseLoadAverage(text: string): string {
  return text.split(" ").slice(0, 3).join(" ");
}

/**
 * The first "model name" of /proc/cpuinfo, or "?".
 *
 * @example
 * ```ts
 * parseCpuModel("model name\t: AMD EPYC\n"); // "AMD EPYC"
 * ```
 */
export function parseCpuModel(text: string): string {
  return /^model name\s*:\s*(.+)$/m.exec(text)?.[1] ?? "?";
}

/**
 * Returns `pid` and all its descendants, from the parent ids in
 * /proc/<pid>/stat (kernels built without CONFIG_PROC_CHILDREN have no
 * /proc/<pid>/task/<tid>/children).
 */
async function processTree(pid: number): Promise<number[]> {
  const out = await new Deno.Command("sh", {
    args: ["-c", "cat /proc/[0-9]*/stat 2>/dev/null"],
    stdout: "piped",
    stderr: "null",
  }).output();
  return descendants(
    pid,
    parseParentPids(new TextDecoder().decode(out.stdout)),
  );
}

/** Reads VmHWM, VmRSS and the command line of a process, or `null` once it is gone. */
async function readMemory(pid: number): Promise<Memory | null> {
  const status = await readProc([`/proc/${pid}/status`]);
  if (status === null) return null;
  const command = parseCmdline(await readProc([`/proc/${pid}/cmdline`]) ?? "");
  return { pid, command, ...parseStatus(status) };
}

/**
 * Samples the summed VmRSS of a process tree every `periodMs`; `stop()`
 * returns the highest sum seen, KiB.
 *
 * @example
 * ```ts
 * const sampler = sampleRss(child.pid);
 * const peakKiB = await sampler.stop();
 * ```
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
        if (round++ % TREE_REFRESH_ROUNDS === 0) tree = await processTree(pid);
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

/**
 * The memory of the server process of a `deno run` tree: the deepest one
 * whose command line contains `script`, else the root.
 *
 * @example
 * ```ts
 * (await serverMemory(child.pid, "main.ts"))?.vmHwmKiB;
 * ```
 */
export async function serverMemory(
  pid: number,
  script: string,
): Promise<Memory | null> {
  let found: Memory | null = null;
  for (const p of await processTree(pid)) {
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

/**
 * The machine's load average, or "?" when /proc/loadavg cannot be read.
 *
 * @example
 * ```ts
 * await loadAverage(); // "0.28 0.23 0.10"
 * ```
 */
export async function loadAverage(): Promise<string> {
  const text = await readProc(["/proc/loadavg"]);
  return text === null ? "?" : parseLoadAverage(text);
}

/**
 * The machine's CPU model, or "?".
 *
 * @example
 * ```ts
 * await cpuModel(); // "AMD EPYC"
 * ```
 */
export async function cpuModel(): Promise<string> {
  return parseCpuModel(await readProc(["/proc/cpuinfo"]) ?? "");
}

/**
 * The load generator: runs wrk with `bench/post.lua` and parses what it
 * prints. `bench/post.lua` defines no `done()` hook, so wrk's standard
 * summary (with `--latency`) is all there is to read.
 *
 * @module
 */

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

/** wrk prints times in these units (its `units.c`). */
const UNIT_MS: Record<string, number> = {
  us: 0.001,
  ms: 1,
  s: 1000,
  m: 60_000,
  h: 3_600_000,
};

function durationMs(text: string): number {
  const match = /^([\d.]+)(us|ms|s|m|h)$/.exec(text);
  if (!match) {
    throw new SyntaxError(
      `Cannot read wrk duration "${text}": expected a number and us, ms, s, m or h`,
    );
  }
  return Number(match[1]) * UNIT_MS[match[2]!]!;
}

/**
 * Parses the output of `wrk --latency`. Socket errors and non-2xx answers
 * count 0 when wrk printed no line for them (it prints none when there are
 * none).
 *
 * @example
 * ```ts
 * parseWrk(output).latencyMs.p99; // milliseconds, whatever unit wrk printed
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
  // Avg, Stdev, Max on one line ("[^\S\n]" keeps the match on that line).
  const latency = need(
    /^[^\S\n]*Latency[^\S\n]+(\S+)[^\S\n]+\S+[^\S\n]+(\S+)/m,
    "the latency line",
  );
  const percentile = (p: number) =>
    durationMs(
      need(new RegExp(`^[^\\S\\n]*${p}%[^\\S\\n]+(\\S+)`, "m"), `p${p}`)[1]!,
    );
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

/**
 * Whether wrk can be run. `wrk -v` prints its version and exits 1, so only a
 * missing binary counts as absent.
 */
export async function hasWrk(): Promise<boolean> {
  try {
    await new Deno.Command("wrk", {
      args: ["-v"],
      stdout: "null",
      stderr: "null",
    }).output();
    return true;
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return false;
    throw error;
  }
}

/** One wrk run of a Lua script. */
interface WrkScriptRun {
  url: string;
  connections: number;
  threads: number;
  durationSeconds: number;
  /** Path of the Lua script. */
  script: string;
  /** What the script reads after `--`. @default none */
  scriptArgs?: string[];
  /** Kills wrk when aborted. */
  signal?: AbortSignal;
}

/** Options of {@linkcode runWrk}. */
interface RunWrkOptions extends Omit<WrkScriptRun, "script" | "scriptArgs"> {
  /** The entry every request sends, or `@FILE`: FILE's lines in turn. */
  body: string;
  /** First X-Forwarded-For address number of this run. */
  addressOffset: number;
  /** Wait of each connection before its next request, ms. @default {0} */
  delayMs?: number;
}

/** The wrk arguments of `run`: with `--latency`, so that it can be parsed. */
function scriptArgs(run: WrkScriptRun): string[] {
  return [
    `-t${run.threads}`,
    `-c${run.connections}`,
    `-d${run.durationSeconds}s`,
    "--timeout",
    "10s",
    "--latency",
    "-s",
    run.script,
    run.url,
    ...(run.scriptArgs ? ["--", ...run.scriptArgs] : []),
  ];
}

/**
 * The wrk arguments of one run with the Lua script at `script`, and the
 * command as reported (body elided, script named relative to the repository).
 * The arguments after `--` are those `bench/post.lua` reads, in its order:
 * body, address offset, threads and, when set, the delay.
 *
 * @example
 * ```ts
 * wrkArgs(options, "/abs/bench/post.lua").shown; // "wrk -t2 -c64 ... -- '<entry>' 0 2"
 * ```
 */
export function wrkArgs(
  options: RunWrkOptions,
  script: string,
): { args: string[]; shown: string } {
  const args = scriptArgs(postRun(options, script));
  const shown = args.map((a) =>
    a === options.body ? "'<entry>'" : a === script ? "bench/post.lua" : a
  );
  return { args, shown: `wrk ${shown.join(" ")}` };
}

function postRun(options: RunWrkOptions, script: string): WrkScriptRun {
  const { body, addressOffset, delayMs = 0, ...run } = options;
  const args = [body, String(addressOffset), String(options.threads)];
  return {
    ...run,
    script,
    scriptArgs: delayMs > 0 ? [...args, String(delayMs)] : args,
  };
}

/**
 * Runs wrk once with `bench/post.lua`; returns its parsed output and command.
 *
 * @example
 * ```ts
 * const { result } = await runWrk({ url, connections: 64, threads: 2, durationSeconds: 3, body, addressOffset: 0 });
 * ```
 */
export async function runWrk(
  options: RunWrkOptions,
): Promise<{ result: WrkResult; command: string }> {
  const script = new URL("./post.lua", import.meta.url).pathname;
  const { args, shown } = wrkArgs(options, script);
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
  return { result: parseWrk(output), command: shown };
}

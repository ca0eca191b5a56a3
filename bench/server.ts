/**
 * The servers under load: starts `deno <args>` as a subprocess, waits until
 * it answers, keeps the last lines it printed, and stops it (SIGTERM, then
 * SIGKILL after a grace period).
 *
 * @module
 */

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
interface StartServerOptions {
  /** How messages name the server ("the service"). */
  name: string;
  /** Arguments of the `deno` binary that runs this script. */
  args: string[];
  /** Working directory of the process (the repository root). */
  cwd: URL;
  port: number;
  /** Added to the inherited environment. @default {{}} */
  env?: Record<string, string>;
  /** Longest wait for the first answer. @default {30000} */
  readyTimeoutMs?: number;
}

/** Lines of output kept for {@linkcode ServerProcess.tail}. */
const TAIL_LINES = 40;

/**
 * Asks the kernel for a free port on 127.0.0.1.
 *
 * @example
 * ```ts
 * const port = freePort(); // e.g. 41873
 * ```
 */
export function freePort(): number {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const { port } = listener.addr as Deno.NetAddr;
  listener.close();
  return port;
}

/** Calls `onLine` with each line of `stream`, as it comes. */
async function readLines(
  stream: ReadableStream<Uint8Array>,
  onLine: (line: string) => void,
): Promise<void> {
  // The explicit type keeps this checking the same when a browser test's
  // `lib="dom"` is in the same type-check run.
  const decoder: TransformStream<Uint8Array, string> =
    new TextDecoderStream() as unknown as TransformStream<Uint8Array, string>;
  const reader = stream.pipeThrough(decoder).getReader();
  let rest = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    const parts = (rest + value).split("\n");
    rest = parts.pop()!;
    for (const line of parts) onLine(line);
  }
}

/** How {@linkcode untilAnswering} sees the process: exited yet, and how. */
interface Exit {
  exited(): boolean;
  status: Promise<Deno.CommandStatus>;
  /** Resolves once its output is read to the end. */
  reading: Promise<unknown>;
}

/**
 * Waits until `server` answers; throws with its last output when it exits
 * first, or, stopping it, when it does not answer in time.
 */
async function untilAnswering(
  server: ServerProcess,
  exit: Exit,
  options: StartServerOptions,
): Promise<ServerProcess> {
  const { url } = server;
  const readyTimeoutMs = options.readyTimeoutMs ?? 30_000;
  const deadline = Date.now() + readyTimeoutMs;
  for (;;) {
    if (exit.exited()) {
      await exit.reading;
      throw new Error(
        `Cannot start ${options.name}: it exited with code ${
          (await exit.status).code
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
          `Cannot reach ${options.name} at ${url} within ${readyTimeoutMs} ms\n${server.tail()}`,
        );
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
}

/**
 * Starts `deno <args>` in `cwd` and waits until `http://127.0.0.1:<port>/`
 * answers (any status). Throws with the process's last output when it exits
 * first or does not answer in time.
 *
 * @example
 * ```ts
 * const bare = await startServer({ name: "the bare server", args: ["run", "--allow-net", "bench/bare.ts"], cwd, port });
 * await bare.stop();
 * ```
 */
export async function startServer(
  options: StartServerOptions,
): Promise<ServerProcess> {
  const child = new Deno.Command(Deno.execPath(), {
    args: options.args,
    cwd: options.cwd,
    env: options.env ?? {},
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const lines: string[] = [];
  let errLines = 0;
  const keep = (line: string) => {
    lines.push(line);
    if (lines.length > TAIL_LINES) lines.shift();
  };
  const reading = Promise.all([
    readLines(child.stdout, keep),
    readLines(child.stderr, (line) => {
      errLines++;
      keep(line);
    }),
  ]).catch(() => {});
  let exited = false;
  const status = child.status.then((s) => {
    exited = true;
    return s;
  });
  const server: ServerProcess = {
    name: options.name,
    child,
    url: `http://127.0.0.1:${options.port}`,
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
  return await untilAnswering(server, {
    exited: () => exited,
    status,
    reading,
  }, options);
}

/** Options of {@linkcode startService}. */
interface StartServiceOptions {
  /** The checkout whose `main.ts` runs. */
  cwd: URL;
  /** The `deno` arguments of that checkout's `start` task. */
  args: string[];
  kvPath: string;
  port: number;
}

/**
 * Starts the service as its `start` task runs it, over `kvPath`, on
 * 127.0.0.1 only, trusting one proxy hop: bench/post.lua gives every request
 * its own X-Forwarded-For, the rate limiter's worst case. Answers the server
 * and the environment it was given.
 *
 * @example
 * ```ts
 * const { service } = await startService({ cwd, args, kvPath, port: freePort() });
 * ```
 */
export async function startService(
  options: StartServiceOptions,
): Promise<{ service: ServerProcess; env: Record<string, string> }> {
  const env = {
    KV_PATH: options.kvPath,
    PORT: String(options.port),
    HOSTNAME: "127.0.0.1",
    TRUST_PROXY: "1",
  };
  const service = await startServer({
    name: "the service",
    args: options.args,
    cwd: options.cwd,
    port: options.port,
    env,
  });
  return { service, env };
}

/**
 * The real server (`main.ts`) as a child process for the process-level
 * suites: started in the repository with the flags and environment a test
 * gives, waited for until its stdout names the addresses it listens on,
 * and stopped with a signal, each step bounded in time.
 *
 * @module
 */
import { createProject, type Project } from "../../db/projects.ts";
import { ORIGIN, textDecoder, withTimeout } from "./harness.ts";

const ROOT = new URL("../..", import.meta.url).pathname;
/** How long a server process may take to start or stop. */
export const PROCESS_TIMEOUT_MS = 30_000;

/**
 * A database in a new temporary folder, for servers started on its path,
 * with a project named `name` that allows {@linkcode ORIGIN}; the caller
 * removes `dir`.
 */
export async function tempDatabase(
  name: string,
): Promise<{ dir: string; kvPath: string; kv: Deno.Kv; project: Project }> {
  const dir = await Deno.makeTempDir();
  const kvPath = `${dir}/kv.sqlite`;
  const kv = await Deno.openKv(kvPath);
  const project = await createProject(kv, { name, allow: [ORIGIN] });
  return { dir, kvPath, kv, project };
}

/** A server started by {@linkcode spawnServer}. */
export interface SpawnedServer<K extends string = string> {
  child: Deno.ChildProcess;
  /** The first group of each pattern, under the pattern's name. */
  urls: Record<K, string>;
  /** Ends once the rest of stdout is read. */
  output: Promise<void>;
  /** Sends `signal` (SIGTERM by default) and waits for the exit. */
  stop(signal?: Deno.Signal): Promise<void>;
}

/** The permissions the server runs with. */
const FLAGS = [
  "--allow-net",
  "--allow-env",
  "--allow-read",
  "--allow-write",
  "--allow-sys=statfs",
];

/**
 * Runs `deno run` on `main.ts` with `env` (and `flags` beside the
 * permissions) and waits until its stdout matched every one of `patterns`;
 * kills it if that takes longer than {@linkcode PROCESS_TIMEOUT_MS}.
 */
export async function spawnServer<K extends string>(
  env: Record<string, string>,
  patterns: Record<K, RegExp>,
  flags: string[] = [],
): Promise<SpawnedServer<K>> {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", ...FLAGS, ...flags, "main.ts"],
    cwd: ROOT,
    env,
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  const lines = child.stdout.pipeThrough(textDecoder()).getReader();
  const listening = async (): Promise<SpawnedServer<K>> => {
    let seen = "";
    for (;;) {
      const { value, done } = await lines.read();
      if (done) throw new Error(`Server exited before listening: ${seen}`);
      seen += value;
      const found = Object.entries<RegExp>(patterns).map((
        [name, pattern],
      ) => [name, pattern.exec(seen)?.[1]]);
      if (found.every(([, url]) => url !== undefined)) {
        const output = (async () => {
          while (!(await lines.read()).done) { /* drain */ }
        })();
        const urls = Object.fromEntries(found) as Record<K, string>;
        const server: SpawnedServer<K> = {
          child,
          urls,
          output,
          stop: (signal) => stopSpawned(server, signal),
        };
        return server;
      }
    }
  };
  try {
    return await withTimeout(
      listening(),
      PROCESS_TIMEOUT_MS,
      "the server to listen",
    );
  } catch (error) {
    child.kill("SIGKILL");
    await child.status;
    throw error;
  }
}

/** Sends `signal` and waits for the exit, killing the process past the timeout. */
async function stopSpawned(
  server: SpawnedServer,
  signal: Deno.Signal = "SIGTERM",
): Promise<void> {
  try {
    server.child.kill(signal);
  } catch { /* already gone */ }
  try {
    await withTimeout(
      server.child.status,
      PROCESS_TIMEOUT_MS,
      `the server to exit on ${signal}`,
    );
  } catch (error) {
    server.child.kill("SIGKILL");
    await server.child.status;
    throw error;
  } finally {
    await server.output;
  }
}

/**
 * POSTs `entry` as JSON to the endpoint of the server at `url`, from
 * `origin`; answers the status, the body discarded.
 */
export async function postEntry(
  url: string,
  entry: Record<string, unknown>,
  origin: string,
  signal?: AbortSignal,
): Promise<number> {
  const res = await fetch(`${url}/api/v1/logs`, {
    method: "POST",
    headers: { "Content-Type": "application/json", Origin: origin },
    body: JSON.stringify(entry),
    signal,
  });
  await res.body?.cancel();
  return res.status;
}

/**
 * The server on the KV file `kvPath`, on a free port of 127.0.0.1, with a
 * rate limit no test of throughput reaches; waits until it listens.
 */
export function startIngestServer(
  kvPath: string,
): Promise<SpawnedServer<"ingest">> {
  return spawnServer(
    {
      KV_PATH: kvPath,
      PORT: "0",
      HOSTNAME: "127.0.0.1",
      RATE_LIMIT_RPS: "1000000",
      RATE_LIMIT_BURST: "1000000",
    },
    { ingest: /Listening on (http:\/\/[^/\s]+)/ },
  );
}

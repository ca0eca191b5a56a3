/**
 * Fixtures for the tests that run the real server against a real disk: a
 * tmpfs mounted for the test (Linux, root), a filler that takes all its
 * space, and the server as a child process whose output is kept.
 *
 * @module
 */
import { denoArgs, taskCommand } from "../../bench/options.ts";
import { textDecoder } from "./harness.ts";

const ROOT = new URL("../..", import.meta.url).pathname;

/** The arguments of `deno task start` after `deno`: the server as operators run it. */
const START_ARGS = denoArgs(
  taskCommand(await Deno.readTextFile(`${ROOT}deno.json`), "start"),
  "main.ts",
);

/** Resolves after `ms`. */
export function delay(ms: number): Promise<void> {
  return new Promise((go) => setTimeout(go, ms));
}

/** `promise`, or `fallback` after `ms`, whichever comes first; no timer left. */
export async function within<T>(
  promise: Promise<T>,
  ms: number,
  fallback: T,
): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    return await Promise.race([
      promise,
      new Promise<T>((go) => timer = setTimeout(() => go(fallback), ms)),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

async function run(cmd: string, args: string[]): Promise<boolean> {
  try {
    const out = await new Deno.Command(cmd, {
      args,
      stdout: "null",
      stderr: "null",
    }).output();
    return out.success;
  } catch {
    return false;
  }
}

/** Mounts a tmpfs of `size` on `dir`; false when not permitted. */
export function mountTmpfs(dir: string, size: string): Promise<boolean> {
  return Deno.build.os === "linux"
    ? run("mount", ["-t", "tmpfs", "-o", `size=${size}`, "tmpfs", dir])
    : Promise.resolve(false);
}

/** Makes the file system mounted on `dir` read-only. */
export function remountReadOnly(dir: string): Promise<boolean> {
  return run("mount", ["-o", "remount,ro", dir]);
}

/** Unmounts `dir`, retrying while it is busy (a child still exiting). */
export async function unmount(dir: string): Promise<void> {
  for (let i = 0; i < 20 && !(await run("umount", [dir])); i++) {
    await delay(100);
  }
}

/**
 * Makes the folder `dir`, mounts a tmpfs of `size` on it, and runs `fn`
 * with it; unmounts it afterwards, whether `fn` succeeded or not.
 */
export async function withTmpfs(
  dir: string,
  size: string,
  fn: (dir: string) => Promise<void>,
): Promise<void> {
  await Deno.mkdir(dir);
  if (!(await mountTmpfs(dir, size))) {
    throw new Error(`Cannot mount a tmpfs of ${size} on ${dir}`);
  }
  try {
    await fn(dir);
  } finally {
    await unmount(dir);
  }
}

/** Whether this process may mount a tmpfs (probed once, with a 64 KiB one). */
export const CAN_MOUNT: boolean = await (async () => {
  const dir = await Deno.makeTempDir();
  try {
    const ok = await mountTmpfs(dir, "64k");
    if (ok) await unmount(dir);
    return ok;
  } finally {
    await Deno.remove(dir);
  }
})();

/** Writes zeros to `path` until the disk is full, as `dd` would. */
export async function fill(path: string): Promise<number> {
  using file = await Deno.open(path, { write: true, create: true });
  let written = 0;
  for (const size of [1024 * 1024, 4096, 512]) {
    const chunk = new Uint8Array(size);
    for (;;) {
      try {
        written += await file.write(chunk);
      } catch {
        break; // no space left for a chunk of this size
      }
    }
  }
  return written;
}

/** A server started by {@linkcode startServer}. */
export interface Server {
  child: Deno.ChildProcess;
  url: string;
  exited: boolean;
  stderr: () => string;
  done: Promise<void>;
}

/** Starts `main.ts` with `env` added and waits until it listens (15 s at most). */
export async function startServer(
  env: Record<string, string>,
): Promise<Server> {
  const child = new Deno.Command(Deno.execPath(), {
    args: START_ARGS,
    cwd: ROOT,
    env: {
      PORT: "0",
      HOSTNAME: "127.0.0.1",
      RATE_LIMIT_RPS: "1000000",
      RATE_LIMIT_BURST: "1000000",
      ...env,
    },
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  let errText = "";
  const errDone = (async () => {
    for await (
      const text of child.stderr.pipeThrough(textDecoder())
    ) {
      errText += text;
    }
  })();
  const lines = child.stdout.pipeThrough(textDecoder()).getReader();
  const server: Partial<Server> = { child, exited: false };
  const status = child.status.then(() => {
    server.exited = true;
  });
  let seen = "";
  const deadline = Date.now() + 15_000;
  while (Date.now() < deadline) {
    const { value, done } = await within(
      lines.read(),
      deadline - Date.now(),
      { value: "", done: true },
    );
    if (done) break;
    seen += value;
    const match = /Listening on (http:\/\/[^/\s]+)/.exec(seen);
    if (match) {
      const outDone = (async () => {
        while (!(await lines.read()).done) { /* drain */ }
      })();
      return Object.assign(server, {
        url: match[1]!,
        stderr: () => errText,
        done: Promise.all([status, errDone, outDone]).then(() => {}),
      }) as Server;
    }
  }
  try {
    child.kill("SIGKILL");
  } catch { /* already gone */ }
  await Promise.all([status, errDone]);
  await lines.cancel();
  throw new Error(`Server did not listen: ${seen} ${errText}`);
}

/** Stops a server with SIGTERM (SIGKILL after 5 s) and waits for its end. */
export async function stopServer(server: Server): Promise<void> {
  if (!server.exited) {
    try {
      server.child.kill("SIGTERM");
    } catch { /* already gone */ }
    const stopped = await within(server.done.then(() => true), 5000, false);
    if (!stopped) server.child.kill("SIGKILL");
  }
  await server.done;
}

/** What a run of `main.ts` that ended by itself printed. */
export interface Exit {
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * Runs `main.ts` with `env` added, expecting it to end by itself within
 * 15 s (it is killed otherwise, and `code` is then -1).
 */
export function runMain(env: Record<string, string>): Promise<Exit> {
  return runToEnd(START_ARGS, { PORT: "0", HOSTNAME: "127.0.0.1", ...env });
}

/**
 * Runs Deno with `args` and `env` added, expecting it to end by itself
 * within 15 s (it is killed otherwise, and `code` is then -1).
 *
 * @example
 * ```ts
 * const exit = await runToEnd(["run", "-A", "dashboard/main.ts"], env);
 * ```
 */
export async function runToEnd(
  args: string[],
  env: Record<string, string>,
): Promise<Exit> {
  const child = new Deno.Command(Deno.execPath(), {
    args,
    cwd: ROOT,
    env,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const output = child.output();
  const ended = await within(output.then(() => true), 15_000, false);
  if (!ended) {
    try {
      child.kill("SIGKILL");
    } catch { /* already gone */ }
  }
  const out = await output;
  const text = new TextDecoder();
  return {
    code: ended ? out.code : -1,
    stdout: text.decode(out.stdout),
    stderr: text.decode(out.stderr),
  };
}

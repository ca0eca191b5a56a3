/**
 * A second process holding the write lock of a KV file: run with
 * `deno run --allow-read --allow-write lock_holder.ts FILE MS`, it opens the
 * SQLite file beside Deno KV, begins an immediate transaction, prints
 * `held`, waits for a line on its input, keeps the lock `MS` milliseconds
 * more, commits and prints `released`. The test starts the hold once its
 * writes are under way, so they wait `MS` at least on any machine.
 *
 * @module
 */
import { DatabaseSync } from "node:sqlite";

if (import.meta.main) {
  const [path, ms] = Deno.args;
  const db = new DatabaseSync(path!);
  db.exec("BEGIN IMMEDIATE");
  console.log("held");
  await Deno.stdin.readable.getReader().read();
  await new Promise((resolve) => setTimeout(resolve, Number(ms)));
  db.exec("COMMIT");
  db.close();
  console.log("released");
}

/** A holder process started by {@linkcode holdWriteLock}. */
export interface LockHolder {
  /** Starts the `ms` the lock is still held for. */
  start(): Promise<void>;
  /** Resolves once the holder has released the lock and exited. */
  done: Promise<void>;
}

/**
 * Starts a holder process on `path` and resolves once it holds the lock
 * (within 20 s, or it fails); it lets go `ms` milliseconds after `start()`.
 */
export async function holdWriteLock(
  path: string,
  ms: number,
): Promise<LockHolder> {
  const child = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--allow-read",
      "--allow-write",
      new URL(import.meta.url).pathname,
      path,
      String(ms),
    ],
    stdin: "piped",
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  const lines = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let seen = "";
  const timer = setTimeout(() => child.kill(), 20_000);
  while (!seen.includes("held")) {
    const { value, done } = await lines.read();
    if (done) throw new Error("The lock holder ended before holding the lock");
    seen += value;
  }
  const done = (async () => {
    while (!(await lines.read()).done) { /* drain until it exits */ }
    const status = await child.status;
    clearTimeout(timer);
    if (!status.success) throw new Error("The lock holder failed");
  })();
  const start = async () => {
    const input = child.stdin.getWriter();
    await input.write(new TextEncoder().encode("go\n"));
    await input.close();
  };
  return { done, start };
}

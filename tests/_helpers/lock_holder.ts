/**
 * A second process holding the write lock of a KV file: run with
 * `deno run --allow-read --allow-write lock_holder.ts FILE MS`, it opens the
 * SQLite file beside Deno KV, begins an immediate transaction, prints
 * `held`, keeps it `MS` milliseconds, commits and prints `released`.
 *
 * @module
 */
import { DatabaseSync } from "node:sqlite";

if (import.meta.main) {
  const [path, ms] = Deno.args;
  const db = new DatabaseSync(path!);
  db.exec("BEGIN IMMEDIATE");
  console.log("held");
  await new Promise((resolve) => setTimeout(resolve, Number(ms)));
  db.exec("COMMIT");
  db.close();
  console.log("released");
}

/** A holder process started by {@linkcode holdWriteLock}. */
export interface LockHolder {
  /** Resolves once the holder has released the lock and exited. */
  done: Promise<void>;
}

/**
 * Starts a holder process on `path` for `ms` milliseconds and resolves once
 * it holds the lock (within 20 s, or it fails).
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
  return { done };
}

/**
 * Opening the KV database named by `KV_PATH`: a file (its folder is created),
 * `:memory:`, a KV Connect URL, or — `undefined` — the platform's own KV.
 * Whatever stops it from opening (a directory where the file should be, a
 * read-only file or file system, a full disk) becomes one
 * {@linkcode KvOpenError} whose message names `KV_PATH`, so that the server
 * and the commands can stop with one line instead of a stack trace. The
 * handle given back retries what another process's lock refuses
 * (db/locked.ts), for every module that uses it.
 *
 * @module
 */
import { writeProbeKey } from "./keys.ts";
import { oneLine, retryingLocked } from "./locked.ts";

/** Thrown when the database named by `KV_PATH` cannot be opened or written. */
export class KvOpenError extends Error {
  override name = "KvOpenError";
  constructor(
    path: string | undefined,
    reason: string,
    options?: ErrorOptions,
  ) {
    const where = path === undefined ? "the platform's KV" : `"${path}"`;
    // One line: the reason may come from SQLite or the OS with a newline.
    super(
      `Cannot open KV_PATH ${where}: ${oneLine(reason)}`,
      options,
    );
  }
}

/** Whether `path` names a database file on this machine's disk. */
export function isLocalFile(path: string | undefined): path is string {
  return path !== undefined && path !== ":memory:" &&
    !/^https?:\/\//.test(path);
}

/**
 * The folder holding the database file `path` (`"."` for a bare name).
 *
 * @example
 * ```ts
 * folderOf("./data/kv.sqlite"); // "./data"
 * ```
 */
export function folderOf(path: string): string {
  const slash = path.lastIndexOf("/");
  return slash > 0 ? path.slice(0, slash) : slash === 0 ? "/" : ".";
}

/** Options of {@linkcode openKv}. */
export interface OpenKvOptions {
  /**
   * Write (and delete) a probe key once opened, so that a database file
   * that opens but cannot be written is found at once. SQLite opens a file
   * on a read-only disk whose `-wal` and `-shm` files exist (left by a
   * process that was killed) and fails only at the first commit. Only for
   * a file on this machine's disk. @default {false}
   */
  probeWrite?: boolean;
}

/**
 * Opens the database at `path`. Throws {@linkcode KvOpenError} when it
 * cannot, or, with `probeWrite`, when it cannot be written.
 *
 * @example
 * ```ts
 * const kv = await openKv("./data/kv.sqlite", { probeWrite: true });
 * ```
 */
export async function openKv(
  path: string | undefined,
  options: OpenKvOptions = {},
): Promise<Deno.Kv> {
  let kv: Deno.Kv;
  try {
    if (isLocalFile(path)) {
      await Deno.mkdir(folderOf(path), { recursive: true });
    }
    kv = retryingLocked(await Deno.openKv(path));
  } catch (error) {
    throw new KvOpenError(path, reasonOf(error), { cause: error });
  }
  if (options.probeWrite && isLocalFile(path)) {
    try {
      await kv.set(writeProbeKey(), new Uint8Array([1]));
      await kv.delete(writeProbeKey());
    } catch (error) {
      kv.close();
      throw new KvOpenError(path, `cannot write to it: ${reasonOf(error)}`, {
        cause: error,
      });
    }
  }
  return kv;
}

function reasonOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

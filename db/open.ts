/**
 * Opening the KV database named by `KV_PATH`: a file (its folder is created),
 * `:memory:`, a KV Connect URL, or — `undefined` — the platform's own KV.
 * Whatever stops it from opening (a directory where the file should be, a
 * read-only file or file system, a full disk) becomes one
 * {@linkcode KvOpenError} whose message names `KV_PATH`, so that the server
 * and the commands can stop with one line instead of a stack trace.
 *
 * @module
 */

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
      `Cannot open KV_PATH ${where}: ${reason.replace(/\s*\n\s*/g, " ")}`,
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

/**
 * Opens the database at `path`. Throws {@linkcode KvOpenError} when it
 * cannot.
 *
 * @example
 * ```ts
 * const kv = await openKv("./data/kv.sqlite");
 * ```
 */
export async function openKv(path: string | undefined): Promise<Deno.Kv> {
  try {
    if (isLocalFile(path)) {
      await Deno.mkdir(folderOf(path), { recursive: true });
    }
    return await Deno.openKv(path);
  } catch (error) {
    throw new KvOpenError(
      path,
      error instanceof Error ? error.message : String(error),
      { cause: error },
    );
  }
}

/**
 * Reads that stay exact while the merger moves entries: a listing of a
 * project's summaries is done again when a merge of the project committed
 * while it ran, and a scan when a chunk it read moved
 * (docs/storage.md#reads-stay-exact-while-chunks-move). A read that is
 * still not exact after {@linkcode MAX_READ_ATTEMPTS} attempts throws
 * {@linkcode InexactReadError} instead of answering what it saw.
 *
 * @module
 */
import { logMergesKey } from "../keys.ts";

/** Attempts of a read at most while merges keep moving what it read. */
export const MAX_READ_ATTEMPTS = 5;

/** A read that merges kept moving entries under on every attempt. */
export class InexactReadError extends Error {
  override name = "InexactReadError";
  constructor() {
    super(
      `Cannot read the stored entries exactly: merges moved them during each of ${MAX_READ_ATTEMPTS} attempts; try again`,
    );
  }
}

/**
 * Runs `read` until no merge of the project committed while it ran
 * (at most {@linkcode MAX_READ_ATTEMPTS} times, then throws
 * {@linkcode InexactReadError}).
 *
 * @example
 * ```ts
 * const summaries = await consistent(kv, projectId, () => listAll());
 * ```
 */
export async function consistent<T>(
  kv: Deno.Kv,
  projectId: string,
  read: () => Promise<T>,
): Promise<T> {
  const key = logMergesKey(projectId);
  for (let attempt = 1; attempt <= MAX_READ_ATTEMPTS; attempt++) {
    const before = await kv.get(key);
    const result = await read();
    const after = await kv.get(key);
    if (after.versionstamp === before.versionstamp) return result;
  }
  throw new InexactReadError();
}

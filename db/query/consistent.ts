/**
 * Listings that stay exact while the merger moves entries: a listing of a
 * project's summaries is done again when a merge of the project committed
 * while it ran (docs/storage.md#reads-stay-exact-while-chunks-move).
 *
 * @module
 */
import { logCompactionKey } from "../keys.ts";

/** Listings done again at most when merges keep moving entries. */
const MAX_ATTEMPTS = 5;

/**
 * Runs `read` until no merge of the project committed while it ran
 * (at most {@linkcode MAX_ATTEMPTS} times).
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
  const key = logCompactionKey(projectId);
  for (let attempt = 1;; attempt++) {
    const before = await kv.get(key);
    const result = await read();
    const after = await kv.get(key);
    if (after.versionstamp === before.versionstamp || attempt >= MAX_ATTEMPTS) {
      return result;
    }
  }
}

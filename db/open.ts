/**
 * Opening the KV database named by `KV_PATH`: a file (its folder is created),
 * `:memory:`, a KV Connect URL, or — `undefined` — the platform's own KV.
 *
 * @module
 */

/**
 * Opens the database at `path`.
 *
 * @example
 * ```ts
 * const kv = await openKv("./data/kv.sqlite");
 * ```
 */
export async function openKv(path: string | undefined): Promise<Deno.Kv> {
  if (path !== undefined && path !== ":memory:" && !/^https?:\/\//.test(path)) {
    const slash = path.lastIndexOf("/");
    if (slash > 0) await Deno.mkdir(path.slice(0, slash), { recursive: true });
  }
  return await Deno.openKv(path);
}

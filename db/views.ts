/**
 * Saved views of a project's explorer: a name for a query and time range,
 * stored as the explorer's own query string (dashboard/explorer_state.ts
 * writes and reads it), so a saved view opens exactly as it was saved.
 * At most {@linkcode MAX_VIEWS} per project, names of 1 to 100 characters.
 *
 * @module
 */
import { createId } from "../domain/ids.ts";
import { savedViewKey } from "./keys.ts";
import { decodeJson, encodeJson, keepWithin, listJson } from "./kv.ts";
import { commitUnderProject } from "./projects.ts";
import { findRecord, InvalidValueError } from "./validation.ts";

/** Saved views one project holds at most. */
export const MAX_VIEWS = 50;
/** Longest name of a view, in characters. */
export const MAX_VIEW_NAME = 100;
/**
 * Most characters of a view's query once decoded (its names and values):
 * the explorer's query alone takes 2,000.
 */
export const MAX_VIEW_QUERY = 3000;
/**
 * Most characters of a view's query string as stored, percent-encoded: a
 * UTF-16 unit encodes to at most 9 (`%E6%97%A5`), so a query within
 * {@linkcode MAX_VIEW_QUERY} fits, and a view stays under 30 KB.
 */
const MAX_VIEW_QUERY_ENCODED = 9 * MAX_VIEW_QUERY;

/** Characters of a query string's names and values, decoded. */
function decodedLength(query: string): number {
  let chars = 0;
  for (const [name, value] of new URLSearchParams(query)) {
    chars += name.length + value.length;
  }
  return chars;
}

/** One saved view. */
export interface SavedView {
  /** Time-sortable id (domain/ids.ts). */
  id: string;
  name: string;
  /** The explorer's query string, `?q=…&range=1h`, or `""` for the default view. */
  query: string;
  /** Unix ms. */
  createdAt: number;
}

/**
 * A project's saved views, oldest first.
 *
 * @example
 * ```ts
 * for (const view of await listViews(kv, projectId)) console.log(view.name);
 * ```
 */
export async function listViews(
  kv: Deno.Kv,
  projectId: string,
): Promise<SavedView[]> {
  return await listJson<SavedView>(kv, savedViewKey(projectId));
}

/** Options of {@linkcode saveView}. */
export interface SaveViewOptions {
  name: string;
  /** The explorer's query string (`?…` or `""`). */
  query: string;
  /** Clock. @default {Date.now} */
  now?: () => number;
}

/**
 * Saves a view; throws {@linkcode InvalidValueError} for an empty or long
 * name, a query string that is not one, or a project that holds
 * {@linkcode MAX_VIEWS} already.
 *
 * @example
 * ```ts
 * await saveView(kv, projectId, { name: "Checkout errors", query: "?q=checkout&level=error" });
 * ```
 */
export async function saveView(
  kv: Deno.Kv,
  projectId: string,
  options: SaveViewOptions,
): Promise<SavedView> {
  const name = options.name.trim();
  if (name === "" || name.length > MAX_VIEW_NAME) {
    throw new InvalidValueError(
      `Cannot save a view named "${
        name.slice(0, 40)
      }": expected 1 to ${MAX_VIEW_NAME} characters`,
    );
  }
  const { query } = options;
  if (query !== "" && !query.startsWith("?")) {
    throw new InvalidValueError(
      `Cannot save view "${name}": its query string is not one`,
    );
  }
  if (
    query.length > MAX_VIEW_QUERY_ENCODED ||
    decodedLength(query) > MAX_VIEW_QUERY
  ) {
    throw new InvalidValueError(
      `Cannot save view "${name}": its query is over ${MAX_VIEW_QUERY} characters`,
    );
  }
  const full = () =>
    new InvalidValueError(
      `Cannot save view "${name}": a project keeps at most ${MAX_VIEWS} views, remove one first`,
    );
  if ((await listViews(kv, projectId)).length >= MAX_VIEWS) throw full();
  const createdAt = (options.now ?? Date.now)();
  const view: SavedView = { id: createId(createdAt), name, query, createdAt };
  const key = savedViewKey(projectId, view.id);
  await commitUnderProject(
    kv,
    projectId,
    (op) => op.set(key, encodeJson(view)),
  );
  await keepWithin(kv, savedViewKey(projectId), MAX_VIEWS, [key], full);
  return view;
}

/**
 * Removes a saved view: the view removed, `null` when there was none of that
 * id (or another request removed it first).
 *
 * @example
 * ```ts
 * await deleteView(kv, projectId, view.id);
 * ```
 */
export async function deleteView(
  kv: Deno.Kv,
  projectId: string,
  viewId: string,
): Promise<SavedView | null> {
  const found = await findRecord(kv, viewId, savedViewKey(projectId, viewId));
  if (found === null) return null;
  const removed = await kv.atomic().check(found).delete(found.key).commit();
  return removed.ok ? decodeJson<SavedView>(found.value) : null;
}

/**
 * The two bounds of error groups (db/error_groups.ts): the project's key that
 * names them, so a sender cannot aim at one, and the number a project keeps,
 * the least recently seen going first (docs/explorer.md#error-groups).
 *
 * @module
 */
import { GROUP_KEY_BYTES } from "../domain/fingerprint.ts";
import {
  decodeErrorGroupSeenKey,
  errorGroupCountKey,
  errorGroupIdKey,
  errorGroupKey,
  errorGroupReleaseKey,
  errorGroupSeenKey,
  errorGroupTriageKey,
  fingerprintKeyKey,
} from "./keys.ts";
import { decodeJson, getManyChunked } from "./kv.ts";

/** Groups a project keeps at most; the least recently seen go first. */
export const MAX_GROUPS = 10_000;
/**
 * How long a process trusts its count of a project's groups before it
 * counts them again (one read of the index); meanwhile it adds the groups
 * it makes itself, so other instances can pass the bound by what they made
 * in that time, until the next count.
 */
export const RECOUNT_MS = 60_000;

/** Keys deleted per commit by an eviction. */
const DELETE_BATCH = 500;

const groupKeys = new WeakMap<Deno.Kv, Map<string, Uint8Array>>();

/**
 * The project's key of group ids: read once per process, made on first use
 * with a check that no other process made it first (so every instance
 * sharing the database names groups alike, across restarts).
 *
 * @example
 * ```ts
 * const key = await groupKeyOf(kv, projectId); // 16 bytes
 * ```
 */
export async function groupKeyOf(
  kv: Deno.Kv,
  projectId: string,
): Promise<Uint8Array> {
  let cache = groupKeys.get(kv);
  if (cache === undefined) groupKeys.set(kv, cache = new Map());
  const known = cache.get(projectId);
  if (known !== undefined) return known;
  const keyKey = fingerprintKeyKey(projectId);
  for (let attempt = 0; attempt < 5; attempt++) {
    const found = await kv.get<Uint8Array>(keyKey);
    let key = found.value;
    if (!(key instanceof Uint8Array) || key.length !== GROUP_KEY_BYTES) {
      key = crypto.getRandomValues(new Uint8Array(GROUP_KEY_BYTES));
      const made = await kv.atomic().check(found).set(keyKey, key).commit();
      if (!made.ok) continue;
    }
    // The cache holds one key a project; projects are bounded.
    cache.set(projectId, key);
    return key;
  }
  throw new Error(`Cannot make the group key of project "${projectId}"`);
}

/** The rows of a group beside its index row: the group, its count, its triage. */
function rowsOfGroup(projectId: string, groupId: string): Deno.KvKey[] {
  return [
    errorGroupKey(projectId, groupId),
    errorGroupCountKey(projectId, groupId),
    errorGroupTriageKey(projectId, groupId),
  ];
}

/**
 * The rows named from inside doomed groups: the id kept by fingerprint and
 * the counts per release. One read of the groups (only doomed ones).
 */
async function rowsInsideGroups(
  kv: Deno.Kv,
  projectId: string,
  doomed: Deno.KvKey[],
): Promise<Deno.KvKey[]> {
  const groupKeys = doomed.filter((k) => k[0] === errorGroupKey(projectId)[0]);
  const rows = await getManyChunked<Uint8Array>(kv, groupKeys);
  const keys: Deno.KvKey[] = [];
  rows.forEach((row, i) => {
    const group = decodeJson<{ fingerprint?: string; releases?: string[] }>(
      row.value,
    );
    const groupId = String(groupKeys[i]![2]);
    if (typeof group?.fingerprint === "string") {
      keys.push(errorGroupIdKey(projectId, group.fingerprint));
    }
    for (const release of group?.releases ?? []) {
      keys.push(errorGroupReleaseKey(projectId, groupId, release));
    }
  });
  return keys;
}

const groupCounts = new WeakMap<
  Deno.Kv,
  Map<string, { count: number; at: number }>
>();

/**
 * Deletes the least recently seen groups so that `made` new ones fit under
 * {@linkcode MAX_GROUPS}, and (when it counts, once every
 * {@linkcode RECOUNT_MS}) the groups and stale index rows past the
 * retention; never a group of `keep`. A group's rows (the group, its count,
 * its index row) have no KV expiry: a count added to with `sum` cannot
 * have one, so these deletions are what bounds them.
 */
export async function makeRoom(
  kv: Deno.Kv,
  projectId: string,
  made: number,
  options: { now: number; retentionMs: number; keep: Set<string> },
): Promise<void> {
  let counts = groupCounts.get(kv);
  if (counts === undefined) groupCounts.set(kv, counts = new Map());
  const known = counts.get(projectId);
  const prefix = errorGroupSeenKey(projectId);
  const doomed: Deno.KvKey[] = [];
  let count: number;
  if (known !== undefined && options.now - known.at < RECOUNT_MS) {
    count = known.count;
    const excess = count + made - MAX_GROUPS;
    if (excess > 0) {
      const ids = new Set<string>();
      for await (
        const row of kv.list({ prefix }, { limit: excess + options.keep.size })
      ) {
        const { groupId } = decodeErrorGroupSeenKey(row.key);
        if (options.keep.has(groupId) || ids.size >= excess) continue;
        ids.add(groupId);
        doomed.push(row.key, ...rowsOfGroup(projectId, groupId));
      }
      count -= ids.size;
    }
  } else {
    // Count: one read of the index, oldest first. A group has one row;
    // a commit that lost a race may have left a second, older one.
    const rows: { key: Deno.KvKey; groupId: string; lastSeen: number }[] = [];
    const newest = new Map<string, number>();
    const list = kv.list({ prefix }, { limit: 2 * MAX_GROUPS });
    for await (const row of list) {
      const at = decodeErrorGroupSeenKey(row.key);
      rows.push({ key: row.key, ...at });
      newest.set(at.groupId, at.lastSeen);
    }
    const expired = options.now - options.retentionMs;
    let live = newest.size;
    for (const row of rows) {
      const latest = newest.get(row.groupId)!;
      if (row.lastSeen !== latest) {
        doomed.push(row.key); // a stale second row
      } else if (
        !options.keep.has(row.groupId) &&
        (latest < expired || live + made > MAX_GROUPS)
      ) {
        doomed.push(row.key, ...rowsOfGroup(projectId, row.groupId));
        live--;
      }
    }
    count = live;
  }
  if (doomed.length > 0) {
    doomed.push(...await rowsInsideGroups(kv, projectId, doomed));
  }
  for (let i = 0; i < doomed.length; i += DELETE_BATCH) {
    const op = kv.atomic();
    for (const key of doomed.slice(i, i + DELETE_BATCH)) op.delete(key);
    await op.commit();
  }
  counts.set(projectId, {
    count: count + made,
    at: known !== undefined && options.now - known.at < RECOUNT_MS
      ? known.at
      : options.now,
  });
}

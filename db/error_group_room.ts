/**
 * The bound on a project's error groups (docs/explorer.md#error-groups): the
 * least recently seen go first, with every row named by them, when a batch
 * would pass {@linkcode MAX_GROUPS} or their last entry is past the
 * retention; and the project's key that names groups. Split from
 * db/error_groups.ts, which writes the groups a batch makes.
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
  projectKey,
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
      const made = crypto.getRandomValues(new Uint8Array(GROUP_KEY_BYTES));
      const project = await kv.get(projectKey(projectId));
      // A project deleted meanwhile: nothing of the batch is stored under
      // it (the result commit checks it), so its key is not kept either.
      if (project.versionstamp === null) return made;
      const result = await kv.atomic().check(found, project)
        .set(keyKey, made).commit();
      if (!result.ok) continue;
      key = made;
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

/** The rows of the groups to delete, by group id. */
type Doomed = Map<string, Deno.KvKey[]>;

/** Adds a group's index row, and its rows beside it, to `doomed`. */
function doom(
  doomed: Doomed,
  projectId: string,
  groupId: string,
  indexRow: Deno.KvKey,
): void {
  let keys = doomed.get(groupId);
  if (keys === undefined) {
    doomed.set(groupId, keys = rowsOfGroup(projectId, groupId));
  }
  keys.push(indexRow);
}

/**
 * Adds to each doomed group the rows named from inside it, and its counts
 * per release: the id kept by fingerprint (one read of the doomed groups)
 * and every row under each group's release prefix (one listing a group).
 * Listed, not taken from the group's own list of releases: two batches that
 * wrote one group at once each keep only their own list, and the rows of
 * the other's new releases would be left behind.
 */
async function rowsInsideGroups(
  kv: Deno.Kv,
  projectId: string,
  doomed: Doomed,
): Promise<void> {
  const ids = [...doomed.keys()];
  const rows = await getManyChunked<Uint8Array>(
    kv,
    ids.map((id) => errorGroupKey(projectId, id)),
  );
  for (const [i, id] of ids.entries()) {
    const keys = doomed.get(id)!;
    const group = decodeJson<{ fingerprint?: string }>(rows[i]!.value);
    if (typeof group?.fingerprint === "string") {
      keys.push(errorGroupIdKey(projectId, group.fingerprint));
    }
    const prefix = errorGroupReleaseKey(projectId, id);
    for await (const row of kv.list({ prefix })) keys.push(row.key);
  }
}

/**
 * Deletes `lists` of keys, {@linkcode DELETE_BATCH} a commit, each list in
 * one commit when it fits: a group goes whole, so a result commit that
 * writes it back between two commits cannot lose its id row to the next,
 * nor leave one that counts a group gone in its release's new groups.
 */
async function deleteAll(kv: Deno.Kv, lists: Deno.KvKey[][]): Promise<void> {
  let op = kv.atomic();
  let n = 0;
  for (const keys of lists) {
    for (const [i, key] of keys.entries()) {
      const full = n >= DELETE_BATCH ||
        (i === 0 && n + keys.length > DELETE_BATCH && n > 0);
      if (full) {
        await op.commit();
        op = kv.atomic();
        n = 0;
      }
      op.delete(key);
      n++;
    }
  }
  if (n > 0) await op.commit();
}

const groupCounts = new WeakMap<
  Deno.Kv,
  Map<string, { count: number; at: number }>
>();

/**
 * Deletes a project's groups last seen past the retention (once every
 * {@linkcode RECOUNT_MS} per process): for the merge rounds, so that a
 * project that no longer sends errors keeps none past its retention.
 */
export async function sweepErrorGroups(
  kv: Deno.Kv,
  projectId: string,
  options: { now: number; retentionMs: number },
): Promise<void> {
  await makeRoom(kv, projectId, 0, { ...options, keep: new Set() });
}

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
  const trusted = known !== undefined && options.now - known.at < RECOUNT_MS;
  const prefix = errorGroupSeenKey(projectId);
  const doomed: Doomed = new Map();
  const stale: Deno.KvKey[] = [];
  let count: number;
  if (trusted) {
    count = known!.count;
    const excess = count + made - MAX_GROUPS;
    if (excess > 0) {
      const ids = new Set<string>();
      for await (
        const row of kv.list({ prefix }, { limit: excess + options.keep.size })
      ) {
        const { groupId } = decodeErrorGroupSeenKey(row.key);
        if (options.keep.has(groupId) || ids.size >= excess) continue;
        ids.add(groupId);
        doom(doomed, projectId, groupId, row.key);
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
        stale.push(row.key); // a stale second row
      } else if (
        !options.keep.has(row.groupId) &&
        (latest < expired || live + made > MAX_GROUPS)
      ) {
        doom(doomed, projectId, row.groupId, row.key);
        live--;
      }
    }
    count = live;
  }
  await rowsInsideGroups(kv, projectId, doomed);
  await deleteAll(kv, [...doomed.values(), stale]);
  counts.set(projectId, {
    count: count + made,
    at: trusted ? known!.at : options.now,
  });
}

/**
 * Reading error groups (db/error_groups.ts writes them): a project's groups
 * newest first, page by page, and one group by an entry's fingerprint or by
 * its public one, each as the pages and the CLI show it
 * (docs/explorer.md#error-groups).
 *
 * @module
 */
import { type Fingerprint, groupIdOf } from "../domain/fingerprint.ts";
import {
  type GroupFields,
  groupKeyOf,
  NEW_GROUP_MS,
  seriesAt,
  type StoredGroup,
} from "./error_groups.ts";
import {
  decodeErrorGroupSeenKey,
  errorGroupCountKey,
  errorGroupIdKey,
  errorGroupKey,
  errorGroupSeenKey,
} from "./keys.ts";
import { decodeJson, getManyChunked } from "./kv.ts";
import { decodeGroupIdRow } from "./error_group_ids.ts";

/** Groups one listing returns at most. */
export const MAX_LIST_GROUPS = 1_000;

/** A group as the pages and the CLI show it. */
export interface ErrorGroup extends GroupFields {
  /** The group's id in its project (a keyed hash, not the fingerprint). */
  id: string;
  /** Entries grouped: exact (added to atomically by each commit). */
  count: number;
  /** Entries per hour over the last `SPARK_HOURS` hours, oldest first. */
  hourly: number[];
  /** First seen in the last {@linkcode NEW_GROUP_MS}. */
  isNew: boolean;
  /** Id of its first entry; `null` for a group made before it was kept. */
  firstId: string | null;
  /** Release of its first entry. */
  firstRelease: string | null;
  /** Release of its latest entry that had one. */
  lastRelease: string | null;
  /** Entries per UTC day over the last `GROUP_DAYS` days, oldest first. */
  daily: number[];
}

/** Options of {@linkcode listGroups}. */
export interface ListGroupsOptions {
  /** Groups returned at most. @default 50, at most {@linkcode MAX_LIST_GROUPS} */
  limit?: number;
  /**
   * Only groups seen before this one (a {@linkcode groupCursor}): the next
   * page. @default none
   */
  after?: string;
  /**
   * The project's retention: groups last seen before it are skipped (the
   * recount deletes them). @default none (every group)
   */
  retentionMs?: number;
}

/** Thrown for a page cursor that no listing of groups made. */
export class GroupCursorError extends Error {
  override name = "GroupCursorError";
}

/**
 * The cursor of the page after `group`: its last seen time and id.
 *
 * @example
 * ```ts
 * listGroups(kv, projectId, now, { after: groupCursor(page.at(-1)!) });
 * ```
 */
export function groupCursor(group: ErrorGroup): string {
  return `${group.lastSeen}.${group.id}`;
}

function cursorKey(projectId: string, cursor: string): Deno.KvKey {
  const match = /^(\d{1,15})\.([0-9a-f]{16})$/.exec(cursor);
  if (match === null) {
    throw new GroupCursorError(
      `Cannot read cursor "${
        cursor.slice(0, 40)
      }": expected LASTSEEN.ID from a page of error groups`,
    );
  }
  return errorGroupSeenKey(projectId, {
    lastSeen: Number(match[1]),
    groupId: match[2]!,
  });
}

/**
 * A project's error groups, the most recently seen first, read from the
 * index by last seen (so however many groups there are, the newest come
 * first), with their hourly counts over the last `SPARK_HOURS`
 * hours up to `now`.
 *
 * @example
 * ```ts
 * for (const group of await listGroups(kv, projectId, Date.now(), { limit: 50 })) {
 *   console.log(group.count, group.title);
 * }
 * ```
 */
export async function listGroups(
  kv: Deno.Kv,
  projectId: string,
  now: number,
  options: ListGroupsOptions = {},
): Promise<ErrorGroup[]> {
  const limit = Math.max(0, Math.min(options.limit ?? 50, MAX_LIST_GROUPS));
  if (limit === 0) return [];
  const prefix = errorGroupSeenKey(projectId);
  const selector: Deno.KvListSelector = options.after === undefined
    ? { prefix }
    : { prefix, end: cursorKey(projectId, options.after) };
  const ids: string[] = [];
  const seen = new Set<string>();
  // Stale second rows are rare: twice the page bounds the read.
  for await (
    const row of kv.list(selector, { reverse: true, limit: 2 * limit + 10 })
  ) {
    const { groupId } = decodeErrorGroupSeenKey(row.key);
    if (seen.has(groupId)) continue;
    seen.add(groupId);
    ids.push(groupId);
    if (ids.length >= limit) break;
  }
  const groups = await readGroupsById(kv, projectId, ids, now);
  const expired = options.retentionMs === undefined
    ? -Infinity
    : now - options.retentionMs;
  return groups.filter((g) => g.lastSeen >= expired)
    .sort((a, b) => b.lastSeen - a.lastSeen);
}

/** The groups of `ids` that exist, as shown at `now`, in the order of `ids`. */
export async function readGroupsById(
  kv: Deno.Kv,
  projectId: string,
  ids: string[],
  now: number,
): Promise<ErrorGroup[]> {
  const stored = await getManyChunked<unknown>(kv, [
    ...ids.map((id) => errorGroupKey(projectId, id)),
    ...ids.map((id) => errorGroupCountKey(projectId, id)),
  ]);
  const groups: ErrorGroup[] = [];
  ids.forEach((id, i) => {
    const group = decodeJson<StoredGroup>(stored[i]!.value);
    if (group === null) return;
    const counted = stored[ids.length + i]!.value;
    const {
      hour: _hour,
      hours: _hours,
      day: _day,
      days: _days,
      releases: _releases,
      firstId,
      firstRelease,
      lastRelease,
      ...shown
    } = group;
    const { hourly, daily } = seriesAt(group, now);
    groups.push({
      ...shown,
      id,
      firstId: firstId ?? null,
      firstRelease: firstRelease ?? null,
      lastRelease: lastRelease ?? null,
      daily,
      count: counted instanceof Deno.KvU64
        ? Number(counted.value)
        : group.count,
      hourly,
      isNew: now - group.firstSeen < NEW_GROUP_MS,
    });
  });
  return groups;
}

/**
 * The group of an entry's fingerprint (its title and top frame, from
 * `fingerprintOf`), `null` when the project has none: one read, since the
 * group's id is the project's keyed hash of them.
 *
 * @example
 * ```ts
 * const group = await readGroup(kv, projectId, fingerprintOf(latest), Date.now());
 * ```
 */
export async function readGroup(
  kv: Deno.Kv,
  projectId: string,
  fingerprint: Pick<Fingerprint, "title" | "topFrame">,
  now: number,
): Promise<ErrorGroup | null> {
  const id = groupIdOf(await groupKeyOf(kv, projectId), fingerprint);
  const [group] = await readGroupsById(kv, projectId, [id], now);
  return group ?? null;
}

/**
 * The group of a public fingerprint, `null` when the project has none: by
 * the id the consumer keeps for each new group.
 *
 * @example
 * ```ts
 * const group = await findGroup(kv, projectId, "e5eb45f4ee70b0c0", Date.now());
 * ```
 */
export async function findGroup(
  kv: Deno.Kv,
  projectId: string,
  fingerprint: string,
  now: number,
): Promise<ErrorGroup | null> {
  const row = await kv.get(errorGroupIdKey(projectId, fingerprint));
  const id = decodeGroupIdRow(row.value)?.id;
  if (id !== undefined) {
    const [group] = await readGroupsById(kv, projectId, [id], now);
    if (group?.fingerprint === fingerprint) return group;
  }
  return null;
}

/**
 * Error groups (docs/explorer.md#error-groups): a project's `error` and
 * `critical` entries grouped by their fingerprint (domain/fingerprint.ts),
 * each with its count, first and last receipt time, hourly counts for a
 * sparkline, and a sample (title, top frame, entry id).
 *
 * Written at write time: {@linkcode prepareErrorGroups} reads the batch's
 * groups, then {@linkcode addErrorGroups} adds their new values to the result
 * commit that stores the entries, so a group counts each entry once, as the
 * entries are stored once. Three rows a group: the group, its count (a
 * `KvU64`), and its row in an index by last seen, which listings read newest
 * first. None expires by itself (a count added to with `sum` cannot): a
 * group's rows are deleted together when it is evicted, or past the
 * retention by the recount (db/error_group_bounds.ts), and listings skip
 * groups last seen before the retention meanwhile.
 *
 * Bounded: a group is named by a keyed hash under the project's own random
 * key (`groupIdOf`), so a sender cannot aim titles at chosen groups; and a
 * project keeps at most {@linkcode MAX_GROUPS} groups, the least recently
 * seen going first when a new one would pass the bound.
 *
 * The consumer's result commit holds no check to spare, so a group is
 * updated without one. Its count stays exact all the same: each commit adds
 * its entries with `sum`, which KV applies atomically whatever else commits.
 * The rest of the group is written last-writer-wins from what the commit
 * read: when two commits update one group at the same moment, its hourly
 * counts may miss the other's entries, its first seen may be the later of
 * the two batches' (a new group only), and its last seen and sample may be
 * the older commit's until the next entry; the index may keep a second,
 * older row, which listings skip and the recount deletes.
 *
 * @module
 */
import type { LogRecord } from "../domain/entry.ts";
import {
  type Fingerprint,
  fingerprintOf,
  groupIdOf,
} from "../domain/fingerprint.ts";
import type { AtomicWriter } from "./atomic.ts";
import { groupKeyOf, makeRoom } from "./error_group_bounds.ts";
import {
  decodeErrorGroupSeenKey,
  errorGroupCountKey,
  errorGroupIdKey,
  errorGroupKey,
  errorGroupReleaseKey,
  errorGroupSeenKey,
} from "./keys.ts";
import { decodeJson, encodeJson, getManyChunked } from "./kv.ts";
import {
  addReleases,
  planReleases,
  releaseOf,
  type ReleasePlan,
} from "./releases.ts";
import {
  countReleases,
  MAX_RELEASE_PAIRS_PER_BATCH,
  trackReleases,
} from "./error_group_releases.ts";

export {
  MAX_GROUP_RELEASES,
  MAX_RELEASE_PAIRS_PER_BATCH,
} from "./error_group_releases.ts";

export { groupKeyOf, MAX_GROUPS, RECOUNT_MS } from "./error_group_bounds.ts";

/** Levels whose entries are grouped. */
export const GROUPED_LEVELS: readonly string[] = ["error", "critical"];
/**
 * Groups one batch adds to at most: 4 mutations a group. Entries of further
 * groups in the same batch (a storm of distinct errors) are stored but not
 * grouped; the largest groups of the batch are the ones kept.
 */
export const MAX_GROUPS_PER_BATCH = 20;
/** Days of daily counts a group keeps, today included: the escalation's week. */
export const GROUP_DAYS = 8;
const DAY_MS = 24 * 3_600_000;
/** Groups one listing returns at most. */
export const MAX_LIST_GROUPS = 1_000;
/** Hours of the sparkline, the newest one included. */
export const SPARK_HOURS = 24;
/** A group first seen this recently is new. */
export const NEW_GROUP_MS = 24 * 3_600_000;
const HOUR_MS = 3_600_000;
/** Longest sample title stored, in characters. */
const MAX_SAMPLE_TITLE = 300;

/** What a group is, stored or shown. */
interface GroupFields {
  /** The public fingerprint of its entries: `fingerprint:<hash>` lists them. */
  fingerprint: string;
  /** The normalised title the fingerprint covers. */
  title: string;
  /** `file:function` of the top stack frame, `null` without a stack. */
  topFrame: string | null;
  /** The newest entry grouped so far. */
  sampleId: string;
  /** Its level. */
  level: string;
  /** Its title before normalisation, cut to 300 characters. */
  sampleTitle: string;
  /** Entries grouped. */
  count: number;
  /** Receipt time of its first entry, Unix ms. */
  firstSeen: number;
  /** Receipt time of its last entry, Unix ms. */
  lastSeen: number;
}

/** A group as stored. */
interface StoredGroup extends GroupFields {
  /** Entries counted from what the commit read; the exact count is its own row. */
  count: number;
  /** Start of the newest hour of `hours`, Unix ms. */
  hour: number;
  /** Entries per hour, oldest first, ending with `hour`. */
  hours: number[];
  /** Id of the group's first entry. @default absent: made before it was kept */
  firstId?: string;
  /** Release of the first entry, `null` without one. */
  firstRelease?: string | null;
  /** Release of the latest entry that had one. */
  lastRelease?: string | null;
  /** Releases whose entries the group counts, the first counted first. */
  releases?: string[];
  /** Start of the newest day of `days`, Unix ms. */
  day?: number;
  /** Entries per UTC day, oldest first, ending with `day`. */
  days?: number[];
}

/** A group as the pages and the CLI show it. */
export interface ErrorGroup extends GroupFields {
  /** The group's id in its project (a keyed hash, not the fingerprint). */
  id: string;
  /** Entries grouped: exact (added to atomically by each commit). */
  count: number;
  /** Entries per hour over the last {@linkcode SPARK_HOURS} hours, oldest first. */
  hourly: number[];
  /** First seen in the last {@linkcode NEW_GROUP_MS}. */
  isNew: boolean;
  /** Id of its first entry; `null` for a group made before it was kept. */
  firstId: string | null;
  /** Release of its first entry. */
  firstRelease: string | null;
  /** Release of its latest entry that had one. */
  lastRelease: string | null;
  /** Entries per UTC day over the last {@linkcode GROUP_DAYS} days, oldest first. */
  daily: number[];
}

function hourOf(ms: number): number {
  return Math.floor(ms / HOUR_MS) * HOUR_MS;
}

function dayOf(ms: number): number {
  return Math.floor(ms / DAY_MS) * DAY_MS;
}

/** `hours` ending at `from`, moved to end at `to` (≥ `from`). */
function shiftHours(
  hours: number[],
  from: number,
  to: number,
  size = HOUR_MS,
  length = SPARK_HOURS,
): number[] {
  const by = Math.max(0, Math.round((to - from) / size));
  const out = new Array<number>(length).fill(0);
  for (let i = by; i < length; i++) out[i - by] = hours[i] ?? 0;
  return out;
}

/** A group of the batch, before and after. */
interface PlannedGroup {
  id: string;
  /** Last seen of the stored group, when there is one. */
  before: number | null;
  after: StoredGroup;
  /** Entries of the batch it counts. */
  added: number;
  /** Its entries of the batch per release. */
  byRelease: Map<string, number>;
  /** Releases whose counts it drops, past {@linkcode MAX_GROUP_RELEASES}. */
  dropped: string[];
}

/** What {@linkcode addErrorGroups} writes: from {@linkcode prepareErrorGroups}. */
export interface GroupPlan {
  projectId: string;
  retentionMs: number;
  groups: PlannedGroup[];
  /** The releases of all the batch's entries. */
  releases: ReleasePlan;
}

/** Options of {@linkcode prepareErrorGroups}. */
export interface PrepareGroupsOptions {
  /** The project's retention: groups expire this long after they are last seen. */
  retentionMs: number;
  /** Unix ms. */
  now: number;
}

/**
 * Reads what grouping `records`' `error` and `critical` entries changes (at
 * most {@linkcode MAX_GROUPS_PER_BATCH} groups), and when new groups would
 * pass {@linkcode MAX_GROUPS}, deletes the least recently seen first (in
 * commits of their own, before the result commit).
 *
 * @example
 * ```ts
 * const plan = await prepareErrorGroups(kv, projectId, records, { retentionMs, now });
 * addErrorGroups(op, plan); // beside the stored entries
 * ```
 */
export async function prepareErrorGroups(
  kv: Deno.Kv,
  projectId: string,
  records: LogRecord[],
  options: PrepareGroupsOptions,
): Promise<GroupPlan> {
  const isError = (r: LogRecord) => GROUPED_LEVELS.includes(r.level);
  const plan: GroupPlan = {
    projectId,
    retentionMs: options.retentionMs,
    groups: [],
    releases: await planReleases(kv, projectId, records, {
      ...options,
      isError,
    }),
  };
  const errors = records.filter(isError);
  if (errors.length === 0) return plan;
  const batch = groupsOf(await groupKeyOf(kv, projectId), errors);
  const kept = [...batch].sort((a, b) =>
    b[1].entries.length - a[1].entries.length
  ).slice(0, MAX_GROUPS_PER_BATCH);
  const stored = await getManyChunked<Uint8Array>(
    kv,
    kept.map(([id]) => errorGroupKey(projectId, id)),
  );
  const pairs = { left: MAX_RELEASE_PAIRS_PER_BATCH };
  kept.forEach(([id, { entries, fp }], i) => {
    const prior = decodeJson<StoredGroup>(stored[i]!.value);
    const { grouped, byRelease } = countReleases(entries, plan.releases, pairs);
    if (grouped.length === 0) return;
    const after = merge(prior, fp, grouped);
    const dropped = trackReleases(after, byRelease);
    if (prior === null && after.firstRelease) {
      const tally = plan.releases.releases.get(after.firstRelease);
      if (tally) tally.groups++;
    }
    plan.groups.push({
      id,
      before: prior?.lastSeen ?? null,
      after,
      added: grouped.length,
      byRelease,
      dropped,
    });
  });
  // Also with no new group: once a minute, it sweeps past the retention.
  const made = plan.groups.filter((g) => g.before === null).length;
  await makeRoom(kv, projectId, made, {
    ...options,
    keep: new Set(plan.groups.map((g) => g.id)),
  });
  return plan;
}

/** The batch's error entries by group id, each with its group's first form. */
function groupsOf(
  key: Uint8Array,
  errors: LogRecord[],
): Map<string, { entries: LogRecord[]; fp: StoredGroup }> {
  const batch = new Map<string, { entries: LogRecord[]; fp: StoredGroup }>();
  for (const record of errors) {
    const fp = fingerprintOf(record);
    const id = groupIdOf(key, fp);
    const found = batch.get(id);
    if (found) {
      found.entries.push(record);
      continue;
    }
    batch.set(id, {
      entries: [record],
      fp: {
        fingerprint: fp.fingerprint,
        title: fp.title,
        topFrame: fp.topFrame,
        sampleId: record.id,
        level: record.level,
        sampleTitle: "",
        count: 0,
        firstSeen: record.receivedAt,
        lastSeen: record.receivedAt,
        hour: hourOf(record.receivedAt),
        hours: new Array(SPARK_HOURS).fill(0),
      },
    });
  }
  return batch;
}

/** `prior` (or the batch's first entry, `fresh`) with `entries` counted in. */
function merge(
  prior: StoredGroup | null,
  fresh: StoredGroup,
  entries: LogRecord[],
): StoredGroup {
  const group: StoredGroup = prior === null
    ? fresh
    : { ...prior, title: fresh.title, topFrame: fresh.topFrame };
  const newest = Math.max(
    group.hour,
    ...entries.map((e) => hourOf(e.receivedAt)),
  );
  group.hours = shiftHours(group.hours, group.hour, newest);
  group.hour = newest;
  const newestDay = Math.max(
    group.day ?? 0,
    ...entries.map((e) => dayOf(e.receivedAt)),
  );
  group.days = shiftHours(
    group.days ?? [],
    group.day ?? newestDay,
    newestDay,
    DAY_MS,
    GROUP_DAYS,
  );
  group.day = newestDay;
  let sample: LogRecord | null = null;
  let first: LogRecord | null = null;
  for (const entry of entries) {
    group.count++;
    group.firstSeen = Math.min(group.firstSeen, entry.receivedAt);
    if (sample === null || entry.receivedAt >= sample.receivedAt) {
      sample = entry;
    }
    if (first === null || entry.id < first.id) first = entry;
    const at = SPARK_HOURS - 1 - (newest - hourOf(entry.receivedAt)) / HOUR_MS;
    if (at >= 0) group.hours[at] = (group.hours[at] ?? 0) + 1;
    const d = GROUP_DAYS - 1 - (newestDay - dayOf(entry.receivedAt)) / DAY_MS;
    if (d >= 0) group.days[d] = (group.days[d] ?? 0) + 1;
  }
  if (prior === null && first !== null) {
    group.firstId = first.id;
    group.firstRelease = releaseOf(first);
  }
  if (sample !== null && releaseOf(sample) !== null) {
    if (sample.receivedAt >= group.lastSeen || !group.lastRelease) {
      group.lastRelease = releaseOf(sample);
    }
  }
  if (sample !== null && sample.receivedAt >= group.lastSeen) {
    group.lastSeen = sample.receivedAt;
    group.sampleId = sample.id;
    group.level = sample.level;
    group.sampleTitle = sampleTitle(sample).slice(0, MAX_SAMPLE_TITLE);
  } else if (prior === null && sample !== null) {
    group.sampleTitle = sampleTitle(sample).slice(0, MAX_SAMPLE_TITLE);
  }
  return group;
}

function sampleTitle(record: LogRecord): string {
  const { title, message } = record.data;
  if (typeof title === "string" && title !== "") return title;
  if (typeof message === "string" && message !== "") return message;
  return "";
}

/** The value of an index row: the key says it all. */
const EMPTY = new Uint8Array();

/**
 * Adds to `op` the writes of a {@linkcode GroupPlan}: each group, its
 * count's `sum`, its counts per release (`sum`, in the same commit, so they
 * always agree with the count), its index row, the deletion of its former
 * index row, the id of a new group by its fingerprint, and the releases'
 * counters. Returns the number of mutations added: 5 a group at most, plus
 * one a release pair (at most {@linkcode MAX_RELEASE_PAIRS_PER_BATCH}) and 5
 * a release (at most 10).
 */
export function addErrorGroups(op: AtomicWriter, plan: GroupPlan): number {
  const { projectId } = plan;
  let mutations = addReleases(op, plan.releases);
  for (const group of plan.groups) {
    const { id, before, after, added } = group;
    op.set(errorGroupKey(projectId, id), encodeJson(after));
    op.sum(errorGroupCountKey(projectId, id), BigInt(added));
    for (const [release, n] of group.byRelease) {
      op.sum(errorGroupReleaseKey(projectId, id, release), BigInt(n));
      mutations++;
    }
    for (const release of group.dropped) {
      op.delete(errorGroupReleaseKey(projectId, id, release));
      mutations++;
    }
    if (before === null) {
      op.set(errorGroupIdKey(projectId, after.fingerprint), id);
      mutations++;
    }
    op.set(
      errorGroupSeenKey(projectId, { lastSeen: after.lastSeen, groupId: id }),
      EMPTY,
    );
    mutations += 3;
    if (before !== null && before !== after.lastSeen) {
      op.delete(
        errorGroupSeenKey(projectId, { lastSeen: before, groupId: id }),
      );
      mutations++;
    }
  }
  return mutations;
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
 * first), with their hourly counts over the last {@linkcode SPARK_HOURS}
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
  const groups = await readGroups(kv, projectId, ids, now);
  const expired = options.retentionMs === undefined
    ? -Infinity
    : now - options.retentionMs;
  return groups.filter((g) => g.lastSeen >= expired)
    .sort((a, b) => b.lastSeen - a.lastSeen);
}

/** The groups of `ids` that exist, as shown at `now`, in the order of `ids`. */
async function readGroups(
  kv: Deno.Kv,
  projectId: string,
  ids: string[],
  now: number,
): Promise<ErrorGroup[]> {
  const stored = await getManyChunked<unknown>(kv, [
    ...ids.map((id) => errorGroupKey(projectId, id)),
    ...ids.map((id) => errorGroupCountKey(projectId, id)),
  ]);
  const newest = hourOf(now);
  const groups: ErrorGroup[] = [];
  ids.forEach((id, i) => {
    const group = decodeJson<StoredGroup>(stored[i]!.value);
    if (group === null) return;
    const counted = stored[ids.length + i]!.value;
    const {
      hour,
      hours,
      day,
      days,
      releases: _,
      firstId,
      firstRelease,
      lastRelease,
      ...shown
    } = group;
    const today = dayOf(now);
    groups.push({
      ...shown,
      id,
      firstId: firstId ?? null,
      firstRelease: firstRelease ?? null,
      lastRelease: lastRelease ?? null,
      daily: day !== undefined && today >= day
        ? shiftHours(days ?? [], day, today, DAY_MS, GROUP_DAYS)
        : new Array(GROUP_DAYS).fill(0),
      count: counted instanceof Deno.KvU64
        ? Number(counted.value)
        : group.count,
      hourly: newest >= hour
        ? shiftHours(hours, hour, newest)
        : new Array(SPARK_HOURS).fill(0),
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
  const [group] = await readGroups(kv, projectId, [id], now);
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
  if (typeof row.value === "string") {
    const [group] = await readGroups(kv, projectId, [row.value], now);
    if (group?.fingerprint === fingerprint) return group;
  }
  return null;
}

/** The groups of `ids` that exist, in the order of `ids`. */
export function readGroupsById(
  kv: Deno.Kv,
  projectId: string,
  ids: string[],
  now: number,
): Promise<ErrorGroup[]> {
  return readGroups(kv, projectId, ids, now);
}

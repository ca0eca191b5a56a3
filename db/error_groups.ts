/**
 * Error groups (docs/explorer.md#error-groups): a project's `error` and
 * `critical` entries grouped by their fingerprint (domain/fingerprint.ts),
 * each with its count, first and last receipt time, hourly counts for a
 * sparkline, and a sample (title, top frame, entry id).
 *
 * Written at write time: {@linkcode prepareErrorGroups} reads the batch's
 * groups, then {@linkcode addErrorGroups} adds their new values to the result
 * commit that stores the entries, so a group counts each entry once, as the
 * entries are stored once. The rows of a group: the group, its count (a
 * `KvU64`), its row in an index by last seen, which listings read newest
 * first, the row of its fingerprint (its id and the release of its first
 * entry, db/error_group_ids.ts), its counts per release and its triage.
 * None expires by itself (a count added to with `sum` cannot): a
 * group's rows are deleted together when it is evicted, or past the
 * retention by the recount ({@linkcode makeRoom}, from the consumer and
 * from the merge rounds' {@linkcode sweepErrorGroups}), and listings
 * (db/error_group_reads.ts) skip groups last seen before the retention
 * meanwhile.
 *
 * Bounded: a group is named by a keyed hash under the project's own random
 * key (`groupIdOf`), so a sender cannot aim titles at chosen groups; a
 * project keeps at most {@linkcode MAX_GROUPS} groups, the least recently
 * seen going first when a new one would pass the bound; a group's record
 * stays within `MAX_GROUP_RECORD_BYTES` whatever its entries hold
 * (db/error_group_size.ts); and the groups and releases of one result commit
 * within their share of it (db/group_budget.ts).
 *
 * The consumer's result commit holds no check to spare, so a group is
 * updated without one. Its count stays exact all the same: each commit adds
 * its entries with `sum`, which KV applies atomically whatever else commits.
 * The rest of the group is written last-writer-wins from what the commit
 * read: when two commits update one group at the same moment, its hourly
 * counts may miss the other's entries, its first seen may be the later of
 * the two batches' (a new group only), and its last seen and sample may be
 * the older commit's until the next entry; the index may keep a second,
 * older row, which listings skip and the recount deletes. A group deleted
 * between a commit's read and the commit (past the retention, or by the
 * bound in another process) comes back with the commit, as read, its id
 * row included: its count, counts per release and triage start again.
 *
 * @module
 */
import { DAY_MS, type LogRecord } from "../domain/entry.ts";
import { fingerprintOf, groupIdOf } from "../domain/fingerprint.ts";
import type { AtomicWriter } from "./atomic.ts";
import {
  errorGroupCountKey,
  errorGroupIdKey,
  errorGroupKey,
  errorGroupReleaseKey,
  errorGroupSeenKey,
} from "./keys.ts";
import { decodeJson, encodeJson, getManyChunked } from "./kv.ts";
import { encodeGroupIdRow } from "./error_group_ids.ts";
import { groupKeyOf, makeRoom } from "./error_group_room.ts";
import {
  addReleases,
  countedReleaseOf,
  planReleases,
  type ReleasePlan,
} from "./releases.ts";
import { bounded, MAX_GROUP_RECORD_BYTES } from "./error_group_size.ts";
import { CostWriter, GROUP_COMMIT_BUDGET, GroupShare } from "./group_budget.ts";
import {
  countReleases,
  MAX_RELEASE_PAIRS_PER_BATCH,
  trackReleases,
} from "./error_group_releases.ts";

export {
  MAX_GROUP_RELEASE_BYTES,
  MAX_GROUP_RELEASES,
  MAX_RELEASE_PAIRS_PER_BATCH,
} from "./error_group_releases.ts";
export { MAX_GROUP_RECORD_BYTES } from "./error_group_size.ts";

/** Levels whose entries are grouped. */
export const GROUPED_LEVELS: readonly string[] = ["error", "critical"];
/**
 * Groups one batch adds to at most: 5 mutations a group. Entries of further
 * groups in the same batch (a storm of distinct errors) are stored but not
 * grouped; the largest groups of the batch are the ones kept.
 */
export const MAX_GROUPS_PER_BATCH = 20;
/** Days of daily counts a group keeps, today included: the escalation's week. */
export const GROUP_DAYS = 8;
/** Hours of the sparkline, the newest one included. */
export const SPARK_HOURS = 24;
/** A group first seen this recently is new. */
export const NEW_GROUP_MS = 24 * 3_600_000;
const HOUR_MS = 3_600_000;

/** What a group is, stored or shown. */
export interface GroupFields {
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
  /** Its title before normalisation, cut to 300 characters and 900 bytes. */
  sampleTitle: string;
  /** Entries grouped. */
  count: number;
  /** Receipt time of its first entry, Unix ms. */
  firstSeen: number;
  /** Receipt time of its last entry, Unix ms. */
  lastSeen: number;
}

/** A group as stored. */
export interface StoredGroup extends GroupFields {
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

/** A stored group's hourly and daily counts as they stand at `now`. */
export function seriesAt(
  group: StoredGroup,
  now: number,
): { hourly: number[]; daily: number[] } {
  const hour = hourOf(now);
  const day = dayOf(now);
  return {
    hourly: hour >= group.hour
      ? shiftHours(group.hours, group.hour, hour)
      : new Array(SPARK_HOURS).fill(0),
    daily: group.day !== undefined && day >= group.day
      ? shiftHours(group.days ?? [], group.day, day, DAY_MS, GROUP_DAYS)
      : new Array(GROUP_DAYS).fill(0),
  };
}

/** A group of the batch, before and after. */
interface PlannedGroup {
  id: string;
  /** Last seen of the stored group, when there is one. */
  before: number | null;
  /**
   * The stored group's fingerprint when its entries now have another (one
   * stored before the fingerprint became SHA-256): its id row goes.
   */
  former: string | null;
  after: StoredGroup;
  /** `after` encoded, as stored. */
  value: Uint8Array;
  /** Entries of the batch it counts. */
  added: number;
  /** Its entries of the batch per release. */
  byRelease: Map<string, number>;
  /** Releases whose counts it drops, past {@linkcode MAX_GROUP_RELEASES}. */
  dropped: string[];
  /** Its writes, recorded once with their cost, applied as recorded. */
  writes: CostWriter;
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
  /**
   * The project's share of the result commit (db/group_budget.ts).
   * @default the whole budget of a result commit
   */
  share?: GroupShare;
}

/**
 * Reads what grouping `records`' `error` and `critical` entries changes (at
 * most {@linkcode MAX_GROUPS_PER_BATCH} groups, the largest, and those whose
 * writes fit the project's share of the result commit: the entries of the
 * others are stored but not grouped), and when new groups would pass
 * {@linkcode MAX_GROUPS}, deletes the least recently seen first (in commits
 * of their own, before the result commit).
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
  const share = options.share ?? new GroupShare(GROUP_COMMIT_BUDGET);
  const plan: GroupPlan = {
    projectId,
    retentionMs: options.retentionMs,
    groups: [],
    releases: await planReleases(kv, projectId, records, {
      ...options,
      isError,
      share,
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
    const after = bounded(merge(prior, fp, grouped));
    const dropped = trackReleases(after, byRelease);
    const group: PlannedGroup = {
      id,
      before: prior?.lastSeen ?? null,
      former: prior !== null && prior.fingerprint !== fp.fingerprint
        ? prior.fingerprint
        : null,
      after,
      value: encodeJson(after),
      added: grouped.length,
      byRelease,
      dropped,
      writes: new CostWriter(),
    };
    addGroup(group.writes, projectId, group);
    const { cost } = group.writes;
    if (group.value.length > MAX_GROUP_RECORD_BYTES || !share.fits(cost)) {
      pairs.left += byRelease.size; // its entries are not grouped
      return;
    }
    share.take(cost);
    plan.groups.push(group);
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
  const group: StoredGroup = prior === null ? fresh : {
    ...prior,
    fingerprint: fresh.fingerprint,
    title: fresh.title,
    topFrame: fresh.topFrame,
  };
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
    group.firstRelease = countedReleaseOf(first);
  }
  if (sample !== null && countedReleaseOf(sample) !== null) {
    if (sample.receivedAt >= group.lastSeen || !group.lastRelease) {
      group.lastRelease = countedReleaseOf(sample);
    }
  }
  if (sample !== null && sample.receivedAt >= group.lastSeen) {
    group.lastSeen = sample.receivedAt;
    group.sampleId = sample.id;
    group.level = sample.level;
    group.sampleTitle = sampleTitle(sample);
  } else if (prior === null && sample !== null) {
    group.sampleTitle = sampleTitle(sample);
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
 * index row, the group's id by its fingerprint (in every commit, so that a
 * group deleted after the commit's read comes back with it; a group stored
 * before the fingerprint became SHA-256 has its former id row deleted), and
 * the releases' counters. Returns the number of mutations added: 5 a group
 * at most (6 the once such a group moves to its new fingerprint), plus one
 * a release pair (at most
 * {@linkcode MAX_RELEASE_PAIRS_PER_BATCH}) and 5 a release (at most 10).
 */
export function addErrorGroups(op: AtomicWriter, plan: GroupPlan): number {
  let mutations = addReleases(op, plan.releases);
  for (const group of plan.groups) {
    group.writes.applyTo(op);
    mutations += group.writes.mutations;
  }
  return mutations;
}

/** Records the writes of one group in `op`. */
function addGroup(
  op: AtomicWriter,
  projectId: string,
  group: Omit<PlannedGroup, "writes">,
): void {
  const { id, before, after, added } = group;
  op.set(errorGroupKey(projectId, id), group.value);
  // Every commit that writes the group writes its id row: one deleted
  // with the group after this commit's read (past the retention, or by
  // the bound in another process) comes back with it. Its release of the
  // first entry is what the release's new groups count, once a group.
  op.set(
    errorGroupIdKey(projectId, after.fingerprint),
    encodeGroupIdRow({ id, firstRelease: after.firstRelease ?? null }),
  );
  op.sum(errorGroupCountKey(projectId, id), BigInt(added));
  for (const [release, n] of group.byRelease) {
    op.sum(errorGroupReleaseKey(projectId, id, release), BigInt(n));
  }
  for (const release of group.dropped) {
    op.delete(errorGroupReleaseKey(projectId, id, release));
  }
  if (group.former !== null) {
    op.delete(errorGroupIdKey(projectId, group.former));
  }
  op.set(
    errorGroupSeenKey(projectId, { lastSeen: after.lastSeen, groupId: id }),
    EMPTY,
  );
  if (before !== null && before !== after.lastSeen) {
    op.delete(
      errorGroupSeenKey(projectId, { lastSeen: before, groupId: id }),
    );
  }
}

export {
  groupKeyOf,
  makeRoom,
  MAX_GROUPS,
  RECOUNT_MS,
  sweepErrorGroups,
} from "./error_group_room.ts";

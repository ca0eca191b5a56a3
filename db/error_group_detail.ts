/**
 * One error group in detail (docs/explorer.md#an-error-groups-page): its
 * stored count, first and last seen (db/error_groups.ts), and what its
 * entries say — counts per hour over 24 hours and per day over 14 days, the
 * users affected (distinct `context.userId`) and the top ones, environments,
 * releases with their first and last seen, the latest entry — and, for a
 * page of the errors list, the users of each group.
 *
 * The breakdowns come from the entries of the group's query
 * (`level>=error fingerprint:HASH`, the query the errors list links to) in
 * ONE bounded scan, newest first: six aggregation passes (`count by (time
 * 1h)`, `count by (time 1d)`, `uniq`, two `top`, `count by (context.release)`)
 * would each read the same chunks and fingerprint the same entries again,
 * and the aggregation engine has no min and max for the releases' first and
 * last seen. Like a page of entries the scan has a time budget; when it runs
 * out the answer says how far back it got (`searchedTo`), and pages show
 * "partial". Read-only.
 *
 * @module
 */
import type { LogRecord } from "../domain/entry.ts";
import { DAY_MS } from "../domain/entry.ts";
import { fingerprintOf } from "../domain/fingerprint.ts";
import { boundTime, timeBound } from "../domain/ids.ts";
import { type ErrorGroup, readGroup } from "./error_group_reads.ts";
import { compileFilter } from "./query/filter.ts";
import { parseQuery } from "./query/parse.ts";
import { MAX_ID, scan } from "./query/scan.ts";

const HOUR_MS = 3_600_000;
/** Hours of the hourly counts. */
export const DETAIL_HOURS = 24;
/** Days of the daily counts: the span the page reads. */
export const DETAIL_DAYS = 14;
/** Reading time of a group's page (one scan), ms. */
export const DETAIL_BUDGET_MS = 400;
/** Reading time of the users of a page of groups (one scan), ms. */
export const LIST_USERS_BUDGET_MS = 200;
/** Distinct users counted per group; past that, "at least". */
export const MAX_USERS = 10_000;
/** Distinct environments and releases counted per group. */
export const MAX_VALUES = 1_000;
/** Rows shown of users, environments and releases. */
export const TOP_USERS = 5;
export const TOP_VALUES = 10;

/** Thrown for a fingerprint that is not 16 hex digits. */
export class FingerprintError extends Error {
  override name = "FingerprintError";
}

/** A value and how many entries had it. */
export interface ValueCount {
  /** `null`: entries without the field. */
  value: string | null;
  count: number;
}

/** A release, its entries, and its first and last entry seen, Unix ms. */
export interface ReleaseCount extends ValueCount {
  firstSeen: number;
  lastSeen: number;
}

/** An error group in detail. */
export interface GroupDetail {
  fingerprint: string;
  /** The stored group (exact count, first and last seen); `null` if none. */
  group: ErrorGroup | null;
  /** The newest entry of the group in the last 14 days. */
  latest: LogRecord | null;
  /** Entries per hour, oldest first, the last ending with `now`'s hour. */
  hourly: number[];
  /** Entries per UTC day, oldest first, the last being `now`'s day. */
  daily: number[];
  /** Distinct `context.userId`s (at least, when `usersCapped` or partial). */
  users: number;
  /** More than {@linkcode MAX_USERS} users: `users` is a lower bound. */
  usersCapped: boolean;
  /** The users with the most entries. */
  topUsers: ValueCount[];
  environments: ValueCount[];
  /** The most recently seen first. */
  releases: ReleaseCount[];
  /** Entries read (of the last 14 days). */
  total: number;
  /**
   * Set when the budget ran out: entries received at or after it were all
   * counted, older ones not.
   */
  searchedTo?: number;
}

/** Options of {@linkcode readGroupDetail}. */
export interface DetailOptions {
  /** Unix ms. */
  now: number;
  /** Reading time, ms. @default {DETAIL_BUDGET_MS} */
  budgetMs?: number;
  /** The budget's clock. @default {performance.now} */
  clock?: () => number;
}

/** A fingerprint as typed: 16 hex digits, lower-cased. */
export function checkFingerprint(text: string): string {
  const fp = text.trim().toLowerCase();
  if (!/^[0-9a-f]{16}$/.test(fp)) {
    throw new FingerprintError(
      `Cannot read fingerprint "${
        text.slice(0, 40)
      }": expected 16 hex digits, as the errors list shows`,
    );
  }
  return fp;
}

/** The largest count first; ties by value. */
function byCount(a: ValueCount, b: ValueCount): number {
  return b.count - a.count || String(a.value).localeCompare(String(b.value));
}

/** Counts per value, bounded to {@linkcode MAX_VALUES} values. */
class Counter<T extends ValueCount> {
  map = new Map<string | null, T>();
  constructor(private make: (value: string | null) => T) {}
  add(value: string | null): T | null {
    let found = this.map.get(value);
    if (found === undefined) {
      if (this.map.size >= MAX_VALUES) return null;
      this.map.set(value, found = this.make(value));
    }
    found.count++;
    return found;
  }
  largest(n: number): T[] {
    return [...this.map.values()].sort(byCount).slice(0, n);
  }
}

function textOf(value: unknown): string | null {
  if (value === undefined || value === null || value === "") return null;
  return typeof value === "string" ? value : JSON.stringify(value);
}

/** What one attempt of the scan counts. */
class DetailTally {
  latest: LogRecord | null = null;
  total = 0;
  hourly = new Array<number>(DETAIL_HOURS).fill(0);
  daily = new Array<number>(DETAIL_DAYS).fill(0);
  users = new Map<string, number>();
  usersCapped = false;
  environments = new Counter<ValueCount>((value) => ({ value, count: 0 }));
  releases = new Counter<ReleaseCount>((value) => ({
    value,
    count: 0,
    firstSeen: Infinity,
    lastSeen: -Infinity,
  }));
  constructor(private hour: number, private day: number) {}

  add(record: LogRecord): void {
    this.latest ??= record;
    this.total++;
    const at = record.receivedAt;
    const h = DETAIL_HOURS - 1 - Math.floor((this.hour - at) / HOUR_MS);
    if (h >= 0 && h < DETAIL_HOURS) this.hourly[h]!++;
    const d = DETAIL_DAYS - 1 - Math.floor((this.day - at) / DAY_MS);
    if (d >= 0 && d < DETAIL_DAYS) this.daily[d]!++;
    const user = textOf(record.context.userId);
    if (user !== null) {
      const n = this.users.get(user);
      if (n !== undefined) this.users.set(user, n + 1);
      else if (this.users.size < MAX_USERS) this.users.set(user, 1);
      else this.usersCapped = true;
    }
    this.environments.add(textOf(record.context.environment));
    const release = this.releases.add(textOf(record.context.release));
    if (release !== null) {
      release.firstSeen = Math.min(release.firstSeen, at);
      release.lastSeen = Math.max(release.lastSeen, at);
    }
  }
}

/**
 * The group of `fingerprint` in detail: one scan of its entries of the last
 * {@linkcode DETAIL_DAYS} days (newest first, within the budget), then its
 * stored group, found from the latest entry's title and top frame.
 *
 * @example
 * ```ts
 * const detail = await readGroupDetail(kv, projectId, "e5eb45f4ee70b0c0", { now: Date.now() });
 * ```
 */
export async function readGroupDetail(
  kv: Deno.Kv,
  projectId: string,
  fingerprint: string,
  options: DetailOptions,
): Promise<GroupDetail> {
  const fp = checkFingerprint(fingerprint);
  const { now } = options;
  const hour = Math.floor(now / HOUR_MS) * HOUR_MS + HOUR_MS;
  const day = Math.floor(now / DAY_MS) * DAY_MS + DAY_MS;
  const filter = {
    ...parseQuery(`level>=error fingerprint:${fp}`),
    since: day - DETAIL_DAYS * DAY_MS,
  };
  let tally = new DetailTally(hour, day);
  const result = await scan(kv, projectId, {
    order: "newest",
    lo: timeBound(filter.since),
    hi: MAX_ID,
    filter: compileFilter(filter),
    limit: Infinity,
    visit: () => {
      const into = tally = new DetailTally(hour, day);
      return (record) => into.add(record);
    },
    budget: {
      ms: options.budgetMs ?? DETAIL_BUDGET_MS,
      ...(options.clock ? { clock: options.clock } : {}),
    },
  });
  const group = tally.latest === null
    ? null
    : await readGroup(kv, projectId, fingerprintOf(tally.latest), now);
  const detail: GroupDetail = {
    fingerprint: fp,
    group: group?.fingerprint === fp ? group : null,
    latest: tally.latest,
    hourly: tally.hourly,
    daily: tally.daily,
    users: tally.users.size,
    usersCapped: tally.usersCapped,
    topUsers: [...tally.users].map(([value, count]) => ({ value, count }))
      .sort(byCount).slice(0, TOP_USERS),
    environments: tally.environments.largest(TOP_VALUES),
    releases: [...tally.releases.map.values()]
      .sort((a, b) => b.lastSeen - a.lastSeen).slice(0, TOP_VALUES),
    total: tally.total,
  };
  if (result.resume !== undefined) {
    detail.searchedTo = resumeTime(result.resume);
  }
  return detail;
}

/** The receipt time from which a scan that stopped at `resume` counted all. */
function resumeTime(resume: string): number {
  return boundTime(resume) + 1;
}

/** The users of each group of a page of the errors list. */
export interface GroupUsers {
  /** Distinct `context.userId`s per fingerprint (groups without users absent). */
  users: Map<string, number>;
  /** Set when the budget ran out: counts are lower bounds. */
  searchedTo?: number;
}

/**
 * The distinct users (`context.userId`) of the groups of one page of the
 * errors list: one scan of the project's `error` and `critical` entries
 * since the oldest first seen of `groups`, newest first, counting only
 * entries with a user whose fingerprint is one of the page's (at most
 * {@linkcode MAX_USERS} users a group), within the budget.
 *
 * @example
 * ```ts
 * const { users, searchedTo } = await readGroupUsers(kv, projectId, groups, {});
 * ```
 */
export async function readGroupUsers(
  kv: Deno.Kv,
  projectId: string,
  groups: ErrorGroup[],
  options: { budgetMs?: number; clock?: () => number },
): Promise<GroupUsers> {
  if (groups.length === 0) return { users: new Map() };
  const wanted = new Set(groups.map((g) => g.fingerprint));
  const since = Math.min(...groups.map((g) => g.firstSeen));
  let sets = new Map<string, Set<string>>();
  const result = await scan(kv, projectId, {
    order: "newest",
    lo: timeBound(since),
    hi: MAX_ID,
    filter: compileFilter(parseQuery("level>=error")),
    limit: Infinity,
    visit: () => {
      const into = sets = new Map();
      return (record) => {
        const user = textOf(record.context.userId);
        // Fingerprinting costs most: only entries that name a user.
        if (user === null) return;
        const fp = fingerprintOf(record).fingerprint;
        if (!wanted.has(fp)) return;
        let set = into.get(fp);
        if (set === undefined) into.set(fp, set = new Set());
        if (set.size < MAX_USERS) set.add(user);
      };
    },
    budget: {
      ms: options.budgetMs ?? LIST_USERS_BUDGET_MS,
      ...(options.clock ? { clock: options.clock } : {}),
    },
  });
  const users = new Map([...sets].map(([fp, set]) => [fp, set.size]));
  return result.resume === undefined
    ? { users }
    : { users, searchedTo: resumeTime(result.resume) };
}

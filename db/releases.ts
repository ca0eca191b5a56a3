/**
 * A project's releases (docs/errors.md#releases): the `context.release` its
 * entries carry, each with its first and last seen, its entries, its errors
 * and the error groups first seen in it, kept by the consumer at write time.
 *
 * Every figure but the new groups is a `KvU64` changed by `min`, `max` or
 * `sum` in the result commit that stores the entries, so it is exact however
 * many commits run at once; the new groups are counted from the groups' id
 * rows (db/error_group_ids.ts), one a group. It costs the consumer no read
 * but a cached list of the project's releases (read again once a
 * {@linkcode RELEASE_RECOUNT_MS}). Bounded: a
 * project keeps {@linkcode MAX_RELEASES}, the least recently seen going
 * first, and releases last seen before the retention are deleted by the same
 * sweep; a batch counts {@linkcode MAX_RELEASES_PER_BATCH} releases at most.
 *
 * Order: releases whose names both parse as semantic versions compare as
 * such (`1.10.0` after `1.9.2`, `2.0.0-rc.1` before `2.0.0`); any other pair
 * compares by first seen. A release not seen yet comes after every release
 * seen when either name is not a version. A group resolved in a release
 * keeps that release's first seen in its triage (db/error_group_triage.ts);
 * a release resolved in before it was seen is awaited
 * ({@linkcode awaitRelease}), and its first seen is kept when its counters
 * are deleted, so that later releases still order against it.
 *
 * @module
 */
import type { LogRecord } from "../domain/entry.ts";
import type { AtomicWriter } from "./atomic.ts";
import { newGroupsByRelease } from "./error_group_ids.ts";
import {
  addCosts,
  type CommitCost,
  costOf,
  GROUP_COMMIT_BUDGET,
  GroupShare,
  NO_COST,
} from "./group_budget.ts";
import {
  decodeErrorGroupReleaseKey,
  decodeReleaseCountKey,
  errorGroupReleaseKey,
  releaseAwaitedKey,
  releaseCountKey,
  type ReleaseField,
} from "./keys.ts";
import { getManyChunked } from "./kv.ts";

/** Releases a project keeps at most; the least recently seen go first. */
export const MAX_RELEASES = 500;
/** Distinct releases one batch counts at most; entries of others are stored uncounted. */
export const MAX_RELEASES_PER_BATCH = 10;
/** Longest release name counted, in characters. */
export const MAX_RELEASE_CHARS = 200;
/** How long a process trusts its list of a project's releases. */
export const RELEASE_RECOUNT_MS = 60_000;
const DELETE_BATCH = 500;

/** A release as the releases page and `deno task releases` show it. */
export interface Release {
  name: string;
  /** Receipt time of its first entry, Unix ms. */
  firstSeen: number;
  /** Receipt time of its last entry, Unix ms. */
  lastSeen: number;
  entries: number;
  /** Entries of level error and critical. */
  errors: number;
  /** The project's error groups whose first entry was of this release. */
  newGroups: number;
}

/** Whether `text` holds a C0 control character (JSON writes most as `\u0001`). */
function hasControl(text: string): boolean {
  for (let i = 0; i < text.length; i++) {
    if (text.charCodeAt(i) < 0x20) return true;
  }
  return false;
}

/**
 * `value` as a release name that is counted and stored: a string of 1 to
 * {@linkcode MAX_RELEASE_CHARS} characters once trimmed, without a control
 * character and well formed (no lone surrogate), else `null`. So a name
 * takes at most 3 bytes a character in JSON and in a key, where a control
 * character takes 6 in JSON (`\u0001`). A source map's release holds no
 * control character either (db/sourcemaps.ts).
 *
 * @example
 * ```ts
 * releaseName(" 1.4.0 "); // "1.4.0"
 * releaseName("1.4\u0001"); // null
 * ```
 */
export function releaseName(value: unknown): string | null {
  if (typeof value !== "string") return null;
  const name = value.trim();
  if (name === "" || name.length > MAX_RELEASE_CHARS) return null;
  return hasControl(name) || !name.isWellFormed() ? null : name;
}

/**
 * The release of an entry: `context.release` when it is a string of 1 to
 * {@linkcode MAX_RELEASE_CHARS} characters, else `null`.
 *
 * @example
 * ```ts
 * releaseOf({ context: { release: "1.4.0" } }); // "1.4.0"
 * ```
 */
export function releaseOf(
  record: { context: Record<string, unknown> },
): string | null {
  const release = record.context.release;
  if (typeof release !== "string") return null;
  const name = release.trim();
  return name === "" || name.length > MAX_RELEASE_CHARS ? null : name;
}

/**
 * The release an entry is counted in, and its error group by: its
 * `context.release` as a {@linkcode releaseName}, else `null`. The entry is
 * stored as sent either way.
 *
 * @example
 * ```ts
 * countedReleaseOf({ context: { release: "1.4.0" } }); // "1.4.0"
 * ```
 */
export function countedReleaseOf(
  record: { context: Record<string, unknown> },
): string | null {
  return releaseName(record.context.release);
}

const SEMVER =
  /^v?(\d{1,15})\.(\d{1,15})\.(\d{1,15})(?:-([0-9A-Za-z.-]+))?(?:\+[0-9A-Za-z.-]+)?$/;

/** `[major, minor, patch, prerelease parts]`, or `null` when not a version. */
function parseSemver(name: string): [number[], string[]] | null {
  const m = SEMVER.exec(name);
  if (m === null) return null;
  return [[Number(m[1]), Number(m[2]), Number(m[3])], m[4]?.split(".") ?? []];
}

function comparePre(a: string[], b: string[]): number {
  if (a.length === 0 || b.length === 0) return b.length - a.length;
  for (let i = 0; i < Math.max(a.length, b.length); i++) {
    const x = a[i], y = b[i];
    if (x === undefined || y === undefined) return x === undefined ? -1 : 1;
    const nx = /^\d+$/.test(x), ny = /^\d+$/.test(y);
    if (nx && ny && Number(x) !== Number(y)) return Number(x) - Number(y);
    if (nx !== ny) return nx ? -1 : 1;
    if (x !== y) return x < y ? -1 : 1;
  }
  return 0;
}

/**
 * Compares two releases: negative when `a` comes before `b`, positive
 * after, 0 for the same place. `firstSeen` gives the first seen time of the
 * releases seen so far.
 *
 * @example
 * ```ts
 * compareReleases("1.10.0", "1.9.2", new Map()); // > 0
 * ```
 */
export function compareReleases(
  a: string,
  b: string,
  firstSeen: ReadonlyMap<string, number>,
): number {
  if (a === b) return 0;
  const x = parseSemver(a), y = parseSemver(b);
  if (x !== null && y !== null) {
    for (let i = 0; i < 3; i++) {
      if (x[0][i] !== y[0][i]) return x[0][i]! - y[0][i]!;
    }
    return comparePre(x[1], y[1]);
  }
  const fa = firstSeen.get(a) ?? Infinity, fb = firstSeen.get(b) ?? Infinity;
  return fa === fb ? 0 : fa < fb ? -1 : 1;
}

/** The counts one batch adds to a release. */
interface ReleaseTally {
  first: number;
  last: number;
  entries: number;
  errors: number;
  groups: number;
}

/** What {@linkcode addReleases} writes: from {@linkcode planReleases}. */
export interface ReleasePlan {
  projectId: string;
  releases: Map<string, ReleaseTally>;
}

const known = new WeakMap<
  Deno.Kv,
  Map<string, { names: Set<string>; at: number }>
>();

/**
 * The releases of a project, each with its counters, as stored: one read
 * of the project's counters.
 */
async function readReleases(
  kv: Deno.Kv,
  projectId: string,
): Promise<Map<string, Release>> {
  const releases = new Map<string, Release>();
  const list = kv.list<Deno.KvU64>({ prefix: releaseCountKey(projectId) }, {
    limit: 5 * (MAX_RELEASES + MAX_RELEASES_PER_BATCH) + 100,
  });
  for await (const row of list) {
    const { release, field } = decodeReleaseCountKey(row.key);
    let r = releases.get(release);
    if (r === undefined) {
      releases.set(
        release,
        r = {
          name: release,
          firstSeen: 0,
          lastSeen: 0,
          entries: 0,
          errors: 0,
          newGroups: 0,
        },
      );
    }
    const n = row.value instanceof Deno.KvU64 ? Number(row.value.value) : 0;
    const into: Record<ReleaseField, keyof Release> = {
      first: "firstSeen",
      last: "lastSeen",
      entries: "entries",
      errors: "errors",
      groups: "newGroups",
    };
    (r as unknown as Record<string, number>)[into[field]] = n;
  }
  return releases;
}

/** The counters of a release. */
const RELEASE_FIELDS: readonly ReleaseField[] = [
  "first",
  "last",
  "entries",
  "errors",
  "groups",
];

async function deleteReleases(
  kv: Deno.Kv,
  projectId: string,
  names: string[],
): Promise<void> {
  const keys = names.flatMap((name) =>
    RELEASE_FIELDS.map((f) => releaseCountKey(projectId, name, f))
  );
  for (let i = 0; i < keys.length; i += DELETE_BATCH) {
    const op = kv.atomic();
    for (const key of keys.slice(i, i + DELETE_BATCH)) op.delete(key);
    await op.commit();
  }
}

/**
 * Keeps the first seen of those of `doomed` a group was resolved in before
 * they were seen (their {@linkcode releaseAwaitedKey} still 0), before
 * their counters are deleted. Each is checked on its row: a first seen
 * kept before, by another process or for counters deleted earlier, stays.
 */
async function keepAwaited(
  kv: Deno.Kv,
  projectId: string,
  doomed: Release[],
): Promise<void> {
  if (doomed.length === 0) return;
  const rows = await getManyChunked<Deno.KvU64>(
    kv,
    doomed.map((r) => releaseAwaitedKey(projectId, r.name)),
  );
  for (const [i, row] of rows.entries()) {
    const first = doomed[i]!.firstSeen;
    if (!(row.value instanceof Deno.KvU64) || row.value.value !== 0n) continue;
    if (first <= 0) continue;
    await kv.atomic().check(row).set(row.key, new Deno.KvU64(BigInt(first)))
      .commit();
  }
}

/**
 * Marks release `name` as awaited by a group resolved in it before it was
 * seen: `op` creates its {@linkcode releaseAwaitedKey} at 0 unless it is
 * there, so that its first seen is kept once its counters are deleted.
 * One mutation.
 */
export function awaitRelease(
  op: AtomicWriter,
  projectId: string,
  name: string,
): void {
  op.max(releaseAwaitedKey(projectId, name), 0n);
}

/**
 * The first seen time of release `name`: the earlier of its counter's and
 * the one kept when its counters were deleted, `null` when neither is
 * known (a release not seen yet, or deleted before any group awaited it).
 *
 * @example
 * ```ts
 * await knownFirstSeen(kv, projectId, "d4e5f6"); // 1767571200000
 * ```
 */
export async function knownFirstSeen(
  kv: Deno.Kv,
  projectId: string,
  name: string,
): Promise<number | null> {
  const rows = await kv.getMany<Deno.KvU64[]>([
    releaseCountKey(projectId, name, "first"),
    releaseAwaitedKey(projectId, name),
  ]);
  const times = rows.map((row) =>
    row.value instanceof Deno.KvU64 ? Number(row.value.value) : 0
  ).filter((t) => t > 0);
  return times.length === 0 ? null : Math.min(...times);
}

/**
 * Deletes a project's releases last seen past the retention (once every
 * {@linkcode RELEASE_RECOUNT_MS} per process): for the merge rounds, so that
 * a project that no longer sends releases keeps none past its retention.
 */
export async function sweepReleases(
  kv: Deno.Kv,
  projectId: string,
  options: { now: number; retentionMs: number },
): Promise<void> {
  await releaseNames(kv, projectId, { ...options, room: 0 });
}

/**
 * The names of a project's releases, read again (and swept: past the
 * retention, past the bound with `room` more to come) once a
 * {@linkcode RELEASE_RECOUNT_MS}, or when `room` would pass the bound.
 */
async function releaseNames(
  kv: Deno.Kv,
  projectId: string,
  options: { now: number; retentionMs: number; room: number },
): Promise<Set<string>> {
  let cache = known.get(kv);
  if (cache === undefined) known.set(kv, cache = new Map());
  const cached = cache.get(projectId);
  if (
    cached !== undefined && options.now - cached.at < RELEASE_RECOUNT_MS &&
    cached.names.size + options.room <= MAX_RELEASES
  ) {
    return cached.names;
  }
  const releases = [...(await readReleases(kv, projectId)).values()]
    .sort((a, b) => b.lastSeen - a.lastSeen);
  const expired = options.now - options.retentionMs;
  const keep = Math.max(0, MAX_RELEASES - options.room);
  const doomed = releases.filter((r, i) => i >= keep || r.lastSeen < expired);
  await keepAwaited(kv, projectId, doomed);
  await deleteReleases(kv, projectId, doomed.map((r) => r.name));
  const gone = new Set(doomed.map((r) => r.name));
  const names = new Set(
    releases.filter((r) => !gone.has(r.name)).map((r) => r.name),
  );
  cache.set(projectId, { names, at: options.now });
  return names;
}

/**
 * Part of a project's share of the result commit
 * (db/group_budget.ts) that its releases may take: the rest is its error
 * groups'.
 */
const RELEASES_PART = 0.5;

/** What the counters of release `name` cost the result commit at most. */
function releaseCost(projectId: string, name: string): CommitCost {
  return RELEASE_FIELDS.reduce(
    (cost, field) =>
      addCosts(cost, costOf(releaseCountKey(projectId, name, field))),
    NO_COST,
  );
}

/**
 * Counts `records` into their releases (at most
 * {@linkcode MAX_RELEASES_PER_BATCH} a batch, and those whose counters fit
 * half of `share`, the project's share of the result commit); `isError`
 * tells the entries that count as errors. Returns the plan and the set of
 * releases counted, which the error groups count per group.
 *
 * @example
 * ```ts
 * const plan = await planReleases(kv, projectId, records, { now, retentionMs, isError });
 * ```
 */
export async function planReleases(
  kv: Deno.Kv,
  projectId: string,
  records: LogRecord[],
  options: {
    now: number;
    retentionMs: number;
    isError: (record: LogRecord) => boolean;
    /** @default the whole budget of a result commit */
    share?: GroupShare;
  },
): Promise<ReleasePlan> {
  const plan: ReleasePlan = { projectId, releases: new Map() };
  const share = options.share ?? new GroupShare(GROUP_COMMIT_BUDGET);
  const refused = new Set<string>();
  for (const record of records) {
    const name = countedReleaseOf(record);
    if (name === null || refused.has(name)) continue;
    let tally = plan.releases.get(name);
    if (tally === undefined) {
      if (plan.releases.size >= MAX_RELEASES_PER_BATCH) continue;
      const cost = releaseCost(projectId, name);
      if (!share.fits(cost, RELEASES_PART)) {
        refused.add(name);
        continue;
      }
      share.take(cost);
      plan.releases.set(
        name,
        tally = { first: Infinity, last: 0, entries: 0, errors: 0, groups: 0 },
      );
    }
    tally.first = Math.min(tally.first, record.receivedAt);
    tally.last = Math.max(tally.last, record.receivedAt);
    tally.entries++;
    if (options.isError(record)) tally.errors++;
  }
  if (plan.releases.size === 0) return plan;
  let names = await releaseNames(kv, projectId, { ...options, room: 0 });
  const fresh = [...plan.releases.keys()].filter((n) => !names.has(n));
  if (fresh.length > 0) {
    names = await releaseNames(kv, projectId, {
      ...options,
      room: fresh.length,
    });
    for (const name of fresh) names.add(name);
  }
  return plan;
}

/**
 * Adds to `op` the counters of a {@linkcode ReleasePlan}: at most 5
 * mutations a release. A count that adds nothing (no errors, no new group)
 * is left out, since a missing counter reads as 0: most batches have
 * neither, and every mutation costs the commit. Returns the number of
 * mutations added.
 */
export function addReleases(op: AtomicWriter, plan: ReleasePlan): number {
  let mutations = 0;
  for (const [name, t] of plan.releases) {
    const key = (field: ReleaseField) =>
      releaseCountKey(plan.projectId, name, field);
    op.min(key("first"), BigInt(t.first));
    op.max(key("last"), BigInt(t.last));
    op.sum(key("entries"), BigInt(t.entries));
    mutations += 3;
    for (const field of ["errors", "groups"] as const) {
      if (t[field] === 0) continue;
      op.sum(key(field), BigInt(t[field]));
      mutations++;
    }
  }
  return mutations;
}

/**
 * A project's releases in release order, the latest first.
 *
 * @example
 * ```ts
 * for (const r of await listReleases(kv, projectId)) console.log(r.name, r.errors);
 * ```
 */
export async function listReleases(
  kv: Deno.Kv,
  projectId: string,
  options: { now?: number; retentionMs?: number } = {},
): Promise<Release[]> {
  const releases = [...(await readReleases(kv, projectId)).values()]
    .filter((r) =>
      options.now === undefined || options.retentionMs === undefined ||
      r.lastSeen >= options.now - options.retentionMs
    );
  // Counted once a group, from its id row (db/error_group_ids.ts).
  const newGroups = await newGroupsByRelease(kv, projectId);
  for (const r of releases) r.newGroups = newGroups.get(r.name) ?? 0;
  const firstSeen = new Map(releases.map((r) => [r.name, r.firstSeen]));
  return releases.sort((a, b) =>
    compareReleases(b.name, a.name, firstSeen) || b.firstSeen - a.firstSeen
  );
}

/** The first seen time of each of a project's releases, for {@linkcode compareReleases}. */
export async function releaseFirstSeen(
  kv: Deno.Kv,
  projectId: string,
): Promise<Map<string, number>> {
  const releases = await readReleases(kv, projectId);
  return new Map([...releases.values()].map((r) => [r.name, r.firstSeen]));
}

/**
 * Rows of a group's counts per release read at most: its 50 releases
 * (db/error_group_releases.ts) and rows that two batches writing the group
 * at once left out of its list, until the group is deleted with them.
 */
const MAX_GROUP_RELEASE_ROWS = 100;

/** A group's count of entries of one release. */
export interface GroupReleaseCount {
  /** Entries counted (exact), since the row was made. */
  count: number;
  /**
   * Versionstamp of the commit that last counted an entry of the release:
   * a row dropped past the group's releases and made again has a new one.
   */
  versionstamp: string;
}

/** A group's entries per release, as counted (exact), with their versionstamps. */
export async function readGroupReleaseCounts(
  kv: Deno.Kv,
  projectId: string,
  groupId: string,
): Promise<Map<string, GroupReleaseCount>> {
  const counts = new Map<string, GroupReleaseCount>();
  const list = kv.list<Deno.KvU64>({
    prefix: errorGroupReleaseKey(projectId, groupId),
  }, { limit: MAX_GROUP_RELEASE_ROWS });
  for await (const row of list) {
    counts.set(decodeErrorGroupReleaseKey(row.key), {
      count: row.value instanceof Deno.KvU64 ? Number(row.value.value) : 0,
      versionstamp: row.versionstamp,
    });
  }
  return counts;
}

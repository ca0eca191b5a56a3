/**
 * Triage of error groups (docs/errors.md#triage): a group is `unresolved`,
 * `resolved` (optionally in a release, also one not seen yet), `ignored`
 * (forever, until a date, or until N more entries) or `regressed`, and may
 * be assigned to an account.
 *
 * Only people change the stored triage; the consumer never reads it. What
 * entries do to a group is derived when it is read, from counts the consumer
 * keeps exactly with `sum` (db/error_groups.ts): the group's count and its
 * counts per release. A change records those counts as they were, in an
 * atomic operation checked on the count's versionstamp, so every entry is
 * either before the change or after it, whatever commits run at once:
 *
 * - resolved without a release: regressed once the count has grown;
 * - resolved in release R: regressed once a release after R (db/releases.ts
 *   order) has entries counted after the change, which its row's
 *   versionstamp, newer than the count's the change recorded, tells (a row
 *   the group dropped and made again included); entries of R or older
 *   releases, or without a release, do not reopen it. The change keeps R's
 *   first seen (or awaits R, not seen yet), so that releases still order
 *   against R once its counters are deleted;
 * - ignored until N more entries: unresolved once the count has grown by N;
 *   until a date: unresolved from that date.
 *
 * @module
 */
import { DAY_MS } from "../domain/entry.ts";
import {
  type ErrorGroup,
  findGroup,
  groupCursor,
  listGroups,
  MAX_LIST_GROUPS,
} from "./error_group_reads.ts";
import {
  errorGroupCountKey,
  errorGroupKey,
  errorGroupTriageKey,
} from "./keys.ts";
import { decodeJson, encodeJson, getManyChunked } from "./kv.ts";
import {
  awaitRelease,
  compareReleases,
  type GroupReleaseCount,
  knownFirstSeen,
  MAX_RELEASE_CHARS,
  readGroupReleaseCounts,
  releaseFirstSeen,
} from "./releases.ts";
import { getUser } from "./users.ts";
import { InvalidValueError } from "./validation.ts";

/** What a group's status is, as shown. */
export const GROUP_STATUSES = [
  "unresolved",
  "resolved",
  "ignored",
  "regressed",
] as const;
export type GroupStatus = typeof GROUP_STATUSES[number];

/** Largest `--until-count`. */
export const MAX_UNTIL_COUNT = 1_000_000_000;
/** Farthest an ignore until a date reaches, in days from now (100 years). */
export const MAX_IGNORE_DAYS = 36_500;
/** Attempts of a change when entries keep arriving. */
const ATTEMPTS = 10;

/** A group's triage as stored. */
export interface Triage {
  state: "unresolved" | "resolved" | "ignored";
  /** When the state was set, Unix ms, and by whom. */
  at: number;
  by: string;
  /** The group's exact count when the state was set. */
  count: number;
  /** Resolved in this release. */
  inRelease?: string;
  /**
   * First seen of `inRelease` when it was resolved in, Unix ms; absent for
   * a release not seen yet (db/releases.ts awaits it).
   */
  releaseFirstSeen?: number;
  /**
   * Versionstamp of the group's count when it was resolved in a release
   * (`""` before any): a count per release written since is newer.
   */
  countVersion?: string;
  /**
   * The group's counts per release when it was resolved in a release, in
   * a triage stored before `countVersion`.
   */
  releaseCounts?: Record<string, number>;
  /** Ignored until this time, Unix ms. */
  untilMs?: number;
  /** Ignored until this many more entries. */
  untilCount?: number;
  /** The account it is assigned to. */
  assignee?: string;
}

/** A group's triage as shown: its status and how it came to be. */
export interface GroupTriage {
  status: GroupStatus;
  /**
   * As stored; for a group resolved in a release not seen then, whose count
   * has grown since, with that release's first seen once known.
   */
  triage: Triage | null;
  assignee: string | null;
}

/** Thrown for a fingerprint that names no group of the project. */
export class GroupNotFoundError extends Error {
  override name = "GroupNotFoundError";
}

/** A change of triage. */
export type TriageChange =
  | { action: "resolve"; inRelease?: string }
  | { action: "ignore"; untilMs?: number; untilCount?: number }
  | { action: "reopen" }
  | { action: "assign"; email: string | null };

/**
 * Whether `release` comes after the release `triage` resolved the group in
 * (db/releases.ts order; any release, for a resolve without one). That
 * release is placed at the earlier of the first seen the triage keeps and
 * its counter's in `firstSeen`: its counters may have been deleted, or
 * made anew, since.
 *
 * @example
 * ```ts
 * comesAfterResolve("g7h8i9", triage, await releaseFirstSeen(kv, projectId));
 * ```
 */
export function comesAfterResolve(
  release: string,
  triage: Triage,
  firstSeen: ReadonlyMap<string, number>,
): boolean {
  const resolvedIn = triage.inRelease;
  if (resolvedIn === undefined) return true;
  const kept = triage.releaseFirstSeen;
  const counted = firstSeen.get(resolvedIn);
  const order = kept === undefined || (counted ?? Infinity) <= kept
    ? firstSeen
    : new Map(firstSeen).set(resolvedIn, kept);
  return compareReleases(release, resolvedIn, order) > 0;
}

/**
 * Whether the group has entries of a release counted after the change
 * `triage` records: its row is newer than the count the change recorded
 * (in a triage stored before that, its count grew past the one kept).
 */
function countedSince(
  triage: Triage,
  release: string,
  row: GroupReleaseCount,
): boolean {
  return triage.countVersion !== undefined
    ? row.versionstamp > triage.countVersion
    : row.count > (triage.releaseCounts?.[release] ?? 0);
}

/**
 * The status of a group with `triage`, from its exact `count` and, for a
 * group resolved in a release, its counts per release (`releaseCounts`) and
 * the releases' first seen times.
 *
 * @example
 * ```ts
 * statusOf(null, 3, { now: Date.now() }); // "unresolved"
 * ```
 */
export function statusOf(
  triage: Triage | null,
  count: number,
  options: {
    now: number;
    releaseCounts?: ReadonlyMap<string, GroupReleaseCount>;
    firstSeen?: ReadonlyMap<string, number>;
  },
): GroupStatus {
  if (triage === null || triage.state === "unresolved") return "unresolved";
  if (triage.state === "ignored") {
    if (triage.untilMs !== undefined && options.now >= triage.untilMs) {
      return "unresolved";
    }
    if (
      triage.untilCount !== undefined &&
      count - triage.count >= triage.untilCount
    ) return "unresolved";
    return "ignored";
  }
  if (count <= triage.count) return "resolved";
  if (triage.inRelease === undefined) return "regressed";
  const firstSeen = options.firstSeen ?? new Map();
  for (const [release, row] of options.releaseCounts ?? []) {
    if (!countedSince(triage, release, row)) continue;
    if (comesAfterResolve(release, triage, firstSeen)) return "regressed";
  }
  return "resolved";
}

/**
 * The triage of each of `groups` (by id), with its status at `now`: one
 * read of the rows, and for groups resolved in a release, their counts per
 * release.
 *
 * @example
 * ```ts
 * const triage = await readTriage(kv, projectId, groups, Date.now());
 * triage.get(groups[0].id)?.status; // "unresolved"
 * ```
 */
export async function readTriage(
  kv: Deno.Kv,
  projectId: string,
  groups: ErrorGroup[],
  now: number,
): Promise<Map<string, GroupTriage>> {
  const rows = await getManyChunked<Uint8Array>(
    kv,
    groups.map((g) => errorGroupTriageKey(projectId, g.id)),
  );
  const out = new Map<string, GroupTriage>();
  let firstSeen: Map<string, number> | null = null;
  const kept = new Map<string, number | null>();
  for (const [i, group] of groups.entries()) {
    let triage = decodeJson<Triage>(rows[i]!.value);
    let releaseCounts: Map<string, GroupReleaseCount> | undefined;
    const resolvedIn = triage?.state === "resolved" ? triage.inRelease : null;
    if (triage && resolvedIn && group.count > triage.count) {
      firstSeen ??= await releaseFirstSeen(kv, projectId);
      releaseCounts = await readGroupReleaseCounts(kv, projectId, group.id);
      if (triage.releaseFirstSeen === undefined) {
        // Resolved in before it was seen: its first seen as known since,
        // kept when its counters were deleted.
        if (!kept.has(resolvedIn)) {
          kept.set(resolvedIn, await knownFirstSeen(kv, projectId, resolvedIn));
        }
        const time = kept.get(resolvedIn);
        if (time != null) triage = { ...triage, releaseFirstSeen: time };
      }
    }
    out.set(group.id, {
      status: statusOf(triage, group.count, {
        now,
        ...(releaseCounts ? { releaseCounts } : {}),
        ...(firstSeen ? { firstSeen } : {}),
      }),
      triage,
      assignee: triage?.assignee ?? null,
    });
  }
  return out;
}

/**
 * Whether `untilMs` may end an ignore set at `now`: a time after now, at
 * most {@linkcode MAX_IGNORE_DAYS} days ahead (so that it is a real date).
 *
 * @example
 * ```ts
 * ignoreUntilFits(Date.now() + 86_400_000, Date.now()); // true
 * ```
 */
export function ignoreUntilFits(untilMs: number, now: number): boolean {
  return Number.isFinite(untilMs) && untilMs > now &&
    untilMs <= now + MAX_IGNORE_DAYS * DAY_MS;
}

/** What a refused ignore until a date expects, for the messages. */
export const IGNORE_UNTIL_EXPECTED = `expected a time after now and at most ${
  MAX_IGNORE_DAYS.toLocaleString("en-US")
} days (100 years) ahead`;

function checkChange(change: TriageChange, now: number): void {
  if (change.action === "resolve" && change.inRelease !== undefined) {
    const r = change.inRelease.trim();
    if (r === "" || r.length > MAX_RELEASE_CHARS) {
      throw new InvalidValueError(
        `Cannot resolve in release "${
          r.slice(0, 40)
        }": expected 1 to ${MAX_RELEASE_CHARS} characters`,
      );
    }
  }
  if (change.action === "ignore" && change.untilCount !== undefined) {
    const n = change.untilCount;
    if (!Number.isInteger(n) || n < 1 || n > MAX_UNTIL_COUNT) {
      throw new InvalidValueError(
        `Cannot ignore until count "${n}": expected a whole number from 1 to ${MAX_UNTIL_COUNT}`,
      );
    }
  }
  if (change.action === "ignore" && change.untilMs !== undefined) {
    const until = new Date(change.untilMs);
    if (!ignoreUntilFits(change.untilMs, now)) {
      throw new InvalidValueError(
        `Cannot ignore until ${
          Number.isNaN(until.getTime()) ? "that date" : until.toISOString()
        }: ${IGNORE_UNTIL_EXPECTED}`,
      );
    }
  }
}

/**
 * The stored triage after `change`, from `prior`, the group's count and,
 * for a resolve in a release, the count's versionstamp and the release's
 * first seen (`null` when not seen yet).
 */
function applyChange(
  prior: Triage | null,
  change: TriageChange,
  base: { at: number; by: string; count: number },
  resolved: { countVersion: string; releaseFirstSeen: number | null },
  assignee: string | null | undefined,
): Triage {
  const kept = prior?.assignee === undefined
    ? {}
    : { assignee: prior.assignee };
  switch (change.action) {
    case "resolve":
      return {
        state: "resolved",
        ...base,
        ...(change.inRelease === undefined ? {} : {
          inRelease: change.inRelease.trim(),
          ...(resolved.releaseFirstSeen === null
            ? {}
            : { releaseFirstSeen: resolved.releaseFirstSeen }),
          countVersion: resolved.countVersion,
        }),
        ...kept,
      };
    case "ignore":
      return {
        state: "ignored",
        ...base,
        ...(change.untilMs === undefined ? {} : { untilMs: change.untilMs }),
        ...(change.untilCount === undefined
          ? {}
          : { untilCount: change.untilCount }),
        ...kept,
      };
    case "reopen":
      return { state: "unresolved", ...base, ...kept };
    case "assign": {
      const { assignee: _, ...rest } = prior ??
        { state: "unresolved" as const, ...base };
      return assignee ? { ...rest, assignee } : rest;
    }
  }
}

/**
 * The account an assign change names, as stored (`undefined` for another
 * change, `null` to unassign). Throws `InvalidValueError` for an email of
 * no account that may read the project.
 */
async function assigneeOf(
  kv: Deno.Kv,
  projectId: string,
  change: TriageChange,
): Promise<string | null | undefined> {
  if (change.action !== "assign") return undefined;
  if (change.email === null) return null;
  const user = await getUser(kv, change.email);
  // One answer whether the account is missing or may not read the
  // project: a member learns nothing of other projects' accounts.
  if (
    user === null ||
    (user.role !== "admin" && !user.projects.includes(projectId))
  ) {
    throw new InvalidValueError(
      `Cannot assign to "${
        change.email.slice(0, 100)
      }": no account that may read this project has that email`,
    );
  }
  return user.email;
}

/** What {@linkcode changeTriage} did. */
export interface TriageResult {
  group: ErrorGroup;
  triage: Triage;
  /** The audit detail of the change. */
  detail: string;
}

/**
 * Changes the triage of the group of `fingerprint`, checked on the group's
 * count so that no entry falls between the counts it records and the
 * change. Throws {@linkcode GroupNotFoundError}, or
 * `InvalidValueError` for a value out of range or an assignee who is no
 * account. The caller records the audit event (`detail`).
 *
 * @example
 * ```ts
 * await changeTriage(kv, projectId, fp, { action: "resolve", inRelease: "1.4.0" }, { now: Date.now(), actor: "cli" });
 * ```
 */
export async function changeTriage(
  kv: Deno.Kv,
  projectId: string,
  fingerprint: string,
  change: TriageChange,
  options: { now: number; actor: string },
): Promise<TriageResult> {
  checkChange(change, options.now);
  const group = await findGroup(kv, projectId, fingerprint, options.now);
  if (group === null) {
    throw new GroupNotFoundError(
      `Cannot find error group "${fingerprint}" in project "${projectId}"`,
    );
  }
  const assignee = await assigneeOf(kv, projectId, change);
  const inRelease = change.action === "resolve"
    ? change.inRelease?.trim()
    : undefined;
  const releaseFirstSeen = inRelease === undefined
    ? null
    : await knownFirstSeen(kv, projectId, inRelease);
  // Built before the commit: a change is stored only with its audit detail.
  const detail = `${group.fingerprint}: ${describe(change)}`;
  const triageKey = errorGroupTriageKey(projectId, group.id);
  const countKey = errorGroupCountKey(projectId, group.id);
  for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
    const [row, counted, stored] = await kv.getMany([
      triageKey,
      countKey,
      errorGroupKey(projectId, group.id),
    ]);
    if (stored!.versionstamp === null) {
      // Deleted since it was found (past the retention or the bound).
      throw new GroupNotFoundError(
        `Cannot find error group "${fingerprint}" in project "${projectId}"`,
      );
    }
    const count = counted!.value instanceof Deno.KvU64
      ? Number(counted!.value.value)
      : group.count;
    const prior = decodeJson<Triage>(row!.value);
    const triage = applyChange(
      prior,
      change,
      { at: options.now, by: options.actor, count },
      { countVersion: counted!.versionstamp ?? "", releaseFirstSeen },
      assignee,
    );
    const op = kv.atomic().check(row!, counted!, stored!)
      .set(triageKey, encodeJson(triage));
    if (inRelease !== undefined && releaseFirstSeen === null) {
      awaitRelease(op, projectId, inRelease);
    }
    const result = await op.commit();
    if (result.ok) return { group: { ...group, count }, triage, detail };
  }
  throw new Error(
    `Cannot change error group "${fingerprint}": its entries kept arriving`,
  );
}

/** A change in words, as the audit log shows it. */
function describe(change: TriageChange): string {
  switch (change.action) {
    case "resolve":
      return change.inRelease === undefined
        ? "resolved"
        : `resolved in release ${change.inRelease.trim()}`;
    case "ignore":
      return change.untilMs !== undefined
        ? `ignored until ${new Date(change.untilMs).toISOString()}`
        : change.untilCount !== undefined
        ? `ignored until ${change.untilCount} more entries`
        : "ignored";
    case "reopen":
      return "reopened";
    case "assign":
      return change.email === null
        ? "unassigned"
        : `assigned to ${change.email}`;
  }
}

/** A group with its triage, as the errors list shows it. */
export interface TriagedGroup {
  group: ErrorGroup;
  triage: GroupTriage;
}

/**
 * Which statuses a filter shows: `unresolved` (the default of the errors
 * page) shows the groups that need someone, regressed ones included;
 * `all` shows every group.
 */
export const STATUS_FILTERS = [...GROUP_STATUSES, "all"] as const;
export type StatusFilter = typeof STATUS_FILTERS[number];

function shows(filter: StatusFilter, status: GroupStatus): boolean {
  if (filter === "all") return true;
  if (filter === "unresolved") {
    return status === "unresolved" || status === "regressed";
  }
  return status === filter;
}

/**
 * A page of a project's groups whose status the filter shows, the most
 * recently seen first: pages of the listing by last seen are read until
 * `limit` groups show, or {@linkcode MAX_LIST_GROUPS} were read. `next` is
 * the cursor of the page after, `null` at the end.
 *
 * @example
 * ```ts
 * const { groups } = await listTriagedGroups(kv, projectId, Date.now(), { status: "unresolved", limit: 50 });
 * ```
 */
export async function listTriagedGroups(
  kv: Deno.Kv,
  projectId: string,
  now: number,
  options: {
    status: StatusFilter;
    limit: number;
    after?: string;
    retentionMs?: number;
  },
): Promise<{ groups: TriagedGroup[]; next: string | null }> {
  const out: TriagedGroup[] = [];
  let after = options.after;
  let read = 0;
  for (;;) {
    const want = Math.min(MAX_LIST_GROUPS, Math.max(options.limit, 50));
    const page = await listGroups(kv, projectId, now, {
      limit: want,
      ...(after === undefined ? {} : { after }),
      ...(options.retentionMs === undefined
        ? {}
        : { retentionMs: options.retentionMs }),
    });
    const triage = await readTriage(kv, projectId, page, now);
    for (const group of page) {
      const t = triage.get(group.id)!;
      if (!shows(options.status, t.status)) continue;
      out.push({ group, triage: t });
      if (out.length === options.limit) {
        return { groups: out, next: groupCursor(group) };
      }
    }
    read += page.length;
    if (page.length < want || read >= MAX_LIST_GROUPS) {
      return {
        groups: out,
        next: page.length < want ? null : groupCursor(page.at(-1)!),
      };
    }
    after = groupCursor(page.at(-1)!);
  }
}

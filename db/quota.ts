/**
 * Quotas and spike protection (docs/privacy.md#quotas): which of a batch's
 * accepted entries a project stores.
 *
 * A quota caps the entries stored per UTC day and per minute. It holds
 * exactly across processes sharing one database: before the consumer's
 * result commit, {@linkcode admitEntries} decides how many of the batch's
 * entries the project may store in a small commit of its own, guarded by
 * the versionstamp of the project's state (`quota_state/<projectId>`) and
 * by the batch's pending key, and records that decision under
 * `quota_grants/<batchId>/<projectId>`. Whoever processes the batch (a
 * redelivery, another process, a retry) finds the grant and stores the
 * same entries; the result commit deletes it. A processor that comes to a
 * batch already committed (its pending key gone or changed) grants nothing,
 * and its own result commit then fails on that key. A group of batches
 * committed together gets a grant per batch, made in one small commit, so
 * a batch of a group that falls apart finds its own. Two processes racing
 * for one project's state retry the small commit, never the batch. The
 * result commit itself holds no check to spare for this.
 *
 * Spike protection keeps 1 in k `info` and `warning` entries while the
 * project's rate (entries accepted in the current or the previous minute,
 * per hour) passes a multiple of its hourly average over the 7 days before
 * today; errors and every other level are never sampled. The first entry
 * of an error group never seen before is stored even over a quota or in a
 * spike, so a spike cannot hide a new error; error groups count every
 * accepted entry, stored or not.
 *
 * @module
 */
import { DAY_MS, type LogRecord } from "../domain/entry.ts";
import { projectKey, quotaGrantKey, quotaStateKey, usageKey } from "./keys.ts";
import { decodeJson, encodeJson, getManyChunked } from "./kv.ts";
import { type Project, updateProject } from "./projects.ts";
import { InvalidValueError } from "./validation.ts";
import type { Quota, SpikeProtection } from "../domain/quota.ts";

export type { Quota, SpikeProtection };

/** Largest per-day quota. */
export const MAX_QUOTA_PER_DAY = 1_000_000_000;
/** Largest per-minute quota. */
export const MAX_QUOTA_PER_MINUTE = 10_000_000;
/** Bounds of a spike's multiple of the hourly average. */
export const MIN_SPIKE_MULTIPLE = 2;
export const MAX_SPIKE_MULTIPLE = 1_000;
/** Bounds of k in "keep 1 in k". */
export const MIN_SPIKE_KEEP = 2;
export const MAX_SPIKE_KEEP = 1_000;
/**
 * Hourly average a spike is measured against at least, so that a project
 * with little or no history is not sampled from its first entries.
 */
export const SPIKE_MIN_HOURLY = 600;
/** Days of history of the hourly average. */
export const SPIKE_HISTORY_DAYS = 7;
/** How long a grant waits for its result commit (a batch moved aside). */
const GRANT_TTL_MS = DAY_MS;
/** Attempts at the small commit before the batch is left to a retry. */
const MAX_GRANT_ATTEMPTS = 100;
const MINUTE_MS = 60_000;
const HOUR_MS = 3_600_000;

/** Levels spike protection samples. */
export const SAMPLED_LEVELS: readonly string[] = ["info", "warning"];

function validCount(name: string, value: number, max: number): number {
  if (!Number.isInteger(value) || value < 1 || value > max) {
    throw new InvalidValueError(
      `Cannot set ${name} to "${value}": expected a whole number from 1 to ${max}`,
    );
  }
  return value;
}

/**
 * Sets (or, with `null`, removes) a project's quota; each bound is
 * validated first.
 *
 * @example
 * ```ts
 * await setQuota(kv, projectId, { perDay: 100_000, perMinute: 1_000 });
 * ```
 */
export async function setQuota(
  kv: Deno.Kv,
  projectId: string,
  quota: Quota | null,
): Promise<Project> {
  const next: Quota = {};
  if (quota?.perDay !== undefined) {
    next.perDay = validCount(
      "the per-day quota",
      quota.perDay,
      MAX_QUOTA_PER_DAY,
    );
  }
  if (quota?.perMinute !== undefined) {
    next.perMinute = validCount(
      "the per-minute quota",
      quota.perMinute,
      MAX_QUOTA_PER_MINUTE,
    );
  }
  return await updateProject(kv, projectId, (project) => {
    if (next.perDay === undefined && next.perMinute === undefined) {
      delete project.quota;
    } else project.quota = next;
    return project;
  });
}

/**
 * Changes a project's quota bound by bound, in one update of the project:
 * a bound given a number is set (validated first), one given `null` removed,
 * one left out kept as it is.
 *
 * @example
 * ```ts
 * await changeQuota(kv, projectId, { perMinute: 1_000 }); // per-day kept
 * ```
 */
export async function changeQuota(
  kv: Deno.Kv,
  projectId: string,
  change: { perDay?: number | null; perMinute?: number | null },
): Promise<Project> {
  const { perDay, perMinute } = change;
  if (typeof perDay === "number") {
    validCount("the per-day quota", perDay, MAX_QUOTA_PER_DAY);
  }
  if (typeof perMinute === "number") {
    validCount("the per-minute quota", perMinute, MAX_QUOTA_PER_MINUTE);
  }
  return await updateProject(kv, projectId, (project) => {
    const next: Quota = { ...project.quota };
    if (perDay === null) delete next.perDay;
    else if (perDay !== undefined) next.perDay = perDay;
    if (perMinute === null) delete next.perMinute;
    else if (perMinute !== undefined) next.perMinute = perMinute;
    if (next.perDay === undefined && next.perMinute === undefined) {
      delete project.quota;
    } else project.quota = next;
    return project;
  });
}

/** Sets (or, with `null`, turns off) a project's spike protection. */
export async function setSpikeProtection(
  kv: Deno.Kv,
  projectId: string,
  spike: SpikeProtection | null,
): Promise<Project> {
  if (spike) {
    if (
      !Number.isFinite(spike.multiple) || spike.multiple < MIN_SPIKE_MULTIPLE ||
      spike.multiple > MAX_SPIKE_MULTIPLE
    ) {
      throw new InvalidValueError(
        `Cannot set the spike multiple to "${spike.multiple}": expected a number from ${MIN_SPIKE_MULTIPLE} to ${MAX_SPIKE_MULTIPLE}`,
      );
    }
    if (
      !Number.isInteger(spike.keep) || spike.keep < MIN_SPIKE_KEEP ||
      spike.keep > MAX_SPIKE_KEEP
    ) {
      throw new InvalidValueError(
        `Cannot keep 1 in "${spike.keep}": expected a whole number from ${MIN_SPIKE_KEEP} to ${MAX_SPIKE_KEEP}`,
      );
    }
  }
  return await updateProject(kv, projectId, (project) => {
    if (spike) project.spike = { multiple: spike.multiple, keep: spike.keep };
    else delete project.spike;
    return project;
  });
}

/** `quota_state/<projectId>`: the current day and minute of a project. */
export interface QuotaState {
  /** Start of the UTC day counted, Unix ms. */
  day: number;
  /** Entries stored that day under the quota. */
  dayStored: number;
  /** Start of the minute counted, Unix ms. */
  minute: number;
  minuteStored: number;
  /** Entries accepted that minute (stored, sampled or over the quota). */
  minuteAccepted: number;
  /** Entries accepted the minute before. */
  lastMinuteAccepted: number;
  /** Hourly average accepted over the 7 days before `day`; -1: not read. */
  hourly: number;
}

/** `quota_grants/<batchId>/<projectId>`: what one batch may store. */
interface Grant {
  /** Entries it stores under the quota. */
  stored: number;
  /** 1 in `keep` sampled entries is stored (1: no spike). */
  keep: number;
  /** Sampled entries accepted before this batch in the minute. */
  offset: number;
}

/** What {@linkcode admitEntries} decided for a project's entries. */
export interface Admission {
  /** The entries to store, in the order given. */
  stored: LogRecord[];
  overQuota: number;
  sampled: number;
  /** The grants the result commit deletes, when they were made. */
  grants?: Deno.KvKey[];
  /** The state as this batch left it (for usage and tests). */
  state?: QuotaState;
}

/** A batch whose entries {@linkcode admitEntries} decides on. */
export interface GrantedBatch {
  /** Its id: its grant is `quota_grants/<id>/<projectId>`. */
  id: string;
  /**
   * The key its result commit checks, with the versionstamp it was read
   * with (its pending key): the grant's commit checks it too, so a batch
   * another processor committed meanwhile gets no grant.
   */
  guard: { key: Deno.KvKey; versionstamp: string | null };
  /**
   * The ids of its records among those given; left out, the records no
   * other batch names (all of them, for one batch).
   */
  ids?: ReadonlySet<string>;
}

/** Options of {@linkcode admitEntries}. */
export interface AdmitOptions {
  /**
   * The batches of the records, in order: one, or a group committed in one
   * result commit (at most `ATOMIC_MAX_CHECKS` - 2, each a check).
   */
  batches: GrantedBatch[];
  project: Project;
  /** The project record's versionstamp the batch was judged with. */
  versionstamp: string | null;
  /** Accepted entries, in id order. */
  records: LogRecord[];
  /** Ids of entries stored whatever the quota: new error groups' first. */
  free: ReadonlySet<string>;
  /** Unix ms. */
  now: number;
}

/** Whether a project has a quota or spike protection to apply. */
export function hasQuota(project: Project): boolean {
  return project.quota !== undefined || project.spike !== undefined;
}

/** Start of the UTC day of `ms`. */
export function dayOf(ms: number): number {
  return ms - ms % DAY_MS;
}

/**
 * Decides which of `records` a project stores under its quota and spike
 * protection: reads the project's state and each batch's grant, and makes
 * the grants missing in a small commit (see the module doc). Grants
 * nothing when the project record or a batch's guard changed since they
 * were read: the result commit, checked on both, fails. Throws when the
 * project's state kept changing.
 *
 * @example
 * ```ts
 * const { stored, overQuota, sampled, grants } = await admitEntries(kv, options);
 * ```
 */
export async function admitEntries(
  kv: Deno.Kv,
  options: AdmitOptions,
): Promise<Admission> {
  const { project, records } = options;
  if (!hasQuota(project)) return { stored: records, overQuota: 0, sampled: 0 };
  const parts = partsOf(options.batches, records);
  const batches = parts.map((p) => p.batch);
  const grantKeys = batches.map((b) => quotaGrantKey(b.id, project.id));
  const stateKey = quotaStateKey(project.id);
  for (let attempt = 0; attempt < MAX_GRANT_ATTEMPTS; attempt++) {
    const [stateEntry, record, ...rest] = await getManyChunked(kv, [
      stateKey,
      projectKey(project.id),
      ...grantKeys,
      ...batches.map((b) => b.guard.key),
    ]);
    const guards = rest.slice(batches.length);
    // Changed since the batch was judged (the record), or committed by
    // another processor (a guard): the result commit, checked on both,
    // fails; grant nothing now.
    if (
      record!.versionstamp !== options.versionstamp ||
      guards.some((g, i) => g.versionstamp !== batches[i]!.guard.versionstamp)
    ) return { stored: [], overQuota: 0, sampled: 0 };
    const made = rest.slice(0, batches.length)
      .map((e) => decodeJson<Grant>(e.value));
    if (made.every((g) => g !== null)) {
      return { ...applyAll(options, parts, made), grants: grantKeys };
    }
    const state = await advance(
      kv,
      project,
      decodeJson<QuotaState>(stateEntry!.value),
      options.now,
    );
    // The state's check orders every grant of the project: a grant made
    // since the read changed the state too.
    const op = kv.atomic().check(stateEntry!, record!, ...guards);
    const grants = made.map((grant, i) => {
      if (grant) return grant;
      const fresh = decide(options, parts[i]!.records, state);
      op.set(grantKeys[i]!, encodeJson(fresh), { expireIn: GRANT_TTL_MS });
      return fresh;
    });
    op.set(stateKey, encodeJson(state), { expireIn: 2 * DAY_MS });
    if ((await op.commit()).ok) {
      return { ...applyAll(options, parts, grants), grants: grantKeys, state };
    }
  }
  throw new Error(
    `Cannot apply the quota of project "${project.id}": its state kept changing`,
  );
}

/** The records of each batch, in order; batches with none left out. */
function partsOf(
  batches: GrantedBatch[],
  records: LogRecord[],
): { batch: GrantedBatch; records: LogRecord[] }[] {
  const named = (r: LogRecord) => batches.some((b) => b.ids?.has(r.id));
  return batches.map((batch) => ({
    batch,
    records: records.filter((r) => batch.ids ? batch.ids.has(r.id) : !named(r)),
  })).filter((part) => part.records.length > 0);
}

/** The state at `now`: a new day and a new minute start from zero. */
async function advance(
  kv: Deno.Kv,
  project: Project,
  prior: QuotaState | null,
  now: number,
): Promise<QuotaState> {
  const day = dayOf(now);
  const minute = now - now % MINUTE_MS;
  const state: QuotaState = prior ? { ...prior } : {
    day: -1,
    dayStored: 0,
    minute: -1,
    minuteStored: 0,
    minuteAccepted: 0,
    lastMinuteAccepted: 0,
    hourly: -1,
  };
  if (state.day !== day) {
    state.day = day;
    state.dayStored = 0;
    state.hourly = -1;
  }
  // Read once a day, or when spike protection was turned on during it.
  if (project.spike && state.hourly < 0) {
    state.hourly = await hourlyAverage(kv, project.id, day);
  }
  if (state.minute !== minute) {
    state.lastMinuteAccepted = state.minute === minute - MINUTE_MS
      ? state.minuteAccepted
      : 0;
    state.minute = minute;
    state.minuteStored = 0;
    state.minuteAccepted = 0;
  }
  return state;
}

/** Entries accepted per hour over the days before `day` (usage counters). */
async function hourlyAverage(
  kv: Deno.Kv,
  projectId: string,
  day: number,
): Promise<number> {
  const keys = Array.from(
    { length: SPIKE_HISTORY_DAYS },
    (_, i) => usageKey(projectId, day - (i + 1) * DAY_MS, "accepted"),
  );
  let total = 0;
  for (const entry of await kv.getMany<Deno.KvU64[]>(keys)) {
    total += Number(entry.value?.value ?? 0n);
  }
  return total / (SPIKE_HISTORY_DAYS * 24);
}

/**
 * Whether the project is in a spike at `state`'s accepted counts of this
 * minute and the one before.
 */
export function inSpike(
  spike: SpikeProtection | undefined,
  state: QuotaState,
): boolean {
  if (!spike) return false;
  const perHour = Math.max(state.minuteAccepted, state.lastMinuteAccepted) *
    (HOUR_MS / MINUTE_MS);
  return perHour > spike.multiple * Math.max(state.hourly, SPIKE_MIN_HOURLY);
}

/** The grant of a batch's `records`, and `state` advanced past it. */
function decide(
  options: AdmitOptions,
  records: LogRecord[],
  state: QuotaState,
): Grant {
  const { project, free } = options;
  const offset = state.minuteAccepted;
  state.minuteAccepted += records.length;
  const keep = inSpike(project.spike, state) ? project.spike!.keep : 1;
  const wanted = apply(records, free, { stored: Infinity, keep, offset })
    .stored.filter((r) => !free.has(r.id)).length;
  const left = Math.min(
    (project.quota?.perDay ?? Infinity) - state.dayStored,
    (project.quota?.perMinute ?? Infinity) - state.minuteStored,
  );
  const stored = Math.max(0, Math.min(wanted, left));
  state.dayStored += stored;
  state.minuteStored += stored;
  return { stored, keep, offset };
}

/**
 * What the grants of the batches store of `options.records`, in their
 * order.
 */
function applyAll(
  options: AdmitOptions,
  parts: { records: LogRecord[] }[],
  grants: Grant[],
): Admission {
  const kept = new Set<LogRecord>();
  let sampled = 0;
  let overQuota = 0;
  parts.forEach((part, i) => {
    const admitted = apply(part.records, options.free, grants[i]!);
    for (const record of admitted.stored) kept.add(record);
    sampled += admitted.sampled;
    overQuota += admitted.overQuota;
  });
  const stored = options.records.filter((r) => kept.has(r));
  return { stored, overQuota, sampled };
}

/** The entries a grant stores: sampled first, then up to the quota. */
function apply(
  records: LogRecord[],
  free: ReadonlySet<string>,
  grant: Grant,
): Admission {
  const stored: LogRecord[] = [];
  let sampled = 0;
  let overQuota = 0;
  let seen = 0;
  let left = grant.stored;
  for (const record of records) {
    if (free.has(record.id)) {
      stored.push(record);
    } else if (
      grant.keep > 1 && SAMPLED_LEVELS.includes(record.level) &&
      (grant.offset + seen++) % grant.keep !== 0
    ) {
      sampled++;
    } else if (left > 0) {
      stored.push(record);
      left--;
    } else overQuota++;
  }
  return { stored, overQuota, sampled };
}

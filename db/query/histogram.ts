/**
 * Histograms: counts of entries per interval by level over a time range.
 * When the filter is about levels only, whole minutes and hours come from
 * the counters the consumer sums (db/log_counts.ts) and only the partial
 * minutes at the two ends are counted from entries; any other filter
 * counts matching entries (reading only chunks that may match). Counts are
 * exact either way: counters are summed in the commit that stores their
 * entries, and a scan stays exact while merges move entries (scan.ts).
 *
 * Counters outlive entries: they go past the project's longest retention,
 * while retention rules by level delete entries earlier and KV expires a
 * chunk up to an hour before its newest entry's time. So counters answer
 * only from {@linkcode countersFrom} on; older minutes are counted from the
 * chunk columns (db/query/columnar.ts), which hold what is stored.
 *
 * @module
 */
import { COUNT_BUCKET_MS, readLogCounts } from "../log_counts.ts";
import { getProject } from "../projects.ts";
import { levelRetentionMs } from "../retention_rules.ts";
import { STANDARD_LEVELS } from "../../domain/entry.ts";
import { timeBound } from "../../domain/ids.ts";
import {
  type CompiledFilter,
  compileFilter,
  type Filter,
  InvalidQueryError,
} from "./filter.ts";
import { collect, countCollected } from "./columnar.ts";
import { scan } from "./scan.ts";

/** The intervals a histogram chooses from. */
export const HISTOGRAM_INTERVALS_MS = [
  1000,
  5000,
  15_000,
  60_000,
  300_000,
  900_000,
  3_600_000,
  10_800_000,
  21_600_000,
  43_200_000,
  86_400_000,
] as const;
/** Most buckets one histogram returns. */
const MAX_BUCKETS = 5000;

/** Options of {@linkcode histogram}. */
export interface HistogramOptions {
  /** Unix ms, inclusive. */
  since: number;
  /** Unix ms, exclusive. */
  until: number;
  filter?: Filter;
  /** About how many bars. @default {60} */
  buckets?: number;
  /**
   * When counting entry by entry must stop (a reading of `clock`): past it
   * {@linkcode HistogramCutError} is thrown. @default none
   */
  deadline?: number;
  /** @default {performance.now} */
  clock?: () => number;
  /**
   * The time retention is judged by (Unix ms; {@linkcode countersFrom}).
   * @default {Date.now()}
   */
  now?: number;
}

/** Thrown when a histogram's counting reached its deadline before its end. */
export class HistogramCutError extends Error {
  override name = "HistogramCutError";
  constructor() {
    super("Cannot count every bar within the time given");
  }
}

/** Counts per interval, by level. */
export interface Histogram {
  intervalMs: number;
  /** Buckets from the one holding `since` to the one holding `until - 1`. */
  buckets: { start: number; counts: Record<string, number> }[];
}

/**
 * The smallest standard interval that shows `spanMs` in at most about
 * `buckets` bars (one day at most).
 *
 * @example
 * ```ts
 * chooseInterval(7 * 86_400_000, 60); // 10_800_000 (3 h)
 * ```
 */
export function chooseInterval(spanMs: number, buckets = 60): number {
  const ideal = spanMs / Math.max(1, buckets);
  return HISTOGRAM_INTERVALS_MS.find((ms) => ms >= ideal) ??
    HISTOGRAM_INTERVALS_MS.at(-1)!;
}

/**
 * Whether {@linkcode histogram} counts this filter from its per-minute and
 * per-hour counters: it constrains nothing but time and level.
 */
export function countedByCounters(filter: Filter): boolean {
  return !filter.text?.length && !filter.notText?.length &&
    (filter.fields ?? []).every((term) => term.path === "level");
}

/**
 * How far before the edge of a retention counters are not trusted: KV
 * expires a chunk by its first entry's time, and a chunk spans up to an
 * hour, so an entry may go up to an hour before its retention ends.
 */
export const RETENTION_MARGIN_MS = 3_600_000;

/** A custom level that no filter or rule names (none is spelled so). */
const UNNAMED_LEVEL = "\0unnamed";

/**
 * The first minute (Unix ms) from which the counters of the levels
 * `filter` asks for agree with the stored entries at `now`: no retention
 * of those levels, the project's or a rule's, may have deleted an entry
 * received since (less {@linkcode RETENTION_MARGIN_MS}). `-Infinity` when
 * the project has no record (nothing applies a retention to it).
 *
 * @example
 * ```ts
 * // A rule `level<=info 3` (days): counters answer `* | count` for the
 * // last 3 days less an hour, entries before that.
 * const from = await countersFrom(kv, projectId, {}, Date.now());
 * ```
 */
export async function countersFrom(
  kv: Deno.Kv,
  projectId: string,
  filter: Filter,
  now: number,
): Promise<number> {
  const project = await getProject(kv, projectId);
  if (!project) return -Infinity;
  const { levelOk } = compileFilter(filter);
  const levels = new Set<string>([
    ...STANDARD_LEVELS,
    UNNAMED_LEVEL,
    ...(filter.levels ?? []),
    ...(filter.fields ?? []).flatMap((t) =>
      t.path === "level" && "value" in t ? [t.value] : []
    ),
    ...(project.retentionRules ?? []).map((r) => r.level),
  ]);
  let shortest = Infinity;
  for (const level of levels) {
    if (levelOk && !levelOk(level)) continue;
    shortest = Math.min(shortest, levelRetentionMs(project, level));
  }
  if (shortest === Infinity) return -Infinity;
  const minute = COUNT_BUCKET_MS.m;
  return Math.ceil((now - shortest + RETENTION_MARGIN_MS) / minute) * minute;
}

/**
 * Counts a project's entries per interval by level over [since, until).
 *
 * @example
 * ```ts
 * const week = await histogram(kv, projectId, { since: now - 7 * 86_400_000, until: now });
 * ```
 */
export async function histogram(
  kv: Deno.Kv,
  projectId: string,
  options: HistogramOptions,
): Promise<Histogram> {
  const filter = options.filter ?? {};
  const tally = emptyTally(options);
  const { intervalMs, buckets } = tally;
  const since = Math.max(options.since, filter.since ?? -Infinity);
  const until = Math.min(options.until, filter.until ?? Infinity);
  if (since >= until) return { intervalMs, buckets };
  const counting = {
    kv,
    projectId,
    filter: compileFilter(filter),
    tally,
    deadline: options.deadline ?? Infinity,
    clock: options.clock ?? (() => performance.now()),
  };
  if (!countedByCounters(filter) || intervalMs < COUNT_BUCKET_MS.m) {
    await countEntries(counting, since, until);
    return { intervalMs, buckets };
  }
  const now = options.now ?? Date.now();
  const from = Math.min(
    until,
    Math.max(since, await countersFrom(kv, projectId, filter, now)),
  );
  await countFromCounters(counting, from, until);
  if (since < from) await countFromColumns(counting, since, from);
  return { intervalMs, buckets };
}

/**
 * Counts [from, until) from the counters: whole minutes from them, the
 * partial minutes at the ends from the entries.
 */
async function countFromCounters(
  counting: Counting,
  from: number,
  until: number,
) {
  const minute = COUNT_BUCKET_MS.m;
  const m1 = Math.ceil(from / minute) * minute;
  const m2 = Math.floor(until / minute) * minute;
  if (m1 >= m2) {
    await countEntries(counting, from, until);
    return;
  }
  await countEntries(counting, m2, until);
  await countEntries(counting, from, m1);
  await countWholeMinutes(counting, m1, m2);
}

/**
 * Counts [from, to) from the chunk columns (the lines where they do not
 * answer): what is stored, where counters may count entries retention
 * deleted. Throws {@linkcode HistogramCutError} past the deadline.
 */
async function countFromColumns(counting: Counting, from: number, to: number) {
  const { kv, projectId, filter, tally, deadline, clock } = counting;
  const collected = await collect(kv, projectId, {
    filter: compileFilter({ ...filter.filter, since: from, until: to }),
    paths: ["level"],
    budget: {
      ms: deadline === Infinity ? Infinity : Math.max(0, deadline - clock()),
      clock,
    },
  });
  if (collected.searchedTo !== undefined) throw new HistogramCutError();
  countCollected(collected, [
    { kind: "time", ms: tally.intervalMs, label: "" },
    { kind: "field", path: "level" },
  ], (cells, n) => {
    addCount(tally, Date.parse(cells[0] as string), String(cells[1]), n);
  });
}

/** A histogram's buckets being filled: the first starts at `first`. */
interface Tally extends Histogram {
  first: number;
}

/** What the counting steps of one histogram share. */
interface Counting {
  kv: Deno.Kv;
  projectId: string;
  filter: CompiledFilter;
  tally: Tally;
  deadline: number;
  clock: () => number;
}

/**
 * The empty buckets over `options`' range, at the interval chosen for it;
 * throws when the range is not one or needs too many buckets.
 */
function emptyTally(options: HistogramOptions): Tally {
  if (
    !Number.isFinite(options.since) || !Number.isFinite(options.until) ||
    options.until <= options.since
  ) {
    throw new InvalidQueryError(
      `Cannot count entries from ${options.since} to ${options.until}: expected a time range with since before until`,
    );
  }
  const intervalMs = chooseInterval(
    options.until - options.since,
    options.buckets,
  );
  const first = Math.floor(options.since / intervalMs) * intervalMs;
  const count = Math.ceil((options.until - first) / intervalMs);
  if (count > MAX_BUCKETS) {
    throw new InvalidQueryError(
      `Cannot count entries over ${count} buckets: at most ${MAX_BUCKETS}`,
    );
  }
  const buckets = Array.from({ length: count }, (_, i) => ({
    start: first + i * intervalMs,
    counts: {} as Record<string, number>,
  }));
  return { intervalMs, buckets, first };
}

/** Adds `n` entries of `level` to the bucket holding `ms`. */
function addCount(tally: Tally, ms: number, level: string, n: number) {
  const { counts } = tally.buckets[
    Math.floor((ms - tally.first) / tally.intervalMs)
  ]!;
  counts[level] = (counts[level] ?? 0) + n;
}

/** Counts the matching entries received in [from, to), one by one. */
async function countEntries(counting: Counting, from: number, to: number) {
  const { kv, projectId, filter, tally, deadline, clock } = counting;
  let lo = timeBound(from);
  const hi = timeBound(to);
  for (;;) {
    const page = await scan(kv, projectId, {
      order: "oldest",
      lo,
      hi,
      filter,
      limit: 1000,
      ...(deadline === Infinity
        ? {}
        : { budget: { ms: Math.max(0, deadline - clock()), clock } }),
    });
    if (page.resume !== undefined) throw new HistogramCutError();
    for (const r of page.records) addCount(tally, r.receivedAt, r.level, 1);
    if (!page.more) return;
    lo = page.records.at(-1)!.id + "\0";
  }
}

/**
 * Counts [m1, m2), whole minutes, from the counters: the whole hours in it
 * from the hourly ones when the interval is an hour or more, the rest from
 * the per-minute ones.
 */
async function countWholeMinutes(counting: Counting, m1: number, m2: number) {
  const hour = COUNT_BUCKET_MS.h;
  const h1 = Math.ceil(m1 / hour) * hour;
  const h2 = Math.floor(m2 / hour) * hour;
  if (counting.tally.intervalMs >= hour && h1 < h2) {
    await countCounters(counting, "m", m1, h1);
    await countCounters(counting, "h", h1, h2);
    await countCounters(counting, "m", h2, m2);
  } else {
    await countCounters(counting, "m", m1, m2);
  }
}

/** Adds the counters of `resolution` in [from, to) of the levels matched. */
async function countCounters(
  counting: Counting,
  resolution: "m" | "h",
  from: number,
  to: number,
) {
  const { kv, projectId, filter, tally } = counting;
  for (const c of await readLogCounts(kv, projectId, resolution, from, to)) {
    if (filter.levelOk === null || filter.levelOk(c.level)) {
      addCount(tally, c.start, c.level, c.count);
    }
  }
}

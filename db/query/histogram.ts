/**
 * Histograms: counts of entries per interval by level over a time range.
 * When the filter is about levels only, whole minutes and hours come from
 * the counters the consumer sums (db/log_counts.ts) and only the partial
 * minutes at the two ends are counted from entries; any other filter
 * counts matching entries (reading only chunks that may match). Counts are
 * exact either way: counters are summed in the commit that stores their
 * entries, and a scan stays exact while merges move entries (scan.ts).
 *
 * @module
 */
import { COUNT_BUCKET_MS, readLogCounts } from "../log_counts.ts";
import { timeBound } from "../../domain/ids.ts";
import {
  type CompiledFilter,
  compileFilter,
  type Filter,
  InvalidQueryError,
} from "./filter.ts";
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
  const minute = COUNT_BUCKET_MS.m;
  const m1 = Math.ceil(since / minute) * minute;
  const m2 = Math.floor(until / minute) * minute;
  if (!countedByCounters(filter) || intervalMs < minute || m1 >= m2) {
    await countEntries(counting, since, until);
  } else {
    await countEntries(counting, since, m1);
    await countEntries(counting, m2, until);
    await countWholeMinutes(counting, m1, m2);
  }
  return { intervalMs, buckets };
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

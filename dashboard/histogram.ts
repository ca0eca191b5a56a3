/**
 * The explorer's histogram within a time budget. A filter on levels and
 * time alone is counted from the per-minute and per-hour counters by one
 * `histogram` call of the query module: a few KV reads whatever the range.
 * Any other filter (words, fields) can only be counted from the matching
 * entries, and a common word over a week matches hundreds of thousands: so
 * bars are counted newest first, each exactly, while the budget lasts, and
 * the older ones are left uncounted and shown so. The newest bar is always
 * counted.
 *
 * @module
 */
import {
  type Cell,
  chooseInterval,
  countedByCounters,
  type Filter,
  type Histogram,
  HistogramCutError,
  QUERY_BUDGET_MS,
  type Reads,
} from "./source.ts";

/**
 * Server time an explorer page may have taken (from `startedAt`) before
 * the histogram of a word or field query stops counting older bars: with
 * the list read first and the page rendered after, the page stays within
 * 300 ms on the benchmark store (BENCHMARKS.md#dashboard).
 */
export const HISTOGRAM_BUDGET_MS = 200;

/** A histogram whose older bars may be uncounted. */
export interface ExplorerHistogram extends Histogram {
  /**
   * Start of the oldest bar counted when older bars were left uncounted
   * (`until` when none was); `null` when every bar was counted.
   */
  countedFrom: number | null;
  /**
   * Split by a field rather than by level: the field, and the names the
   * counts are keyed by, bottom of the stack first (its top values, then
   * {@linkcode OTHER}).
   */
  split?: { field: string; series: string[] };
}

/** Values of the split field drawn each in its own colour. */
export const SPLIT_SERIES = 5;
/** The series of every value past the top {@linkcode SPLIT_SERIES}. */
export const OTHER = "other";
/** The series of entries without the split field. */
export const NONE = "(none)";

/** Options of {@linkcode explorerHistogram}. */
export interface ExplorerHistogramOptions {
  /** Unix ms, inclusive. */
  since: number;
  /** Unix ms, exclusive. */
  until: number;
  filter: Filter;
  /** Time after which older bars are left uncounted. @default {HISTOGRAM_BUDGET_MS} */
  budgetMs?: number;
  /** Clock of the budget, in ms. @default {performance.now} */
  clock?: () => number;
  /** Clock reading the budget counts from. @default now */
  startedAt?: number;
}

/** The bars over [since, until), each at its interval's start, uncounted. */
function emptyBars(since: number, until: number) {
  const intervalMs = chooseInterval(until - since);
  const first = Math.floor(since / intervalMs) * intervalMs;
  const count = Math.max(0, Math.ceil((until - first) / intervalMs));
  const buckets = Array.from({ length: count }, (_, i) => ({
    start: first + i * intervalMs,
    counts: {} as Record<string, number>,
  }));
  return { intervalMs, first, buckets };
}

/**
 * Counts a project's entries matching `filter` per bar over [since, until),
 * by level, within the time budget.
 *
 * @example
 * ```ts
 * const chart = await explorerHistogram(localReads(kv), projectId, { since, until, filter });
 * if (chart.countedFrom !== null) console.log("older bars not counted");
 * ```
 */
export async function explorerHistogram(
  reads: Reads,
  projectId: string,
  options: ExplorerHistogramOptions,
): Promise<ExplorerHistogram> {
  const { since, until, filter } = options;
  const clock = options.clock ?? (() => performance.now());
  const budgetMs = options.budgetMs ?? HISTOGRAM_BUDGET_MS;
  if (countedByCounters(filter)) {
    // Counters answer at once; minutes past a retention rule's are counted
    // from the entries, within a page's budget, else bar by bar below.
    try {
      return {
        ...await reads.histogram(projectId, {
          since,
          until,
          filter,
          clock,
          deadline: clock() + Math.max(budgetMs, QUERY_BUDGET_MS),
        }),
        countedFrom: null,
      };
    } catch (error) {
      if (!(error instanceof HistogramCutError)) throw error;
    }
  }
  const counting = clock();
  const deadline = (options.startedAt ?? counting) + budgetMs;
  const { intervalMs, first, buckets } = emptyBars(since, until);
  // Bars are counted newest first in groups that double while the time per
  // bar so far says the next group fits in what is left of the budget: few
  // calls when matches are sparse, a stop in time when they are not.
  let next = buckets.length;
  let size = 1;
  while (next > 0) {
    let n = Math.min(size, next);
    if (next < buckets.length) {
      const at = clock();
      const perBarMs = (at - counting) / (buckets.length - next);
      n = Math.min(n, Math.floor((deadline - at) / Math.max(perBarMs, 1e-3)));
      if (n < 1) break;
    }
    const from = next - n;
    // `buckets: n` makes the interval at most this chart's, and the standard
    // intervals divide one another, so each part falls within one bar.
    let part;
    try {
      part = await reads.histogram(projectId, {
        since: Math.max(since, buckets[from]!.start),
        until: Math.min(until, buckets[next - 1]!.start + intervalMs),
        filter,
        buckets: n,
        // The newest bar is counted whatever is left, within a page's
        // budget of its own.
        deadline: next === buckets.length
          ? Math.max(deadline, counting + QUERY_BUDGET_MS)
          : deadline,
        clock,
      });
    } catch (error) {
      // Out of time within these bars: they are left uncounted.
      if (error instanceof HistogramCutError) break;
      throw error;
    }
    for (const { start, counts } of part.buckets) {
      const bucket = buckets[Math.floor((start - first) / intervalMs)]!;
      for (const [level, count] of Object.entries(counts)) {
        bucket.counts[level] = (bucket.counts[level] ?? 0) + count;
      }
    }
    next = from;
    size *= 2;
  }
  const countedFrom = next === buckets.length
    ? until
    : next > 0
    ? buckets[next]!.start
    : null;
  return { intervalMs, buckets, countedFrom };
}

/** Options of {@linkcode splitHistogram}. */
export interface SplitHistogramOptions {
  /** Unix ms, inclusive. */
  since: number;
  /** Unix ms, exclusive. */
  until: number;
  filter: Filter;
  /** The field whose top values split the bars. */
  field: string;
  /** Time it may spend reading. @default {HISTOGRAM_BUDGET_MS} */
  budgetMs?: number;
  /** Clock of the budget, in ms. @default {performance.now} */
  clock?: () => number;
}

/** A cell as the name of a series. */
function seriesName(cell: Cell): string {
  return cell === null ? NONE : String(cell);
}

/**
 * Counts a project's entries matching `filter` per bar over [since, until),
 * split by the {@linkcode SPLIT_SERIES} most frequent values of `field` over
 * the range plus {@linkcode OTHER}: one aggregation, `count by (time …,
 * field)`, newest first within the budget; bars older than what it reached
 * are left uncounted.
 *
 * @example
 * ```ts
 * const chart = await splitHistogram(localReads(kv), projectId, { since, until, filter, field: "context.service" });
 * chart.split!.series; // ["api", "worker", "other"]
 * ```
 */
export async function splitHistogram(
  reads: Reads,
  projectId: string,
  options: SplitHistogramOptions,
): Promise<ExplorerHistogram> {
  const { since, until, field } = options;
  const { intervalMs, first, buckets } = emptyBars(since, until);
  const answer = await reads.aggregate(projectId, {
    filter: {
      ...options.filter,
      since: Math.max(options.filter.since ?? since, since),
      until: Math.min(options.filter.until ?? until, until),
    },
    pipe: {
      op: "count",
      by: [
        { kind: "time", ms: intervalMs, label: "bar" },
        { kind: "field", path: field },
      ],
      column: 0,
    },
    budget: {
      ms: options.budgetMs ?? HISTOGRAM_BUDGET_MS,
      ...(options.clock ? { clock: options.clock } : {}),
    },
  });
  const totals = new Map<string, number>();
  for (const row of answer.rows) {
    const name = seriesName(row[field] ?? null);
    totals.set(name, (totals.get(name) ?? 0) + (row.count as number));
  }
  const top = [...totals].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1))
    .slice(0, SPLIT_SERIES).map(([name]) => name);
  const series = totals.size > top.length ? [...top, OTHER] : top;
  for (const row of answer.rows) {
    const start = Date.parse(row.time as string);
    const bucket = buckets[Math.floor((start - first) / intervalMs)];
    if (!bucket) continue;
    const name = seriesName(row[field] ?? null);
    const key = top.includes(name) ? name : OTHER;
    bucket.counts[key] = (bucket.counts[key] ?? 0) + (row.count as number);
  }
  let countedFrom: number | null = null;
  if (answer.searchedTo !== undefined) {
    // Bars wholly counted only: the one the search stopped in is not.
    const from = Math.ceil((answer.searchedTo - first) / intervalMs);
    countedFrom = first +
      Math.min(buckets.length - 1, Math.max(0, from)) * intervalMs;
  }
  return { intervalMs, buckets, countedFrom, split: { field, series } };
}

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
  chooseInterval,
  countedByCounters,
  type Filter,
  type Histogram,
  histogram,
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
   * Start of the oldest bar counted when older bars were left uncounted;
   * `null` when every bar was counted.
   */
  countedFrom: number | null;
}

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

/**
 * Counts a project's entries matching `filter` per bar over [since, until),
 * by level, within the time budget.
 *
 * @example
 * ```ts
 * const chart = await explorerHistogram(kv, projectId, { since, until, filter });
 * if (chart.countedFrom !== null) console.log("older bars not counted");
 * ```
 */
export async function explorerHistogram(
  kv: Deno.Kv,
  projectId: string,
  options: ExplorerHistogramOptions,
): Promise<ExplorerHistogram> {
  const { since, until, filter } = options;
  if (countedByCounters(filter)) {
    return {
      ...await histogram(kv, projectId, { since, until, filter }),
      countedFrom: null,
    };
  }
  const clock = options.clock ?? (() => performance.now());
  const budgetMs = options.budgetMs ?? HISTOGRAM_BUDGET_MS;
  const counting = clock();
  const deadline = (options.startedAt ?? counting) + budgetMs;
  const intervalMs = chooseInterval(until - since);
  const first = Math.floor(since / intervalMs) * intervalMs;
  const count = Math.max(0, Math.ceil((until - first) / intervalMs));
  const buckets = Array.from({ length: count }, (_, i) => ({
    start: first + i * intervalMs,
    counts: {} as Record<string, number>,
  }));
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
    const part = await histogram(kv, projectId, {
      since: Math.max(since, buckets[from]!.start),
      until: Math.min(until, buckets[next - 1]!.start + intervalMs),
      filter,
      buckets: n,
    });
    for (const { start, counts } of part.buckets) {
      const bucket = buckets[Math.floor((start - first) / intervalMs)]!;
      for (const [level, count] of Object.entries(counts)) {
        bucket.counts[level] = (bucket.counts[level] ?? 0) + count;
      }
    }
    next = from;
    size *= 2;
  }
  const countedFrom = next > 0 ? buckets[next]!.start : null;
  return { intervalMs, buckets, countedFrom };
}

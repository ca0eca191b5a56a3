/**
 * What a piece of work costs in memory: the largest resident set size seen
 * while it runs, for the suites that bound it.
 *
 * @module
 */

/** Milliseconds between two samples of the resident set size. */
const SAMPLE_MS = 2;

/**
 * Runs `work` and gives its result with the largest RSS seen while it ran,
 * sampled every few milliseconds and once more when it ends.
 *
 * @example
 * ```ts
 * const before = Deno.memoryUsage().rss;
 * const [html, peak] = await peakRss(() => fetchPage(path));
 * assert.ok(peak - before < 64 * 1024 * 1024);
 * ```
 */
export async function peakRss<T>(work: () => Promise<T>): Promise<[T, number]> {
  let peak = Deno.memoryUsage().rss;
  const timer = setInterval(() => {
    peak = Math.max(peak, Deno.memoryUsage().rss);
  }, SAMPLE_MS);
  try {
    const result = await work();
    peak = Math.max(peak, Deno.memoryUsage().rss);
    return [result, peak];
  } finally {
    clearInterval(timer);
  }
}

/**
 * Timing shared by the benchmarks that repeat a measurement: the median of
 * a series, and a run timed once cold ("first") and then again for the
 * median.
 *
 * @module
 */

/**
 * The middle value of `values` (the upper one of an even count), 0 for none.
 *
 * @example
 * ```ts
 * median([3, 1, 2]); // 2
 * ```
 */
export function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? 0;
}

/**
 * The `q` quantile of `values` (the smallest value at or above that share),
 * in their unit.
 *
 * @example
 * ```ts
 * quantile([5, 1, 3, 2], 0.5); // 2
 * ```
 */
export function quantile(values: number[], q: number): number {
  const sorted = [...values].sort((x, y) => x - y);
  return sorted[Math.min(sorted.length - 1, Math.ceil(sorted.length * q) - 1)]!;
}

/**
 * Runs `run` once, timed ("first": a fresh handle, nothing cached), then
 * `runs` more times for the median of their times. Answers what the first
 * run gave. `clock` reads milliseconds (tests script it).
 *
 * @example
 * ```ts
 * const { firstMs, medianMs } = await timeRuns(() => queryLogs(kv, id, {}), 5);
 * ```
 */
export async function timeRuns<T>(
  run: () => Promise<T>,
  runs: number,
  clock: () => number = () => performance.now(),
): Promise<{ first: T; firstMs: number; medianMs: number }> {
  const timed = async (): Promise<[number, T]> => {
    const began = clock();
    const value = await run();
    return [clock() - began, value];
  };
  const [firstMs, first] = await timed();
  const times: number[] = [];
  for (let i = 0; i < runs; i++) times.push((await timed())[0]);
  return { first, firstMs, medianMs: median(times) };
}

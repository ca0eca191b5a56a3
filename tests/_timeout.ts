/**
 * A bound on every wait of the tests: a test that awaits an event fails with
 * a message naming what it waited for, rather than hanging.
 *
 * @module
 */

/**
 * Settles like `p`, or rejects after `ms` milliseconds naming `what`.
 *
 * @example
 * ```ts
 * const res = await within(5000, "the answer", fetch(url));
 * ```
 */
export async function within<T>(
  ms: number,
  what: string,
  p: Promise<T>,
): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    return await Promise.race([
      p,
      new Promise<never>((_, reject) => {
        timer = setTimeout(
          () => reject(new Error(`Timed out after ${ms} ms: ${what}`)),
          ms,
        );
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * A bound on every wait of the tests: a test that awaits an event fails with
 * a message naming what it waited for, rather than hanging.
 *
 * @module
 */
import { withTimeout } from "./harness.ts";

/**
 * Settles like `p`, or rejects after `ms` milliseconds naming `what`: the
 * suite's {@linkcode withTimeout} with the bound and the name first, which
 * reads better around a long expression.
 *
 * @example
 * ```ts
 * const res = await within(5000, "the answer", fetch(url));
 * ```
 */
export function within<T>(
  ms: number,
  what: string,
  p: Promise<T>,
): Promise<T> {
  return withTimeout(p, ms, what);
}

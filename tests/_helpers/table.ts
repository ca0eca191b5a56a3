/**
 * Table-driven assertions: one row an input and the output it must give.
 *
 * @module
 */
import assert from "node:assert/strict";

/**
 * Asserts that `fn` gives each row's output for its input, naming the input
 * when it does not.
 *
 * @example
 * ```ts
 * assertEachGives(Math.abs, [[-1, 1], [2, 2]]);
 * ```
 */
export function assertEachGives<I, O>(
  fn: (input: I) => O,
  rows: [I, O][],
): void {
  for (const [input, output] of rows) {
    assert.deepEqual(fn(input), output, String(input));
  }
}

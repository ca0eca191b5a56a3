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

/**
 * Checks each row in a step of its own, named `input → output`, that `fn`
 * gives the row's output for its input: a long table reports every row that
 * fails, not only the first.
 *
 * @example
 * ```ts
 * await stepEachGives(t, Math.abs, [[-1, 1], [2, 2]]);
 * ```
 */
export async function stepEachGives<I, O>(
  t: Deno.TestContext,
  fn: (input: I) => O,
  rows: [I, O][],
): Promise<void> {
  for (const [input, output] of rows) {
    await t.step(`${input} → ${output}`, () => {
      assert.deepEqual(fn(input), output);
    });
  }
}

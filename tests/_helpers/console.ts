/**
 * What the code under test writes to the console, captured.
 *
 * @module
 */

/**
 * Replaces `console.error` while `fn` runs; returns what it logged, one
 * string a call.
 *
 * @example
 * ```ts
 * assert.deepEqual(await capturingErrors(() => h.post(entry)), []);
 * ```
 */
export async function capturingErrors(
  fn: () => Promise<unknown>,
): Promise<string[]> {
  const logged: string[] = [];
  const original = console.error;
  console.error = (...args: unknown[]) => {
    logged.push(args.map(String).join(" "));
  };
  try {
    await fn();
  } finally {
    console.error = original;
  }
  return logged;
}

/**
 * Tests that run inside a fixture: `harnessTest(name, async (h) => …)` is
 * `Deno.test(name, () => withHarness(async (h) => …))`, with one level of
 * nesting less in every test. Each helper module makes the ones of its
 * fixtures (`harnessTest`, `kvTest`, `dashboardTest`, `signedInTest`,
 * `queryProjectTest`, `threeKindsTest`).
 *
 * @module
 */

/**
 * The test function of `fixture`: each test it registers runs its body
 * inside the fixture (given the fixture's options, if any), which opens
 * what the body is given and closes it after, also when the body throws.
 *
 * @example
 * ```ts
 * export const kvTest = fixtureTest(withKv);
 * kvTest("a key once set is read back", async (kv) => { … });
 * ```
 */
export function fixtureTest<A extends unknown[], O = never>(
  fixture: (fn: (...args: A) => Promise<void>, options?: O) => Promise<void>,
): (name: string, fn: (...args: A) => Promise<void>, options?: O) => void {
  return (name, fn, options) => Deno.test(name, () => fixture(fn, options));
}

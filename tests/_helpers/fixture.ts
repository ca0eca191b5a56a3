/**
 * Tests that run inside a fixture: `harnessTest(name, async (h) => …)` is
 * `Deno.test(name, () => withHarness(async (h) => …))`, with one level of
 * nesting less in every test. Each helper module makes the ones of its
 * fixtures (`harnessTest`, `kvTest`, `dashboardTest`, `signedInTest`,
 * `queryProjectTest`, `threeKindsTest`); {@linkcode withNewProject} hands a
 * fixture's tests a new project besides.
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

/**
 * `fixture`, whose first argument is a harness, with a project made on
 * that harness (its default allow list) handed to each test after the
 * fixture's own arguments: the opening most pipeline and page tests share.
 *
 * @example
 * ```ts
 * export const projectTest = fixtureTest(withNewProject(withHarness));
 * projectTest("an entry is stored", async (h, project) => { … });
 * ```
 */
export function withNewProject<
  A extends [{ project(): Promise<unknown> }, ...unknown[]],
  O = never,
>(
  fixture: (fn: (...args: A) => Promise<void>, options?: O) => Promise<void>,
): (
  fn: (...args: [...A, Awaited<ReturnType<A[0]["project"]>>]) => Promise<void>,
  options?: O,
) => Promise<void> {
  return (fn, options) =>
    fixture(async (...args) => {
      const project = await args[0].project();
      await fn(...args, project as Awaited<ReturnType<A[0]["project"]>>);
    }, options);
}

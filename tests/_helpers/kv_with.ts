/**
 * A KV handle with some of its methods replaced, for tests that make a
 * call fail, race or report: the other methods are called on the handle
 * itself (the runtime's methods read private fields).
 *
 * @module
 */

/** The methods a test may replace. */
type Replaceable = Pick<
  Deno.Kv,
  "atomic" | "delete" | "get" | "getMany" | "list" | "set"
>;

/**
 * `kv` with the methods of `replaced` in place of its own.
 *
 * @example
 * ```ts
 * const failing = kvWith(kv, { list: () => { throw new TypeError("x"); } });
 * ```
 */
export function kvWith(kv: Deno.Kv, replaced: Partial<Replaceable>): Deno.Kv {
  return new Proxy(kv, {
    get(target, name) {
      if (Object.hasOwn(replaced, name)) {
        return replaced[name as keyof Replaceable];
      }
      const value = Reflect.get(target, name, target);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}

/**
 * Interleavings and faults made by hand for the tests: a view of a KV whose
 * atomic operations a test may watch or alter, a KV whose commits can be
 * held until released, and a timeout that fails a test rather than letting
 * it hang.
 *
 * @module
 */
import { withTimeout } from "./harness.ts";

/**
 * Fails when `promise` takes longer than `ms`, rather than hanging: a step
 * of a hand-made interleaving that does not come.
 *
 * @example
 * ```ts
 * await within(gate.reached);
 * ```
 */
export function within<T>(promise: Promise<T>, ms = 2000): Promise<T> {
  return withTimeout(promise, ms, "the next step of the interleaving");
}

/**
 * A view of `kv` whose `atomic()` hands each new operation to `change`, which
 * may replace its methods (`set`, `commit`) or throw; everything else goes
 * to `kv` itself.
 *
 * @example
 * ```ts
 * const view = atomicView(kv, (op) => {
 *   op.commit = () => Promise.reject(new TypeError("database or disk is full"));
 *   return op;
 * });
 * ```
 */
export function atomicView(
  kv: Deno.Kv,
  change: (op: Deno.AtomicOperation) => Deno.AtomicOperation,
): Deno.Kv {
  return new Proxy(kv, {
    get(target, name) {
      if (name === "atomic") return () => change(target.atomic());
      const value = Reflect.get(target, name, target);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}

/** A KV whose next commit can be held: it waits until released. */
export interface HeldKv {
  kv: Deno.Kv;
  /** Holds the next commit; `reached` resolves when it is attempted. */
  hold(): { reached: Promise<void>; release: () => void };
}

/**
 * A view of `kv` whose next commit can be held until released, to make an
 * interleaving by hand: hold, start the work, await `reached`, act, release.
 *
 * @example
 * ```ts
 * const held = holdCommits(kv);
 * const gate = held.hold();
 * const work = consumer.process(batchId); // a consumer on held.kv
 * await within(gate.reached);
 * gate.release();
 * ```
 */
export function holdCommits(kv: Deno.Kv): HeldKv {
  let held: { reached: () => void; released: Promise<void> } | null = null;
  const wrap = (op: Deno.AtomicOperation): Deno.AtomicOperation => {
    const proxy: Deno.AtomicOperation = new Proxy(op, {
      get(target, name) {
        if (name === "commit") {
          return async () => {
            const gate = held;
            held = null;
            if (gate) {
              gate.reached();
              await gate.released;
            }
            return target.commit();
          };
        }
        const value = Reflect.get(target, name, target);
        if (typeof value !== "function") return value;
        return (...args: unknown[]) => {
          const result = value.apply(target, args);
          return result === target ? proxy : result;
        };
      },
    });
    return proxy;
  };
  return {
    kv: atomicView(kv, wrap),
    hold() {
      let reached!: () => void;
      let release!: () => void;
      const reachedP = new Promise<void>((resolve) => (reached = resolve));
      const released = new Promise<void>((resolve) => (release = resolve));
      held = { reached, released };
      return { reached: reachedP, release };
    },
  };
}

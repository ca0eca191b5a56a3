/**
 * Atomic writes recorded before they are made: the consumer builds its result
 * commit as a {@linkcode RecordedAtomic} while it holds the locks of the
 * rejection rings, and commits it (sent again while refused as locked,
 * docs/design.md#one-writer-per-commit). It counts its mutations, which the
 * tests read.
 *
 * @module
 */
import { commitRetryingLocked, type LockedRetryOptions } from "./kv.ts";

/** What results are written with: a `Deno.AtomicOperation`, or a recording. */
export interface AtomicWriter {
  check(...checks: Deno.AtomicCheck[]): unknown;
  set(
    key: Deno.KvKey,
    value: unknown,
    options?: { expireIn?: number },
  ): unknown;
  delete(key: Deno.KvKey): unknown;
  sum(key: Deno.KvKey, n: bigint): unknown;
  min(key: Deno.KvKey, n: bigint): unknown;
  max(key: Deno.KvKey, n: bigint): unknown;
}

/** One recorded check or mutation. */
type AtomicStep =
  | ["check", Deno.KvKey, string | null]
  | ["set", Deno.KvKey, unknown, number | undefined]
  | ["delete", Deno.KvKey]
  | ["sum" | "min" | "max", Deno.KvKey, bigint];

/**
 * Checks and mutations recorded in order, applied later to an atomic
 * operation.
 *
 * @example
 * ```ts
 * const result = new RecordedAtomic();
 * result.check(pending).delete(pending.key);
 * await result.commit(kv);
 * ```
 */
export class RecordedAtomic implements AtomicWriter {
  #steps: AtomicStep[] = [];
  #mutations = 0;

  /** Mutations recorded. */
  get mutations(): number {
    return this.#mutations;
  }

  check(...checks: Deno.AtomicCheck[]): this {
    for (const check of checks) {
      this.#steps.push(["check", check.key, check.versionstamp]);
    }
    return this;
  }

  set(key: Deno.KvKey, value: unknown, options?: { expireIn?: number }): this {
    this.#mutations++;
    this.#steps.push(["set", key, value, options?.expireIn]);
    return this;
  }

  delete(key: Deno.KvKey): this {
    this.#mutations++;
    this.#steps.push(["delete", key]);
    return this;
  }

  sum(key: Deno.KvKey, n: bigint): this {
    return this.#counter("sum", key, n);
  }

  min(key: Deno.KvKey, n: bigint): this {
    return this.#counter("min", key, n);
  }

  max(key: Deno.KvKey, n: bigint): this {
    return this.#counter("max", key, n);
  }

  #counter(kind: "sum" | "min" | "max", key: Deno.KvKey, n: bigint): this {
    this.#mutations++;
    this.#steps.push([kind, key, n]);
    return this;
  }

  /** Adds everything recorded to `op`, in the order recorded. */
  applyTo(op: AtomicWriter): void {
    for (const step of this.#steps) {
      switch (step[0]) {
        case "check":
          op.check({ key: step[1], versionstamp: step[2] });
          break;
        case "set":
          if (step[3] === undefined) op.set(step[1], step[2]);
          else op.set(step[1], step[2], { expireIn: step[3] });
          break;
        case "delete":
          op.delete(step[1]);
          break;
        case "sum":
          op.sum(step[1], step[2]);
          break;
        case "min":
          op.min(step[1], step[2]);
          break;
        case "max":
          op.max(step[1], step[2]);
      }
    }
  }

  /**
   * Commits what is recorded as an atomic operation of its own, sent again
   * while it is refused as locked ({@linkcode commitRetryingLocked}).
   */
  commit(
    kv: Deno.Kv,
    options: LockedRetryOptions = {},
  ): Promise<Deno.KvCommitResult | Deno.KvCommitError> {
    const op = kv.atomic();
    this.applyTo(op);
    return commitRetryingLocked(() => op.commit(), options);
  }
}

/**
 * Atomic writes recorded before they are made: the consumer builds its result
 * commit as a {@linkcode RecordedAtomic} while it holds the locks of the
 * rejection rings, and commits it (sent again while refused as locked,
 * docs/design.md#one-writer-per-commit). The recording knows its checks,
 * mutations and bytes, which the tests read.
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

/** Bytes counted per key part beside its own, an upper bound of its encoding. */
const KEY_PART_OVERHEAD = 10;
/** Bytes counted for a value that is not bytes (a counter, a number). */
const SCALAR_VALUE_BYTES = 16;

/**
 * An upper bound of the bytes KV counts for a key: every string part at 3
 * bytes per UTF-16 unit, plus a fixed overhead per part.
 */
export function keyBytes(key: Deno.KvKey): number {
  let bytes = 0;
  for (const part of key) {
    bytes += KEY_PART_OVERHEAD +
      (typeof part === "string"
        ? part.length * 3
        : part instanceof Uint8Array
        ? part.length
        : 8);
  }
  return bytes;
}

/** A key as text, equal for equal keys and different for different ones. */
function keyText(key: Deno.KvKey): string {
  let text = "";
  for (const part of key) {
    text += part instanceof Uint8Array
      ? `u${part.join(",")}\u0000`
      : `${typeof part}:${String(part)}\u0000`;
  }
  return text;
}

function valueBytes(value: unknown): number {
  if (value instanceof Uint8Array) return value.length;
  if (typeof value === "string") return value.length * 3;
  return SCALAR_VALUE_BYTES;
}

/** One recorded check or mutation. */
type AtomicStep =
  | ["check", Deno.KvKey, string | null]
  | ["set", Deno.KvKey, unknown, number | undefined]
  | ["delete", Deno.KvKey]
  | ["sum" | "min" | "max", Deno.KvKey, bigint];

/**
 * Checks and mutations recorded in order, applied later to one or more
 * atomic operations.
 *
 * @example
 * ```ts
 * const result = new RecordedAtomic();
 * result.check(pending).delete(pending.key);
 * await result.commit(kv); // or result.applyTo(op) inside another commit
 * ```
 */
export class RecordedAtomic implements AtomicWriter {
  #steps: AtomicStep[] = [];
  #checked: string[] = [];
  #written: string[] = [];
  #checks = 0;
  #mutations = 0;
  #bytes = 0;

  /**
   * Whether this and `other` cannot share one atomic operation: one checks a
   * key the other sets or deletes. Together both checks would be made against
   * the state before either write, and both would pass where one alone, made
   * after the other, fails (the same batch judged twice, the same signature
   * claimed twice).
   */
  conflictsWith(other: RecordedAtomic): boolean {
    if (this.#checked.length === 0 && other.#checked.length === 0) return false;
    const overlaps = (keys: string[], among: string[]) =>
      keys.some((key) => among.includes(key));
    return overlaps(this.#checked, other.#written) ||
      overlaps(other.#checked, this.#written);
  }

  /** Checks recorded. */
  get checks(): number {
    return this.#checks;
  }

  /** Mutations recorded. */
  get mutations(): number {
    return this.#mutations;
  }

  /** An upper bound of the bytes KV counts for what is recorded. */
  get bytes(): number {
    return this.#bytes;
  }

  check(...checks: Deno.AtomicCheck[]): this {
    for (const check of checks) {
      this.#checks++;
      this.#checked.push(keyText(check.key));
      this.#bytes += keyBytes(check.key) + 16;
      this.#steps.push(["check", check.key, check.versionstamp]);
    }
    return this;
  }

  set(key: Deno.KvKey, value: unknown, options?: { expireIn?: number }): this {
    this.#mutations++;
    this.#written.push(keyText(key));
    this.#bytes += keyBytes(key) + valueBytes(value);
    this.#steps.push(["set", key, value, options?.expireIn]);
    return this;
  }

  delete(key: Deno.KvKey): this {
    this.#mutations++;
    this.#written.push(keyText(key));
    this.#bytes += keyBytes(key);
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
    this.#bytes += keyBytes(key) + SCALAR_VALUE_BYTES;
    this.#steps.push([kind, key, n]);
    return this;
  }

  /** Adds everything recorded to `op`, in the order recorded. */
  applyTo(op: Deno.AtomicOperation): void {
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

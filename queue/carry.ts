/**
 * Results that ride the producer's commits: the consumer's result commit of
 * a batch is carried by the next group commit, beside the entries queued
 * then, so one KV transaction does the work of two
 * (docs/design.md#one-commit-for-two). A result joins a commit only while
 * the commit stays under KV's limits and no other result in it writes a key
 * it checks (or checks one it writes); one that does not fit is committed
 * alone at once.
 *
 * @module
 */
import type { RecordedAtomic } from "../db/atomic.ts";
import {
  ATOMIC_MAX_BYTES,
  ATOMIC_MAX_CHECKS,
  type LockedRetryOptions,
} from "../db/kv.ts";

/**
 * Bytes of batches and carried results one commit holds at most before no
 * further result joins it: half of KV's cap, leaving the other half to the
 * rider's counters (under 1,000 small keys).
 */
const MAX_CARRY_BYTES = ATOMIC_MAX_BYTES / 2;

/** The outcome of a commit, as `Deno.AtomicOperation.commit` gives it. */
export type CommitOutcome = Deno.KvCommitResult | Deno.KvCommitError;

interface Carried {
  result: RecordedAtomic;
  resolve: (outcome: CommitOutcome) => void;
  reject: (error: unknown) => void;
}

/** The results that joined one commit, told its outcome once it is known. */
export interface Riding {
  /** Mutations they added. */
  mutations: number;
  /** The commit succeeded. */
  committed(versionstamp: string): void;
  /**
   * The commit failed a check: only results hold checks, so one of theirs.
   * Each is committed alone, so that one result's conflict is not another's.
   */
  checkFailed(): void;
  /** The commit threw. */
  failed(error: unknown): void;
}

/** Options of {@linkcode CarriedResults}. */
export interface CarriedResultsOptions extends LockedRetryOptions {
  kv: Deno.Kv;
  /** Hears the error of every commit made here that threw. */
  onError?: (error: unknown) => void;
}

/** The results waiting for the next commit. */
export class CarriedResults {
  #waiting: Carried[] = [];
  #options: CarriedResultsOptions;

  constructor(options: CarriedResultsOptions) {
    this.#options = options;
  }

  /** Results waiting. */
  get size(): number {
    return this.#waiting.length;
  }

  /** Waits for the next commit; resolves with its outcome for `result`. */
  add(result: RecordedAtomic): Promise<CommitOutcome> {
    return new Promise((resolve, reject) => {
      this.#waiting.push({ result, resolve, reject });
    });
  }

  /** Rejects every waiting result with `error`. */
  rejectAll(error: unknown): void {
    for (const c of this.#waiting.splice(0)) c.reject(error);
  }

  /**
   * Adds to `op`, which already holds `mutations` mutations of at most
   * `bytes` bytes, the waiting results that fit (at most `maxMutations`
   * mutations in all), in the order they came; commits the others alone.
   */
  take(
    op: Deno.AtomicOperation,
    mutations: number,
    bytes: number,
    maxMutations: number,
  ): Riding {
    let checks = 0;
    let added = 0;
    const joining: Carried[] = [];
    for (const carried of this.#waiting.splice(0)) {
      const { result } = carried;
      if (
        checks + result.checks > ATOMIC_MAX_CHECKS ||
        mutations + added + result.mutations > maxMutations ||
        bytes + result.bytes > MAX_CARRY_BYTES ||
        joining.some((other) => other.result.conflictsWith(result))
      ) {
        this.#commitAlone(carried);
        continue;
      }
      result.applyTo(op);
      checks += result.checks;
      added += result.mutations;
      bytes += result.bytes;
      joining.push(carried);
    }
    return {
      mutations: added,
      committed: (versionstamp) => {
        for (const c of joining) c.resolve({ ok: true, versionstamp });
      },
      checkFailed: () => {
        for (const c of joining) this.#commitAlone(c);
      },
      failed: (error) => {
        for (const c of joining) c.reject(error);
      },
    };
  }

  /** Commits `carried` on its own; one refused as locked is sent again. */
  #commitAlone(carried: Carried): void {
    const options = this.#options;
    carried.result.commit(options.kv, options).then(
      carried.resolve,
      (error) => {
        options.onError?.(error);
        carried.reject(error);
      },
    );
  }
}

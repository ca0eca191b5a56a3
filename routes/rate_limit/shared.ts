/**
 * The limit shared by every instance on one KV database. Each busy address
 * has an atomic counter per epoch (`rate_limits/<epoch>/<ip>`), summed inside
 * the producer's group commit, so counting costs no KV round trip of its own.
 * Every sync (a few times a second, driven by the server) an instance reads
 * the counters of the addresses that are using their bucket and takes from
 * its own buckets what the other instances admitted meanwhile.
 *
 * Only busy addresses are counted (the buckets report them): the many clients
 * that send a few entries cost no KV writes at all. The overshoot with several
 * instances is bounded by what they admit between two syncs.
 *
 * @module
 */
import {
  rateLimitEpochPrefix,
  rateLimitKey,
  rateLimitsPrefix,
} from "../../db/keys.ts";
import { GET_MANY_MAX_KEYS } from "../../db/kv.ts";
import type { CommitRider } from "../../queue/producer.ts";
import { type BucketKey, bucketText } from "./address.ts";

/** Length of a counter epoch, by default. */
const DEFAULT_EPOCH_MS = 60_000;
/** Addresses whose counters one sync reads at most, by default. */
const DEFAULT_MAX_SYNC_KEYS = 1000;
/** Busy addresses counted at once at most, by default. */
const DEFAULT_MAX_COUNTED = 20_000;
/**
 * Epochs whose counters are kept: the current one, and the one before,
 * which commits still in flight may add to.
 */
const EPOCHS_KEPT = 2;
/** Counters deleted per atomic operation, well under KV's mutation cap. */
const DELETES_PER_COMMIT = 500;

/** What the counters need from this instance's buckets. */
export interface BucketLedger {
  /** The TAT of an address, `undefined` when its bucket is full. */
  peek(key: BucketKey): number | undefined;
  /** Takes `tokens` from an address's bucket, for requests admitted elsewhere. */
  charge(key: BucketKey, tokens: number): void;
}

/** Options of {@linkcode SharedCounters}. */
export interface SharedCountersOptions {
  /** Clock. @default {Date.now} */
  now?: () => number;
  /** Length of a counter epoch. @default {60000} */
  epochMs?: number;
  /** Addresses whose counters one sync reads at most. @default {1000} */
  maxSyncKeys?: number;
  /**
   * Busy addresses counted at once at most; past it a new busy address is
   * limited by this instance's bucket alone until room is made. @default {20000}
   */
  maxCounted?: number;
}

/** The KV-counted state of an address that uses its bucket, for one epoch. */
interface Shared {
  epoch: number;
  /** Admitted requests not yet handed to a commit. */
  unsent: number;
  /** Admitted requests in a commit in flight. */
  sending: number;
  /** Admitted requests committed to KV. */
  sent: number;
  /** Largest count of other instances' requests seen in the epoch. */
  others: number;
}

/**
 * The per-epoch counters of busy addresses: counted in memory, added to the
 * producer's commits (a `CommitRider`), read back by {@linkcode sync}.
 *
 * @example
 * ```ts
 * const counters = new SharedCounters();
 * const buckets = new Buckets({
 *   rps: 20,
 *   burst: 50,
 *   onBusy: (key, inUse, now) => counters.count(key, inUse, now),
 * });
 * await counters.sync(kv, buckets);
 * ```
 */
export class SharedCounters implements CommitRider {
  #now: () => number;
  #epochMs: number;
  #maxSyncKeys: number;
  #maxCounted: number;
  /** Addresses whose requests are counted in KV this epoch. */
  #shared = new Map<BucketKey, Shared>();
  /** Addresses with counts to send in the next commit. */
  #unsent = new Set<BucketKey>();
  /** Told when counts come to wait, or addresses to be counted, where none did. */
  #watchers: (() => void)[] = [];

  constructor(options: SharedCountersOptions = {}) {
    this.#now = options.now ?? Date.now;
    this.#epochMs = options.epochMs ?? DEFAULT_EPOCH_MS;
    this.#maxSyncKeys = options.maxSyncKeys ?? DEFAULT_MAX_SYNC_KEYS;
    this.#maxCounted = options.maxCounted ?? DEFAULT_MAX_COUNTED;
  }

  /** Busy addresses counted now. */
  get size(): number {
    return this.#shared.size;
  }

  /**
   * Counts an admitted request of a busy address for the next commit;
   * `inUse` is the tokens its bucket had in use before this request.
   */
  count(key: BucketKey, inUse: number, now: number): void {
    const idle = this.#unsent.size === 0 || this.#shared.size === 0;
    const epoch = Math.floor(now / this.#epochMs);
    let shared = this.#shared.get(key);
    if (shared === undefined || shared.epoch !== epoch) {
      // A flood of busy addresses is not counted past the cap: memory stays
      // bounded, and each bucket still limits its address here.
      if (shared === undefined && this.#shared.size >= this.#maxCounted) {
        return;
      }
      // Becoming busy: count the tokens already in use with this request.
      shared = { epoch, unsent: inUse, sending: 0, sent: 0, others: 0 };
      this.#shared.set(key, shared);
    }
    shared.unsent++;
    this.#unsent.add(key);
    if (idle) this.#wake();
  }

  /**
   * Calls `wake` whenever counts come to wait where none did, or a first
   * address comes to be counted: the loops that commit and sync them run
   * only while there is something to do.
   */
  watch(wake: () => void): void {
    this.#watchers.push(wake);
  }

  #wake(): void {
    for (const wake of this.#watchers) wake();
  }

  /** Whether counters wait for a commit. */
  pending(): boolean {
    return this.#unsent.size > 0;
  }

  /** Adds the waiting counters (at most `budget`) to a commit. */
  ride(op: Deno.AtomicOperation, budget: number): (ok: boolean) => void {
    const riding: [BucketKey, Shared, number][] = [];
    for (const key of this.#unsent) {
      if (riding.length >= budget) break;
      this.#unsent.delete(key);
      const shared = this.#shared.get(key);
      if (shared === undefined || shared.unsent === 0) continue;
      const n = shared.unsent;
      op.sum(rateLimitKey(shared.epoch, bucketText(key)), BigInt(n));
      shared.unsent = 0;
      shared.sending += n;
      riding.push([key, shared, n]);
    }
    return (ok) => {
      const idle = this.#unsent.size === 0;
      for (const [key, shared, n] of riding) {
        shared.sending -= n;
        if (ok) shared.sent += n;
        else {
          shared.unsent += n;
          this.#unsent.add(key);
        }
      }
      if (idle && this.#unsent.size > 0) this.#wake();
    };
  }

  /**
   * Reads the counters of the addresses using their bucket and takes from
   * each bucket what other instances admitted since the last sync.
   */
  async sync(kv: Deno.Kv, buckets: BucketLedger): Promise<void> {
    const epoch = Math.floor(this.#now() / this.#epochMs);
    const busy: [BucketKey, Shared, number][] = [];
    for (const [key, shared] of this.#shared) {
      const tat = buckets.peek(key);
      if (shared.epoch !== epoch || tat === undefined) {
        if (shared.unsent === 0 && shared.sending === 0) {
          this.#shared.delete(key);
        }
      } else busy.push([key, shared, tat]);
    }
    // The busiest first: the furthest TAT has the fewest tokens left.
    busy.sort((a, b) => b[2] - a[2]);
    busy.length = Math.min(busy.length, this.#maxSyncKeys);
    const reads = [];
    for (let i = 0; i < busy.length; i += GET_MANY_MAX_KEYS) {
      const chunk = busy.slice(i, i + GET_MANY_MAX_KEYS);
      reads.push(
        kv.getMany<Deno.KvU64[]>(
          chunk.map(([key]) => rateLimitKey(epoch, bucketText(key))),
        ).then((entries) => {
          chunk.forEach(([key, shared], j) => {
            if (shared.epoch !== epoch) return;
            const total = Number(entries[j]?.value?.value ?? 0n);
            // What this instance may have in the total: sent and in flight.
            const others = total - shared.sent - shared.sending;
            if (others <= shared.others) return;
            buckets.charge(key, others - shared.others);
            shared.others = others;
          });
        }),
      );
    }
    await Promise.all(reads);
  }

  /**
   * Deletes the counters of every epoch before those kept, however old (a
   * server stopped for a while leaves its last epochs behind, and counters
   * added to with `sum` cannot expire).
   */
  async cleanup(kv: Deno.Kv): Promise<void> {
    const epoch = Math.floor(this.#now() / this.#epochMs);
    const selector = {
      start: rateLimitsPrefix(),
      end: rateLimitEpochPrefix(epoch - EPOCHS_KEPT + 1),
    };
    for (;;) {
      const op = kv.atomic();
      let n = 0;
      for await (
        const entry of kv.list(selector, { limit: DELETES_PER_COMMIT })
      ) {
        op.delete(entry.key);
        n++;
      }
      if (n === 0) break;
      await op.commit();
    }
  }
}

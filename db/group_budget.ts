/**
 * What the error groups and releases of one result commit may add to it
 * (docs/design.md#what-a-result-commit-holds): KV refuses a whole atomic
 * operation past 1,000 mutations, 819,200 bytes or 81,920 bytes of keys, and
 * a batch whose commit is refused fails on every attempt. The rest of the
 * commit (entries, counters, rejections) is bounded by the batch;
 * {@linkcode GROUP_COMMIT_BUDGET} is the part left to the groups and
 * releases, shared by the commit's projects: each in turn may spend an equal
 * part of what the projects before it left ({@linkcode GroupBudget}).
 * A group or release that does not fit its project's share is not written
 * (db/error_groups.ts and db/releases.ts say what becomes of its entries).
 *
 * @module
 */
import { RecordedAtomic } from "./atomic.ts";
import { keyBytes } from "./kv.ts";

/** What some writes cost a commit. */
export interface CommitCost {
  /** Mutations. */
  mutations: number;
  /** Bytes of their keys and values together. */
  bytes: number;
  /** Bytes of their keys. */
  keyBytes: number;
}

/**
 * What the error groups and releases of one result commit add at most:
 * 280 mutations, 196,608 bytes and 32,768 bytes of keys, beside about 720
 * mutations and 49,152 bytes of keys for the rest of it, whose bytes are its
 * entries' (docs/design.md#what-a-result-commit-holds).
 */
export const GROUP_COMMIT_BUDGET: Readonly<CommitCost> = {
  mutations: 280,
  bytes: 196_608,
  keyBytes: 32_768,
};

/** `a` and `b` added. */
export function addCosts(a: CommitCost, b: CommitCost): CommitCost {
  return {
    mutations: a.mutations + b.mutations,
    bytes: a.bytes + b.bytes,
    keyBytes: a.keyBytes + b.keyBytes,
  };
}

/** Nothing spent. */
export const NO_COST: Readonly<CommitCost> = {
  mutations: 0,
  bytes: 0,
  keyBytes: 0,
};

/** Bytes a `KvU64` counter's value takes. */
const COUNTER_BYTES = 8;

/**
 * The cost of one mutation of `key`: a value of `valueBytes` (a counter's 8
 * by default; 0 for a deletion, whose key is counted all the same).
 *
 * @example
 * ```ts
 * costOf(errorGroupKey(projectId, id), record.length);
 * ```
 */
export function costOf(
  key: Deno.KvKey,
  valueBytes = COUNTER_BYTES,
): CommitCost {
  const k = keyBytes(key);
  return { mutations: 1, bytes: k + valueBytes, keyBytes: k };
}

const encoder = new TextEncoder();

/** Bytes of a value as written: its own bytes, or a serialized one's. */
function valueBytes(value: unknown): number {
  if (value instanceof Uint8Array) return value.length;
  if (value instanceof Deno.KvU64) return COUNTER_BYTES;
  // Anything else as a string, and its header.
  return encoder.encode(String(value)).length + 8;
}

/**
 * Writes recorded ({@linkcode RecordedAtomic}) with what they would cost a
 * commit added up: so a cost is counted by the code that writes, which runs
 * once, and what fits is then applied to the commit as recorded.
 *
 * @example
 * ```ts
 * const writes = new CostWriter();
 * addGroup(writes, projectId, group);
 * if (share.fits(writes.cost)) writes.applyTo(op);
 * ```
 */
export class CostWriter extends RecordedAtomic {
  /** What the writes so far cost. */
  cost: CommitCost = { ...NO_COST };

  #add(key: Deno.KvKey, bytes: number): void {
    this.cost = addCosts(this.cost, costOf(key, bytes));
  }

  override set(
    key: Deno.KvKey,
    value: unknown,
    options?: { expireIn?: number },
  ): this {
    this.#add(key, valueBytes(value));
    return super.set(key, value, options);
  }

  override delete(key: Deno.KvKey): this {
    this.#add(key, 0);
    return super.delete(key);
  }

  override sum(key: Deno.KvKey, n: bigint): this {
    this.#add(key, COUNTER_BYTES);
    return super.sum(key, n);
  }

  override min(key: Deno.KvKey, n: bigint): this {
    this.#add(key, COUNTER_BYTES);
    return super.min(key, n);
  }

  override max(key: Deno.KvKey, n: bigint): this {
    this.#add(key, COUNTER_BYTES);
    return super.max(key, n);
  }
}

/**
 * One project's share of a {@linkcode GroupBudget}: what it may spend, and
 * what it spent.
 *
 * @example
 * ```ts
 * const share = new GroupShare(GROUP_COMMIT_BUDGET);
 * if (share.fits(cost)) share.take(cost);
 * ```
 */
export class GroupShare {
  #limit: Readonly<CommitCost>;
  #spent: CommitCost = { ...NO_COST };
  #onTake: (cost: CommitCost) => void;

  /** `limit`: what it may spend; `onTake`: told of each spending. */
  constructor(
    limit: Readonly<CommitCost>,
    onTake: (cost: CommitCost) => void = () => {},
  ) {
    this.#limit = limit;
    this.#onTake = onTake;
  }

  /** What it spent so far. */
  get spent(): Readonly<CommitCost> {
    return this.#spent;
  }

  /**
   * Whether `cost` fits beside what was spent, within `part` (0 to 1) of
   * the share.
   */
  fits(cost: CommitCost, part = 1): boolean {
    const after = addCosts(this.#spent, cost);
    return after.mutations <= this.#limit.mutations * part &&
      after.bytes <= this.#limit.bytes * part &&
      after.keyBytes <= this.#limit.keyBytes * part;
  }

  /** Spends `cost` (which {@linkcode fits}). */
  take(cost: CommitCost): void {
    this.#spent = addCosts(this.#spent, cost);
    this.#onTake(cost);
  }
}

/**
 * {@linkcode GROUP_COMMIT_BUDGET} shared by the projects of one result
 * commit: each {@linkcode share} is an equal part of what is left for the
 * projects still to come, so a project that spends less leaves more to the
 * next, and none can take what the others' equal parts need.
 *
 * @example
 * ```ts
 * const budget = new GroupBudget(projects.size);
 * for (const project of projects) await prepareErrorGroups(kv, project.id, records, { now, retentionMs, share: budget.share() });
 * ```
 */
export class GroupBudget {
  #left: CommitCost;
  #users: number;

  /**
   * `users`: the projects that will ask for a share; `total`: what they
   * share.
   */
  constructor(
    users: number,
    total: Readonly<CommitCost> = GROUP_COMMIT_BUDGET,
  ) {
    this.#left = { ...total };
    this.#users = Math.max(1, users);
  }

  /** The next project's share. */
  share(): GroupShare {
    const n = Math.max(1, this.#users);
    this.#users--;
    const limit = {
      mutations: Math.floor(this.#left.mutations / n),
      bytes: Math.floor(this.#left.bytes / n),
      keyBytes: Math.floor(this.#left.keyBytes / n),
    };
    return new GroupShare(limit, (cost) => {
      this.#left.mutations -= cost.mutations;
      this.#left.bytes -= cost.bytes;
      this.#left.keyBytes -= cost.keyBytes;
    });
  }
}

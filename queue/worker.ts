/**
 * Runs the consumer with bounded concurrency. Work arrives two ways, both
 * naming pending batches: the producer hands over what it just committed,
 * and the sweeper lists pending batches that nobody handled — at start-up
 * after a crash, when another process committed them, when a batch waits for
 * a retry or for disk space. Processing is idempotent, so the same batch
 * reaching it twice costs one read.
 *
 * @module
 */
import {
  batchIdOf,
  pendingBatchesPrefix,
  pendingBatchKey,
} from "../db/keys.ts";
import { decodeBatchHeader, type HandedBatch } from "./batch.ts";
import { type Consumer, groupFits, MAX_GROUP_BATCHES } from "./consumer.ts";
import { recordFailure, sweepLooseBatchSlices } from "./dead_letters.ts";
import { createId } from "../domain/ids.ts";

/** Period of the sweeper. */
export const SWEEP_INTERVAL_MS = 1000;
/** Age after which the sweeper takes a batch another process committed. */
const SWEEP_GRACE_MS = 1500;
/** Pending batches one sweep lists at most (the next sweep takes the rest). */
const SWEEP_MAX_BATCHES = 1000;
/** Keys one sweep reads per KV round trip. */
const SWEEP_READ_BATCH = 100;
/** Batch ids held in memory at most; more are left to the sweeper. */
const MAX_QUEUED_IDS = 10_000;
/**
 * How often the sweeper looks for slices no batch names any more (a dead
 * letter's delete cut short), a bounded part of them each time.
 */
export const LOOSE_SWEEP_MS = 60_000;
/** Handed-over batches whose entries are kept in memory at most. */
const MAX_HANDED_BATCHES = 64;
/**
 * Longest a handed-over batch waits for others to share its result commit
 * when fewer than a full group wait (docs/storage.md#one-chunk-from-several-batches).
 */
export const GATHER_MS = 50;

/** Options of {@linkcode BatchWorker}. */
export interface WorkerOptions {
  kv: Deno.Kv;
  consumer: Consumer;
  /** Batches processed at once. @default {4} */
  concurrency?: number;
  /** Clock. @default {Date.now} */
  now?: () => number;
  /** Period of the sweeper. @default {1000} */
  sweepIntervalMs?: number;
  /**
   * Age after which the sweeper takes a batch: younger ones are still being
   * handed over by the process that committed them. @default {1500}
   */
  sweepGraceMs?: number;
  /** Batch ids held in memory at most; more are left to the sweeper. @default {10000} */
  maxQueued?: number;
  /** Told of each failed attempt. */
  onError?: (batchId: string, error: unknown) => void;
  /**
   * Longest a handed-over batch waits for others to be processed with it
   * in one result commit; 0: each alone, at once. @default {50}
   */
  gatherMs?: number;
}

/** A bounded pool processing batches by id. */
export class BatchWorker {
  #options: WorkerOptions;
  #now: () => number;
  #queue: string[] = [];
  #known = new Set<string>();
  /** Entries handed over with their batch id, so they need no reading back. */
  #handed = new Map<string, HandedBatch>();
  #running = 0;
  #timer: ReturnType<typeof setInterval> | undefined;
  #sweeping: Promise<number> | null = null;
  #sweptAt: number;
  /** When the sweeper last looked for loose slices, and where it goes on. */
  #looseAt = -Infinity;
  #looseCursor: string | undefined;
  #idle: (() => void)[] = [];
  #gatherTimer: ReturnType<typeof setTimeout> | undefined;
  /** The gather wait ran out (or the worker stops): a short group goes now. */
  #gatherDue = false;

  constructor(options: WorkerOptions) {
    this.#options = options;
    this.#now = options.now ?? Date.now;
    this.#sweptAt = this.#now();
  }

  /**
   * When the last sweep finished listing (the worker's clock; its creation
   * before the first): the sign of life `/healthz` reads.
   */
  get sweptAt(): number {
    return this.#sweptAt;
  }

  /** Queues batches for processing (ids already queued are skipped). */
  push(batchIds: Iterable<string>): void {
    const max = this.#options.maxQueued ?? MAX_QUEUED_IDS;
    for (const id of batchIds) {
      if (this.#known.has(id) || this.#known.size >= max) continue;
      this.#known.add(id);
      this.#queue.push(id);
    }
    this.#drain();
  }

  /**
   * Queues batches just committed by this process, with their entries. At
   * most {@linkcode MAX_HANDED_BATCHES} keep their entries in memory; the
   * others are read back from KV.
   */
  hand(batches: HandedBatch[]): void {
    for (const batch of batches) {
      if (
        !this.#known.has(batch.id) && this.#handed.size < MAX_HANDED_BATCHES
      ) {
        this.#handed.set(batch.id, batch);
      }
    }
    this.push(batches.map((b) => b.id));
    for (const batch of batches) {
      if (!this.#known.has(batch.id)) this.#handed.delete(batch.id);
    }
  }

  /**
   * Lists pending batches older than the grace period (all of them with
   * `all`) that are due and not already queued here, and queues them; once
   * every {@linkcode LOOSE_SWEEP_MS}, deletes a bounded part of the slices
   * no batch names any more. Returns how many batches it queued.
   */
  sweep(options: { all?: boolean } = {}): Promise<number> {
    this.#sweeping ??= this.#sweep(options.all ?? false).finally(() => {
      this.#sweeping = null;
    });
    return this.#sweeping;
  }

  async #sweep(all: boolean): Promise<number> {
    const now = this.#now();
    const grace = all ? 0 : this.#options.sweepGraceMs ?? SWEEP_GRACE_MS;
    const found: string[] = [];
    const iter = this.#options.kv.list({
      start: pendingBatchesPrefix(),
      end: pendingBatchKey(createId(now - grace + 1)),
    }, { limit: SWEEP_MAX_BATCHES, batchSize: SWEEP_READ_BATCH });
    for await (const entry of iter) {
      const id = batchIdOf(entry.key);
      if (this.#known.has(id)) continue;
      if (retryTime(entry.value) > now) continue;
      found.push(id);
    }
    this.#sweptAt = Math.max(this.#sweptAt, this.#now());
    this.push(found);
    if (now - this.#looseAt >= LOOSE_SWEEP_MS) {
      this.#looseAt = now;
      this.#looseCursor = await sweepLooseBatchSlices(
        this.#options.kv,
        this.#looseCursor,
      );
    }
    return found.length;
  }

  /** Sweeps everything now, then every `sweepIntervalMs`. */
  start(): void {
    this.sweep({ all: true }).catch((e) => this.#options.onError?.("", e));
    this.#timer = setInterval(() => {
      this.sweep().catch((e) => this.#options.onError?.("", e));
    }, this.#options.sweepIntervalMs ?? SWEEP_INTERVAL_MS);
  }

  /** Stops the sweeper and waits for the work in hand to finish. */
  async stop(): Promise<void> {
    clearInterval(this.#timer);
    this.#timer = undefined;
    await this.#sweeping?.catch(() => 0);
    // What waits to be gathered goes now.
    this.#gatherDue = true;
    clearTimeout(this.#gatherTimer);
    this.#gatherTimer = undefined;
    this.#drain();
    await this.idle();
    this.#gatherDue = false;
  }

  /** Batches queued or running. */
  get backlog(): number {
    return this.#running + this.#queue.length;
  }

  /** Resolves once nothing is queued or running. */
  idle(): Promise<void> {
    if (this.#running === 0 && this.#queue.length === 0) {
      return Promise.resolve();
    }
    return new Promise((resolve) => this.#idle.push(resolve));
  }

  #drain(): void {
    const concurrency = this.#options.concurrency ?? 4;
    while (this.#running < concurrency && this.#queue.length > 0) {
      const { group, full } = this.#groupAtHead();
      if (group.length > 0 && !full && !this.#gatherDue) {
        this.#gather();
        return;
      }
      if (group.length > 0 && !full) this.#gatherDue = false;
      const ids = group.length > 0
        ? this.#queue.splice(0, group.length)
        : [this.#queue.shift()!];
      this.#running++;
      const work = ids.length > 1 ? this.#runGroup(group) : this.#run(ids[0]!);
      work.finally(() => {
        this.#running--;
        for (const id of ids) this.#known.delete(id);
        this.#drain();
        if (this.#running === 0 && this.#queue.length === 0) {
          for (const resolve of this.#idle.splice(0)) resolve();
        }
      });
    }
  }

  /**
   * The handed-over batches at the head of the queue that can share one
   * result commit, and whether that group is full (no further batch could
   * join it). Empty when gathering is off or the head was not handed over.
   */
  #groupAtHead(): { group: HandedBatch[]; full: boolean } {
    const group: HandedBatch[] = [];
    if ((this.#options.gatherMs ?? GATHER_MS) <= 0) {
      return { group, full: true };
    }
    for (const id of this.#queue) {
      const batch = this.#handed.get(id);
      if (!batch || !groupFits([...group, batch])) return { group, full: true };
      group.push(batch);
      if (group.length === MAX_GROUP_BATCHES) return { group, full: true };
    }
    return { group, full: false };
  }

  /** Waits up to `gatherMs` for more batches before a short group goes. */
  #gather(): void {
    this.#gatherTimer ??= setTimeout(() => {
      this.#gatherTimer = undefined;
      this.#gatherDue = true;
      this.#drain();
    }, this.#options.gatherMs ?? GATHER_MS);
  }

  /**
   * Processes handed-over batches in one result commit; when that cannot
   * be (another processor took one of them, or it failed), each alone.
   */
  async #runGroup(group: HandedBatch[]): Promise<void> {
    try {
      if (await this.#options.consumer.processGroup(group) === "processed") {
        for (const batch of group) this.#handed.delete(batch.id);
        return;
      }
    } catch {
      // Each batch is tried alone next, and its own failure recorded.
    }
    for (const batch of group) await this.#run(batch.id);
  }

  async #run(id: string): Promise<void> {
    const { consumer, onError } = this.#options;
    const handed = this.#handed.get(id);
    this.#handed.delete(id);
    try {
      await consumer.process(id, handed);
    } catch (error) {
      onError?.(id, error);
      await recordFailure(this.#options.kv, id, error, this.#now())
        .catch((e) => onError?.(id, e));
    }
  }
}

/**
 * When a pending batch is due. An unreadable one is due at once: processing
 * it fails and moves it to the dead letters, and it must not stop the sweep
 * of all the others.
 */
function retryTime(value: unknown): number {
  try {
    return decodeBatchHeader(value).retryAt ?? 0;
  } catch {
    return 0;
  }
}

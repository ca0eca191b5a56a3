/**
 * Runs the consumer with bounded concurrency. Work arrives three ways, all
 * naming pending batches: the producer hands over what it just committed,
 * queue messages wake it (where KV queues exist), and the sweeper lists
 * pending batches that nobody handled — at start-up after a crash, when
 * another process died, when a batch waits for a retry, and on platforms
 * without queues. Processing is idempotent, so the same batch reaching it
 * twice costs one read.
 *
 * @module
 */
import { pendingBatchesPrefix, pendingBatchKey } from "../db/keys.ts";
import type { BatchHeader, HandedBatch } from "./batch.ts";
import type { Consumer } from "./consumer.ts";
import { createId } from "./ids.ts";

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
  #idle: (() => void)[] = [];

  constructor(options: WorkerOptions) {
    this.#options = options;
    this.#now = options.now ?? Date.now;
  }

  /** Queues batches for processing (ids already queued are skipped). */
  push(batchIds: Iterable<string>): void {
    const max = this.#options.maxQueued ?? 10_000;
    for (const id of batchIds) {
      if (this.#known.has(id) || this.#known.size >= max) continue;
      this.#known.add(id);
      this.#queue.push(id);
    }
    this.#drain();
  }

  /**
   * Queues batches just committed by this process, with their entries. At
   * most 16 keep their entries in memory; the others are read back from KV.
   */
  hand(batches: HandedBatch[]): void {
    for (const batch of batches) {
      if (!this.#known.has(batch.id) && this.#handed.size < 16) {
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
   * `all`) that are due and not already queued here, and queues them.
   * Returns how many it queued.
   */
  sweep(options: { all?: boolean } = {}): Promise<number> {
    this.#sweeping ??= this.#sweep(options.all ?? false).finally(() => {
      this.#sweeping = null;
    });
    return this.#sweeping;
  }

  async #sweep(all: boolean): Promise<number> {
    const now = this.#now();
    const grace = all ? 0 : this.#options.sweepGraceMs ?? 1500;
    const found: string[] = [];
    const iter = this.#options.kv.list<BatchHeader>({
      start: pendingBatchesPrefix(),
      end: pendingBatchKey(createId(now - grace + 1)),
    }, { limit: 1000, batchSize: 100 });
    for await (const entry of iter) {
      const id = String(entry.key[1]);
      if (this.#known.has(id)) continue;
      // `?.`: one unreadable value must not stop the sweep of all the others.
      if ((entry.value?.retryAt ?? 0) > now) continue;
      found.push(id);
    }
    this.push(found);
    return found.length;
  }

  /** Sweeps everything now, then every `sweepIntervalMs`. */
  start(): void {
    this.sweep({ all: true }).catch((e) => this.#options.onError?.("", e));
    this.#timer = setInterval(() => {
      this.sweep().catch((e) => this.#options.onError?.("", e));
    }, this.#options.sweepIntervalMs ?? 1000);
  }

  /** Stops the sweeper and waits for the work in hand to finish. */
  async stop(): Promise<void> {
    clearInterval(this.#timer);
    this.#timer = undefined;
    await this.#sweeping?.catch(() => 0);
    await this.idle();
  }

  /** Whether batches are queued or running. */
  get busy(): boolean {
    return this.#running > 0 || this.#queue.length > 0;
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
      const id = this.#queue.shift()!;
      this.#running++;
      this.#run(id).finally(() => {
        this.#running--;
        this.#known.delete(id);
        this.#drain();
        if (this.#running === 0 && this.#queue.length === 0) {
          for (const resolve of this.#idle.splice(0)) resolve();
        }
      });
    }
  }

  async #run(id: string): Promise<void> {
    const { consumer, onError } = this.#options;
    const handed = this.#handed.get(id);
    this.#handed.delete(id);
    try {
      await consumer.process(id, handed);
    } catch (error) {
      onError?.(id, error);
      await consumer.recordFailure(id, error).catch((e) => onError?.(id, e));
    }
  }
}

/**
 * Assembles the queue: producer (group commit), consumer, and the worker that
 * runs the consumer from hand-overs, queue messages and the sweeper. The
 * server and the tests build it the same way.
 *
 * @module
 */
import { ProjectCache } from "../auth/projects.ts";
import { startCompactor } from "../db/query/compact.ts";
import { decodeWakeMessage } from "./batch.ts";
import { Consumer } from "./consumer.ts";
import { type CommitRider, GroupCommitter } from "./producer.ts";
import { BatchWorker, SWEEP_INTERVAL_MS } from "./worker.ts";

/** The settings the queue reads; the process configuration supplies them. */
export interface QueueSettings {
  /** Whether KV queue delivery is used (enqueue + listenQueue). */
  queue: boolean;
  /** Batches processed at once by this process. */
  consumerConcurrency: number;
  /** Requests that may wait for a commit before new ones get 503. */
  maxPendingRequests: number;
  /** How long a project record is cached by the consumer. */
  projectCacheMs: number;
  /** Accepted distance between a signature's timestamp and receipt. */
  signatureMaxSkewMs: number;
}

/** Options of {@linkcode createPipeline}. */
export interface PipelineOptions {
  kv: Deno.Kv;
  config: QueueSettings;
  /** Clock. @default {Date.now} */
  now?: () => number;
  /** Mutations that ride each commit (the rate counters). */
  rider?: CommitRider;
  /** Hand committed batches straight to this process's consumer. @default {true} */
  handOver?: boolean;
  /** Period of the sweeper. @default {1000} */
  sweepIntervalMs?: number;
  /**
   * Period of the compactor's rounds, which move settled pages into
   * compressed chunks (0: no compactor). @default {10000}
   */
  compactIntervalMs?: number;
  /** Told of failed processing attempts. @default logs to stderr */
  onError?: (batchId: string, error: unknown) => void;
}

/** The running queue of one process. */
export interface Pipeline {
  producer: GroupCommitter;
  consumer: Consumer;
  worker: BatchWorker;
  /**
   * Starts the sweeper, the compactor and, when queues are on, the queue
   * listener.
   */
  start(): void;
  /** Commits what waits, finishes the work in hand and stops the sweeper. */
  stop(): Promise<void>;
}

/**
 * Builds the pipeline of one process.
 *
 * @example
 * ```ts
 * const pipeline = createPipeline({ kv, config });
 * pipeline.start();
 * ```
 */
export function createPipeline(options: PipelineOptions): Pipeline {
  const { kv, config } = options;
  const now = options.now ?? Date.now;
  const onError = options.onError ??
    ((batchId: string, error: unknown) =>
      console.error(`Cannot process batch "${batchId}":`, error));
  const consumer = new Consumer({
    kv,
    now,
    maxSkewMs: config.signatureMaxSkewMs,
    projects: new ProjectCache(kv, { ttlMs: config.projectCacheMs, now }),
  });
  const worker = new BatchWorker({
    kv,
    consumer,
    now,
    concurrency: config.consumerConcurrency,
    sweepIntervalMs: options.sweepIntervalMs ?? SWEEP_INTERVAL_MS,
    onError,
  });
  const handOver = options.handOver ?? true;
  const producer = new GroupCommitter({
    kv,
    now,
    queue: config.queue,
    maxPending: config.maxPendingRequests,
    ...(options.rider ? { rider: options.rider } : {}),
    ...(handOver ? { onCommitted: (batches) => worker.hand(batches) } : {}),
  });
  let compactor: { stop(): Promise<void> } | undefined;
  return {
    producer,
    consumer,
    worker,
    start() {
      worker.start();
      const compactIntervalMs = options.compactIntervalMs ?? 10_000;
      if (compactIntervalMs > 0) {
        compactor = startCompactor({
          kv,
          now,
          intervalMs: compactIntervalMs,
          isBusy: () => worker.busy,
          onError: (error) => onError("", error),
        });
      }
      if (config.queue) {
        // Ends when KV is closed; its handler only queues ids, so it never waits.
        kv.listenQueue((message) => {
          const wake = decodeWakeMessage(message);
          if (wake) worker.push(wake.batches);
        }).catch((error) => onError("", error));
      }
    },
    async stop() {
      await producer.flush();
      await worker.stop();
      await compactor?.stop();
    },
  };
}

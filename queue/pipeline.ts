/**
 * Assembles the queue of one process, each part after those it needs: the
 * consumer, the worker that runs it from hand-overs and the sweeper, the
 * merger, then the producer (group commit), which hands its batches to the
 * worker and refuses entries while storage is behind. The server and the
 * tests build it the same way. With a disk space guard no part of it writes
 * KV while the disk is full (docs/design.md#full-disk).
 *
 * @module
 */
import { ProjectCache } from "../auth/projects.ts";
import { failureLine } from "../db/locked.ts";
import type { SpaceGuard } from "../db/space.ts";
import { Consumer } from "./consumer.ts";
import type { ResolveStacks } from "../db/symbolicate.ts";
import { createMerger, type Merger } from "./merger.ts";
import { createMergerThread } from "./merger_thread.ts";
import { type CommitRider, GroupCommitter } from "./producer.ts";
import { BatchWorker, SWEEP_INTERVAL_MS } from "./worker.ts";

/** The settings the queue reads; the process configuration supplies them. */
export interface QueueSettings {
  /** Batches processed at once by this process. */
  consumerConcurrency: number;
  /** Requests that may wait for a commit before new ones get 503. */
  maxPendingRequests: number;
  /** How long a project record is cached by the consumer. */
  projectCacheMs: number;
  /** Accepted distance between a signature's timestamp and receipt. */
  signatureMaxSkewMs: number;
  /**
   * Open chunks past which new entries are refused until the merger catches
   * up. @default {3000}
   */
  maxMergeBacklog?: number;
}

/** Batches waiting for this process's consumer past which entries are refused. */
const MAX_CONSUMER_BACKLOG = 2000;

/**
 * The producer's gate on storage's backlog: behind once open chunks or
 * batches waiting for the consumer pass their bound, and again ahead only
 * once both are at half of it (docs/storage.md#backlog).
 *
 * @example
 * ```ts
 * const behind = backlogGate({ chunks: 3000, batches: 2000 });
 * behind(3001, 0); // true
 * behind(2000, 0); // still true, until 1500
 * ```
 */
export function backlogGate(
  bounds: { chunks: number; batches: number },
): (chunks: number, batches: number) => boolean {
  let refusing = false;
  return (chunks, batches) => {
    const scale = refusing ? 0.5 : 1;
    refusing = chunks > bounds.chunks * scale ||
      batches > bounds.batches * scale;
    return refusing;
  };
}

/** Options of {@linkcode createPipeline}. */
export interface PipelineOptions {
  kv: Deno.Kv;
  config: QueueSettings;
  /** Clock. @default {Date.now} */
  now?: () => number;
  /**
   * Waits before a commit refused as locked is sent again
   * (docs/design.md#group-commit). @default a `setTimeout`
   */
  sleep?: (ms: number) => Promise<void>;
  /**
   * Mutations that ride each commit (the rate counters), committed within
   * 250 ms once the pipeline is started.
   */
  rider?: CommitRider;
  /**
   * Longest a commit of few entries waits for more (queue/producer.ts
   * `LINGER_MS`); 0: no lingering, a commit starts at once when none is in
   * flight (and a second beside it once `PIPELINE_ENTRIES` wait).
   */
  lingerMs?: number;
  /** Hand committed batches straight to this process's consumer. @default {true} */
  handOver?: boolean;
  /** Period of the sweeper. @default {1000} */
  sweepIntervalMs?: number;
  /**
   * Pause of the merger between rounds that found nothing to merge (0: no
   * merger). @default {1000}
   */
  mergeIntervalMs?: number;
  /**
   * The database file, when the merger is to run in a thread of its own
   * over it (queue/merger_thread.ts). @default the merger runs in this thread
   */
  mergeThread?: string;
  /** Told of failed processing attempts. @default logs to stderr */
  onError?: (batchId: string, error: unknown) => void;
  /**
   * The disk space guard of a database file: while it is closed nothing is
   * committed and no batch is processed. Started and stopped with the
   * pipeline.
   */
  space?: SpaceGuard;
  /**
   * Resolves the consumer's stacks through source maps elsewhere (the query
   * thread). @default in this thread
   */
  resolveStacks?: ResolveStacks;
}

/** The running queue of one process. */
export interface Pipeline {
  producer: GroupCommitter;
  consumer: Consumer;
  worker: BatchWorker;
  /** The merger (none when `mergeIntervalMs` is 0). */
  merger: Merger | undefined;
  /**
   * Starts the space guard, the sweeper, the merger and the producer's
   * commits of the rate counters.
   */
  start(): void;
  /** Commits what waits, finishes the work in hand and stops the timers. */
  stop(): Promise<void>;
}

/** One line per failure, naming the batch once. */
function logFailure(batchId: string, error: unknown): void {
  // A failed sweep belongs to no batch.
  const what = batchId === ""
    ? "Cannot sweep pending batches"
    : `Cannot process batch "${batchId}"`;
  console.error(failureLine(what, error));
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
  const { kv, config, space, sleep } = options;
  const now = options.now ?? Date.now;
  const onError = options.onError ?? logFailure;
  const consumer = new Consumer({
    kv,
    now,
    maxSkewMs: config.signatureMaxSkewMs,
    projects: new ProjectCache(kv, { ttlMs: config.projectCacheMs, now }),
    ...(sleep ? { sleep } : {}),
    ...(space ? { gate: space } : {}),
    ...(options.resolveStacks ? { resolveStacks: options.resolveStacks } : {}),
  });
  const worker = new BatchWorker({
    kv,
    consumer,
    now,
    concurrency: config.consumerConcurrency,
    sweepIntervalMs: options.sweepIntervalMs ?? SWEEP_INTERVAL_MS,
    onError,
  });
  const mergeIntervalMs = options.mergeIntervalMs ?? 1000;
  const onMergeError = options.onError
    ? { onError: (error: unknown) => onError("", error) }
    : {};
  const merger = mergeIntervalMs <= 0
    ? undefined
    : options.mergeThread
    ? createMergerThread({
      kvPath: options.mergeThread,
      intervalMs: mergeIntervalMs,
      ...onMergeError,
    })
    : createMerger({ kv, now, intervalMs: mergeIntervalMs, ...onMergeError });
  // Intake waits for storage, never the other way round: past either bound
  // entries are refused (503) until the backlog is half worked off.
  const gate = backlogGate({
    chunks: config.maxMergeBacklog ?? 3000,
    batches: MAX_CONSUMER_BACKLOG,
  });
  const handOver = options.handOver ?? true;
  const producer = new GroupCommitter({
    kv,
    now,
    maxPending: config.maxPendingRequests,
    behind: () => gate(merger?.backlog.chunks ?? 0, worker.backlog),
    ...(handOver ? { onCommitted: (batches) => worker.hand(batches) } : {}),
    ...(sleep ? { sleep } : {}),
    ...(options.rider ? { rider: options.rider } : {}),
    ...(options.lingerMs !== undefined ? { lingerMs: options.lingerMs } : {}),
    ...(space ? { gate: space } : {}),
  });
  return {
    producer,
    consumer,
    worker,
    merger,
    start() {
      space?.start();
      worker.start();
      merger?.start();
      producer.start();
    },
    async stop() {
      await producer.stop();
      await worker.stop();
      await merger?.stop();
      await space?.stop();
    },
  };
}

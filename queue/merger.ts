/**
 * Runs the merger (db/storage/merge.ts) in the background of a server: rounds
 * over every project, back to back while they find work, so that merging
 * goes on under traffic instead of waiting for quiet.
 *
 * @module
 */
import {
  mergeAll,
  type MergeResult,
  type QuietProjects,
} from "../db/storage/merge.ts";
import { type Backlog, emptyBacklog } from "../db/storage/tiers.ts";
import type { FromMergeThread, ToMergeThread } from "./merge_thread.ts";

/** Options of {@linkcode createMerger}. */
export interface MergerOptions {
  kv: Deno.Kv;
  /** Clock. @default {Date.now} */
  now?: () => number;
  /** Pause between rounds that merged nothing. @default {1000} */
  intervalMs?: number;
  /** Merges one round makes at most in each project. @default {32} */
  mergesPerRound?: number;
  /** Told of a failed round. */
  onError?: (error: unknown) => void;
  /** Told of the backlog after each round. */
  onBacklog?: (backlog: Backlog) => void;
}

/** A merger: it runs rounds once started. */
export interface Merger {
  /** Open chunks as of the last round (every project). */
  readonly backlog: Backlog;
  /** Runs the first round now, and rounds after it until stopped. */
  start(): void;
  /**
   * Runs a round now (after the one in hand), at most `maxMerges` merges in
   * each project (@default the merger's `mergesPerRound`), and resolves with
   * what it did; the cron of a platform without timers calls it.
   */
  round(options?: { maxMerges?: number }): Promise<MergeResult>;
  /** Waits for the round in hand and stops. */
  stop(): Promise<void>;
}

/**
 * Runs {@linkcode mergeAll} in rounds: the next round at once while rounds
 * find work, else after `intervalMs`. A round yields to the event loop
 * between merges and every few milliseconds of a chunk's work, so it shares the thread
 * with intake instead of waiting for quiet: under traffic it still runs.
 * What keeps it from falling behind for good is the producer's gate on
 * {@linkcode Merger.backlog} (docs/storage.md#backlog).
 *
 * @example
 * ```ts
 * const merger = createMerger({ kv });
 * merger.start();
 * await merger.stop();
 * ```
 */
export function createMerger(options: MergerOptions): Merger {
  const now = options.now ?? Date.now;
  const perRound = options.mergesPerRound ?? 32;
  let stopped = false;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let running: Promise<unknown> = Promise.resolve();
  let backlog = emptyBacklog();
  // Projects whose last round found nothing to do, skipped while nothing
  // is written to them: a server at rest lists no summaries every second.
  const quiet: QuietProjects = new Map();
  const run = async (maxMerges: number): Promise<MergeResult> => {
    const done = await mergeAll(options.kv, {
      now: now(),
      maxMerges,
      shouldStop: () => stopped,
      quiet,
    });
    backlog = done.backlog;
    options.onBacklog?.(backlog);
    return done;
  };
  const tick = () => {
    timer = undefined;
    if (stopped) return;
    running = running.then(async () => {
      let busy = false;
      try {
        busy = (await run(perRound)).merges > 0;
      } catch (error) {
        options.onError?.(error);
      }
      if (!stopped) {
        timer = setTimeout(tick, busy ? 0 : options.intervalMs ?? 1000);
      }
    });
  };
  return {
    get backlog() {
      return backlog;
    },
    start() {
      tick(); // the first round now: a round asked for next comes after it
    },
    round(roundOptions = {}) {
      const result = running.then(() =>
        run(roundOptions.maxMerges ?? perRound)
      );
      running = result.catch(() => {});
      return result;
    },
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await running;
    },
  };
}

/** Options of {@linkcode createMergerThread}. */
export interface MergerThreadOptions {
  /** The database file the thread opens. */
  kvPath: string;
  /** Pause between rounds that merged nothing. @default {1000} */
  intervalMs?: number;
  /** Told of a thread that failed; it is started again after `intervalMs`. */
  onError?: (error: unknown) => void;
}

/** Longest wait for the thread's last round at stop, ms. */
const THREAD_STOP_MS = 30_000;

/**
 * The merger of a database file, run in a Worker of its own
 * (queue/merge_thread.ts) with its own KV handle, so that merging takes
 * the machine's other core instead of the thread that answers requests.
 * The same {@linkcode Merger}: its backlog is the thread's, as of its last
 * round; `round()` asks the thread for a round and resolves with its
 * result.
 *
 * @example
 * ```ts
 * const merger = createMergerThread({ kvPath: "./data/kv.sqlite" });
 * merger.start();
 * await merger.stop();
 * ```
 */
export function createMergerThread(options: MergerThreadOptions): Merger {
  const intervalMs = options.intervalMs ?? 1000;
  let backlog = emptyBacklog();
  let thread: Worker | undefined;
  let stopped = false;
  let restart: ReturnType<typeof setTimeout> | undefined;
  let nextId = 0;
  const rounds = new Map<
    number,
    { resolve: (r: MergeResult) => void; reject: (e: Error) => void }
  >();
  let onStopped: (() => void) | undefined;
  const failed = (error: unknown) => {
    options.onError?.(error);
    for (const round of rounds.values()) {
      round.reject(new Error("Cannot merge: the merger's thread failed"));
    }
    rounds.clear();
    thread?.terminate();
    thread = undefined;
    onStopped?.();
    if (!stopped) restart = setTimeout(open, Math.max(intervalMs, 1000));
  };
  const open = () => {
    restart = undefined;
    const worker = new Worker(
      new URL("./merge_thread.ts", import.meta.url).href,
      { type: "module" },
    );
    worker.onmessage = (event: MessageEvent<FromMergeThread>) => {
      const message = event.data;
      if (message.type === "backlog") backlog = message.backlog;
      else if (message.type === "round") {
        const round = rounds.get(message.id);
        rounds.delete(message.id);
        if (message.result) round?.resolve(message.result);
        else round?.reject(new Error(`Cannot merge: ${message.error}`));
      } else if (message.type === "failed") {
        failed(new Error(`Cannot merge: ${message.error}`));
      } else onStopped?.();
    };
    worker.onerror = (event) => {
      event.preventDefault();
      failed(
        new Error(
          `Cannot merge: the merger's thread stopped: ${event.message}`,
        ),
      );
    };
    const start: ToMergeThread = {
      type: "start",
      kvPath: options.kvPath,
      intervalMs,
    };
    worker.postMessage(start);
    thread = worker;
  };
  return {
    get backlog() {
      return backlog;
    },
    start() {
      if (!thread && !stopped) open();
    },
    round(roundOptions = {}) {
      if (!thread) {
        return Promise.reject(
          new Error("Cannot merge: the merger is not running"),
        );
      }
      const id = nextId++;
      const message: ToMergeThread = {
        type: "round",
        id,
        ...(roundOptions.maxMerges === undefined
          ? {}
          : { maxMerges: roundOptions.maxMerges }),
      };
      return new Promise<MergeResult>((resolve, reject) => {
        rounds.set(id, { resolve, reject });
        thread!.postMessage(message);
      });
    },
    async stop() {
      stopped = true;
      clearTimeout(restart);
      const worker = thread;
      if (!worker) return;
      let timer: ReturnType<typeof setTimeout> | undefined;
      await new Promise<void>((resolve) => {
        onStopped = resolve;
        timer = setTimeout(resolve, THREAD_STOP_MS);
        worker.postMessage({ type: "stop" } satisfies ToMergeThread);
      });
      clearTimeout(timer);
      worker.terminate();
      thread = undefined;
    },
  };
}

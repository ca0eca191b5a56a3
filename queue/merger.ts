/**
 * Runs the merger (db/storage/merge.ts) in the background of a server: rounds
 * over every project, back to back while they find work, so that merging
 * goes on under traffic instead of waiting for quiet. Each round also goes
 * on with the project deletions cut short (db/deletion.ts), a bounded part
 * of them.
 *
 * @module
 */
import {
  mergeAll,
  type MergeResult,
  type QuietProjects,
} from "../db/storage/merge.ts";
import { type Backlog, emptyBacklog } from "../db/storage/tiers.ts";
import { DELETION_KEYS_PER_ROUND, finishDeletions } from "../db/deletion.ts";
import { failureLine } from "../db/locked.ts";

/** Options of {@linkcode createMerger}. */
export interface MergerOptions {
  kv: Deno.Kv;
  /** Clock. @default {Date.now} */
  now?: () => number;
  /** Pause between rounds that merged nothing. @default {1000} */
  intervalMs?: number;
  /** Merges one round makes at most in each project. @default {32} */
  mergesPerRound?: number;
  /**
   * Keys one round deletes at most of the projects whose deletion was cut
   * short. @default {DELETION_KEYS_PER_ROUND}
   */
  deletionKeysPerRound?: number;
  /** Told of a failed round. @default {logMergeFailure} */
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
 * Logs a failed merge round (or merger thread) as one line, saying
 * "Cannot merge" once, never a stack (docs/design.md#locked-database).
 */
export function logMergeFailure(error: unknown): void {
  console.error(failureLine("Cannot merge", error));
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
  const onError = options.onError ?? logMergeFailure;
  // Deletions cut short left for a later round: the next comes at once.
  let deleting = false;
  const finish = async () => {
    try {
      deleting = await finishDeletions(
        options.kv,
        options.deletionKeysPerRound ?? DELETION_KEYS_PER_ROUND,
      );
    } catch (error) {
      deleting = false;
      onError(new Error("Cannot finish deleting projects", { cause: error }));
    }
  };
  const run = async (maxMerges: number): Promise<MergeResult> => {
    const done = await mergeAll(options.kv, {
      now: now(),
      maxMerges,
      shouldStop: () => stopped,
      quiet,
      onProjectError: (projectId, error) =>
        onError(
          new Error(`Cannot merge project "${projectId}"`, { cause: error }),
        ),
    });
    backlog = done.backlog;
    options.onBacklog?.(backlog);
    if (!stopped) await finish();
    return done;
  };
  const tick = () => {
    timer = undefined;
    if (stopped) return;
    running = running.then(async () => {
      let busy = false;
      try {
        busy = (await run(perRound)).merges > 0 || deleting;
      } catch (error) {
        onError(error);
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

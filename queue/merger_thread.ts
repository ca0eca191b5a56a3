/**
 * The merger of a database file in a Worker of its own
 * (queue/merger_thread_main.ts) with its own KV handle, so that merging takes
 * the machine's other core instead of the thread that answers requests
 * (docs/storage.md#the-merger). It writes KV as a second process sharing the
 * file would; merges are safe against any other writer
 * (db/storage/merge.ts). No entry crosses between the threads: the Worker
 * tells its backlog after each round and answers the rounds asked of it.
 *
 * @module
 */
import type { MergeResult } from "../db/storage/merge.ts";
import { type Backlog, emptyBacklog } from "../db/storage/tiers.ts";
import { logMergeFailure, type Merger } from "./merger.ts";
import { OwnThread } from "../db/own_thread.ts";

/** What the server tells the merger's thread. */
export type ToMergeThread =
  | { type: "start"; kvPath: string; intervalMs: number }
  | { type: "round"; id: number; maxMerges?: number }
  | { type: "stop" };

/** What the merger's thread tells the server, beside the notices. */
export type FromMergeThread =
  | { type: "backlog"; backlog: Backlog }
  | { type: "round"; id: number; result?: MergeResult; error?: string };

/** Options of {@linkcode createMergerThread}. */
export interface MergerThreadOptions {
  /** The database file the thread opens. */
  kvPath: string;
  /** Pause between rounds that merged nothing. @default {1000} */
  intervalMs?: number;
  /**
   * Told of a thread that failed; a new one starts a second later.
   * @default {logMergeFailure}
   */
  onError?: (error: unknown) => void;
}

/** Longest wait for the thread's last round at stop, ms. */
const THREAD_STOP_MS = 30_000;

/** A round asked of the thread, waiting for its answer. */
interface Asked {
  resolve: (result: MergeResult) => void;
  reject: (error: Error) => void;
}

class MergerThread implements Merger {
  #backlog = emptyBacklog();
  #thread: OwnThread<ToMergeThread, FromMergeThread>;
  #nextId = 0;
  #asked = new Map<number, Asked>();

  constructor(options: MergerThreadOptions) {
    this.#thread = new OwnThread({
      url: new URL("./merger_thread_main.ts", import.meta.url),
      start: {
        type: "start",
        kvPath: options.kvPath,
        intervalMs: options.intervalMs ?? 1000,
      },
      stop: { type: "stop" },
      stopMs: THREAD_STOP_MS,
      receive: (message) => this.#receive(message),
      failed: (reason) => {
        (options.onError ?? logMergeFailure)(
          new Error(`Cannot merge: ${reason}`),
        );
        for (const asked of this.#asked.values()) {
          asked.reject(new Error("the merger's thread failed"));
        }
        this.#asked.clear();
      },
    });
  }

  get backlog(): Backlog {
    return this.#backlog;
  }

  start(): void {
    this.#thread.start();
  }

  round(options: { maxMerges?: number } = {}): Promise<MergeResult> {
    if (!this.#thread.running) {
      return Promise.reject(new Error("the merger is not running"));
    }
    const id = this.#nextId++;
    return new Promise<MergeResult>((resolve, reject) => {
      this.#asked.set(id, { resolve, reject });
      this.#thread.post({
        type: "round",
        id,
        ...(options.maxMerges === undefined
          ? {}
          : { maxMerges: options.maxMerges }),
      });
    });
  }

  async stop(): Promise<void> {
    await this.#thread.stop();
  }

  #receive(message: FromMergeThread): void {
    if (message.type === "backlog") this.#backlog = message.backlog;
    else if (message.type === "round") {
      const asked = this.#asked.get(message.id);
      this.#asked.delete(message.id);
      if (message.result) asked?.resolve(message.result);
      else asked?.reject(new Error(message.error));
    }
  }
}

/**
 * The merger of the database file `kvPath`, run in a thread of its own: the
 * same {@linkcode Merger}, its backlog the thread's as of its last round.
 *
 * @example
 * ```ts
 * const merger = createMergerThread({ kvPath: "./data/kv.sqlite" });
 * merger.start();
 * await merger.stop();
 * ```
 */
export function createMergerThread(options: MergerThreadOptions): Merger {
  return new MergerThread(options);
}

/**
 * A Worker of the service's own with its own KV handle (the merger's,
 * queue/merger_thread.ts, and the query thread's, db/query/thread.ts): started
 * with one message, asked to stop with another, and started again a second
 * after it fails. Both speak the same two messages back: `{ type: "failed",
 * error }` when it cannot go on, and `{ type: "stopped" }` once it closed its
 * handle; every other message is its owner's.
 *
 * @module
 */

/** What every own thread may tell its owner, beside the owner's messages. */
export type ThreadNotice =
  | { type: "failed"; error: string }
  | { type: "stopped" };

/**
 * A call an own thread had in hand when it stopped answering: the thread was
 * ended and starts again; the call is not run again in the server's thread
 * (the edges answer `503`, to be retried).
 */
export class ThreadStalledError extends Error {
  override name = "ThreadStalledError";
  constructor(thread: string, stalledMs: number) {
    super(
      `${thread} did not answer for ${
        Math.round(stalledMs / 1000)
      } s and was restarted; retry in a moment`,
    );
  }
}

/** Options of {@linkcode OwnThread}. */
export interface OwnThreadOptions<To, From> {
  /** The Worker's module. */
  url: URL;
  /** The first message of each Worker started. */
  start: To;
  /** The message asking it to close its handle and answer `stopped`. */
  stop: To;
  /** Every message but the notices. */
  receive: (message: From) => void;
  /** Told once per failure, after the Worker is ended. */
  failed: (reason: string) => void;
  /** Longest wait for `stopped` at stop, ms. */
  stopMs: number;
  /** Wait before a failed Worker is started again, ms. @default {1000} */
  restartMs?: number;
}

/** One Worker at a time, started again after a failure until stopped. */
export class OwnThread<To, From extends { type: string }> {
  #options: OwnThreadOptions<To, From>;
  #worker: Worker | undefined;
  #stopped = false;
  #restart: ReturnType<typeof setTimeout> | undefined;
  #onStopped: (() => void) | undefined;
  #stopping: Promise<void> | undefined;

  constructor(options: OwnThreadOptions<To, From>) {
    this.#options = options;
  }

  /** Whether a Worker runs (none before start, after stop, or in a restart's wait). */
  get running(): boolean {
    return this.#worker !== undefined;
  }

  /** Starts a Worker unless one runs or the thread was stopped. */
  start(): void {
    if (!this.#worker && !this.#stopped) this.#open();
  }

  /** Sends `message` to the Worker; `false` when none runs. */
  post(message: To): boolean {
    if (!this.#worker) return false;
    this.#worker.postMessage(message);
    return true;
  }

  /**
   * Ends a Worker that stopped answering its owner: told to `failed` as any
   * failure is, and started again after the wait.
   */
  restart(reason: string): void {
    if (this.#worker) this.#failed(reason);
  }

  /**
   * Asks the Worker to stop, waits for it (at most `stopMs`), ends it; a
   * second call waits for the first.
   */
  stop(): Promise<void> {
    this.#stopping ??= this.#stop();
    return this.#stopping;
  }

  async #stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#restart);
    const worker = this.#worker;
    if (!worker) return;
    let timer: ReturnType<typeof setTimeout> | undefined;
    await new Promise<void>((resolve) => {
      this.#onStopped = resolve;
      timer = setTimeout(resolve, this.#options.stopMs);
      worker.postMessage(this.#options.stop);
    });
    clearTimeout(timer);
    worker.terminate();
    this.#worker = undefined;
  }

  #open(): void {
    this.#restart = undefined;
    const worker = new Worker(this.#options.url.href, { type: "module" });
    worker.onmessage = (event: MessageEvent<From | ThreadNotice>) => {
      const message = event.data;
      if (message.type === "failed") {
        this.#failed((message as ThreadNotice & { type: "failed" }).error);
      } else if (message.type === "stopped") this.#onStopped?.();
      else this.#options.receive(message as From);
    };
    worker.onerror = (event) => {
      event.preventDefault();
      this.#failed(`the thread stopped: ${event.message}`);
    };
    worker.postMessage(this.#options.start);
    this.#worker = worker;
  }

  /** A Worker that cannot go on: ended, told once, started again later. */
  #failed(reason: string): void {
    this.#worker?.terminate();
    this.#worker = undefined;
    this.#onStopped?.();
    this.#options.failed(reason);
    if (!this.#stopped) {
      this.#restart = setTimeout(
        () => this.#open(),
        this.#options.restartMs ?? 1000,
      );
    }
  }
}

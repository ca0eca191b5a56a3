/**
 * The reads of a database file in a Worker of its own
 * (db/query/thread_main.ts) with its own KV handle: a search's reading,
 * inflating and matching take the machine's other core instead of the thread
 * that answers the endpoint (docs/query.md#a-thread-of-its-own). Only a
 * request's options and its answer cross between the threads; a clock does
 * not (the thread reads its own), and a histogram's deadline crosses as the
 * time left. A thread that fails is one line in the log: the reads it had in
 * hand run again in this thread, as every read does until a new thread
 * starts a second later. A thread that holds reads and has not answered for
 * {@linkcode STALL_MS} (its loop held by one task: no read yields that
 * long) is ended the same way, but its reads fail with
 * {@linkcode ThreadStalledError} rather than run again here, where
 * they would hold the endpoint.
 *
 * @module
 */
import { InexactReadError } from "./consistent.ts";
import { InvalidQueryError } from "./filter.ts";
import { HistogramCutError } from "./histogram.ts";
import {
  localReads,
  OPTIONS_AT,
  READ_NAMES,
  type ReadName,
  type Reads,
} from "./reads.ts";
import { OwnThread, ThreadStalledError } from "../own_thread.ts";
import { isLocalFile } from "../open.ts";

/** What the server tells the query thread. */
export type ToQueryThread =
  | { type: "start"; kvPath: string }
  | {
    type: "read";
    id: number;
    read: ReadName;
    /** The read's arguments, its options last as they cross. */
    args: unknown[];
  }
  | { type: "ping" }
  | { type: "stop" };

/** What the query thread tells the server, beside the notices. */
export type FromQueryThread =
  | { type: "pong" }
  | { type: "read"; id: number; result: unknown }
  | { type: "read"; id: number; error: { name: string; message: string } };

/** Options of {@linkcode createQueryThread}. */
export interface QueryThreadOptions {
  /** The database file the thread opens. */
  kvPath: string;
  /**
   * The same reads in this thread: for every read while no thread runs, and
   * again for the reads a failed thread had in hand.
   */
  local: Reads;
  /** Told of a thread that failed. @default one line on stderr */
  onError?: (error: unknown) => void;
  /**
   * How long a thread holding reads may go without answering before it is
   * ended. @default {STALL_MS}
   */
  stallMs?: number;
  /** The Worker's module (tests give one of their own). @default thread_main.ts */
  url?: URL;
  /**
   * How long a new Worker may take to load before it counts as silent.
   * @default {LOAD_MS}
   */
  loadMs?: number;
}

/** The reads of a thread of their own, and its end. */
export interface QueryThread extends Reads {
  /** Ends the thread once it closed its KV handle (or after 5 s). */
  stop(): Promise<void>;
}

/** Longest wait for the thread to close its handle at stop, ms. */
const THREAD_STOP_MS = 5_000;
/**
 * How long a thread holding reads may go without answering (a read, or the
 * ping sent every fifth of it): far past any one task of a read, which
 * yields between chunks and within a budget of seconds.
 */
export const STALL_MS = 15_000;
/** How long a new Worker may take to load before it counts as silent, ms. */
export const LOAD_MS = 30_000;

/** A read sent to the thread, waiting for its answer. */
interface Asked {
  read: ReadName;
  args: unknown[];
  resolve: (result: unknown) => void;
  reject: (error: Error) => void;
}

/**
 * `options` as they cross to the thread: without a clock, and with a
 * deadline (a reading of the caller's clock) as the milliseconds left.
 */
export function portableOptions(options: unknown): Record<string, unknown> {
  const { clock, deadline, budget, ...rest } = (options ?? {}) as {
    clock?: () => number;
    deadline?: number;
    budget?: Record<string, unknown>;
  };
  const portable: Record<string, unknown> = rest;
  if (budget !== undefined) {
    const { clock: _, ...counted } = budget;
    portable.budget = counted;
  }
  if (deadline !== undefined) {
    portable.deadlineInMs = deadline - (clock ? clock() : performance.now());
  }
  return portable;
}

/**
 * A read's arguments as they cross: its options, or `{}` where they were
 * left out, last.
 */
function crossing(read: ReadName, args: unknown[]): unknown[] {
  const at = OPTIONS_AT[read];
  return [...args.slice(0, at), portableOptions(args[at])];
}

/** The error a read failed with in the thread, as its own class where known. */
export function errorFromThread(
  error: { name: string; message: string },
): Error {
  if (error.name === "InvalidQueryError") {
    return new InvalidQueryError(error.message);
  }
  if (error.name === "InexactReadError") return new InexactReadError();
  if (error.name === "HistogramCutError") return new HistogramCutError();
  const other = new Error(error.message);
  // The name carries a locked database (`KvLockedError`) to the edges' 503.
  other.name = error.name;
  return other;
}

class ReadThread {
  #local: Reads;
  #thread: OwnThread<ToQueryThread, FromQueryThread>;
  #nextId = 0;
  #asked = new Map<number, Asked>();
  #started = false;
  #stallMs: number;
  #loadMs: number;
  /** Whether the Worker running has spoken yet (it answers its start). */
  #heard = false;
  /** When it last did. */
  #heardAt = 0;
  #watch: ReturnType<typeof setInterval> | undefined;

  constructor(options: QueryThreadOptions) {
    this.#local = options.local;
    this.#stallMs = options.stallMs ?? STALL_MS;
    this.#loadMs = options.loadMs ?? LOAD_MS;
    const report = options.onError ??
      ((error: unknown) => console.error(String(error)));
    this.#thread = new OwnThread({
      url: options.url ?? new URL("./thread_main.ts", import.meta.url),
      start: { type: "start", kvPath: options.kvPath },
      stop: { type: "stop" },
      stopMs: THREAD_STOP_MS,
      receive: (message) => this.#receive(message),
      failed: (reason) => {
        this.#heard = false;
        report(new Error(`Cannot read in the query thread: ${reason}`));
        void this.#readHere();
      },
    });
  }

  read(read: ReadName, args: unknown[]): Promise<unknown> {
    // Started at the first read: a service nothing reads costs nothing more
    // at rest.
    if (!this.#started) {
      this.#started = true;
      this.#thread.start();
    }
    if (!this.#thread.running) return this.#run(read, args);
    const id = this.#nextId++;
    return new Promise((resolve, reject) => {
      this.#asked.set(id, { read, args, resolve, reject });
      this.#watching();
      try {
        this.#thread.post({
          type: "read",
          id,
          read,
          args: crossing(read, args),
        });
      } catch {
        // Arguments that cannot cross (a function in a filter): read here.
        this.#asked.delete(id);
        this.#run(read, args).then(resolve, reject);
      }
    });
  }

  async stop(): Promise<void> {
    await this.#thread.stop();
    this.#unwatch();
    // Answered before the caller closes the handle they read with.
    await this.#readHere();
  }

  #run(read: ReadName, args: unknown[]): Promise<unknown> {
    const local = this.#local[read] as (...args: unknown[]) => Promise<unknown>;
    return local(...args);
  }

  #receive(message: FromQueryThread): void {
    this.#heard = true;
    this.#heardAt = performance.now();
    if (message.type === "pong") return;
    const asked = this.#asked.get(message.id);
    this.#asked.delete(message.id);
    if ("error" in message) asked?.reject(errorFromThread(message.error));
    else asked?.resolve(message.result);
  }

  /** Pings the thread while it holds reads, and ends it once it is silent. */
  #watching(): void {
    if (this.#watch !== undefined) return;
    const period = Math.max(10, Math.round(this.#stallMs / 5));
    let tickAt = this.#heardAt = performance.now();
    this.#watch = setInterval(() => {
      if (this.#asked.size === 0) return this.#unwatch();
      const now = performance.now();
      // A tick this thread was too busy to run on time judges nothing: the
      // Worker's answers may be waiting behind it.
      const late = now - tickAt > 2 * period;
      tickAt = now;
      const silentMs = now - this.#heardAt;
      // A Worker still loading its modules has longer.
      const most = this.#heard
        ? this.#stallMs
        : Math.max(this.#stallMs, this.#loadMs);
      if (late || silentMs <= most) {
        this.#thread.post({ type: "ping" });
        return;
      }
      this.#unwatch();
      const asked = [...this.#asked.values()];
      this.#asked.clear();
      for (const { reject } of asked) {
        reject(new ThreadStalledError("The query thread", silentMs));
      }
      this.#thread.restart(
        `no answer for ${
          Math.round(silentMs)
        } ms with ${asked.length} reads in hand`,
      );
    }, period);
  }

  #unwatch(): void {
    clearInterval(this.#watch);
    this.#watch = undefined;
  }

  /** The reads a thread that ended had in hand, run in this thread. */
  #readHere(): Promise<unknown> {
    const asked = [...this.#asked.values()];
    this.#asked.clear();
    return Promise.allSettled(
      asked.map(({ read, args, resolve, reject }) =>
        this.#run(read, args).then(resolve, reject)
      ),
    );
  }
}

/**
 * The reads of the database file `kvPath`, run in a thread of their own: the
 * same {@linkcode Reads}, answers and errors alike.
 *
 * @example
 * ```ts
 * const reads = createQueryThread({ kvPath: "./data/kv.sqlite", local: localReads(kv) });
 * const page = await reads.queryLogs(projectId, { limit: 10 });
 * await reads.stop();
 * ```
 */
export function createQueryThread(options: QueryThreadOptions): QueryThread {
  const thread = new ReadThread(options);
  const reads = Object.fromEntries(
    READ_NAMES.map((name) => [
      name,
      (...args: unknown[]) => thread.read(name, args),
    ]),
  ) as unknown as Reads;
  return { ...reads, stop: () => thread.stop() };
}

/**
 * The query thread of the database at `kvPath` when `enabled`
 * (`QUERY_THREAD`) and it is a file on this machine; `null` for `:memory:`,
 * a KV Connect URL or Deno Deploy's own KV, whose reads run in this thread.
 *
 * @example
 * ```ts
 * const thread = queryThreadOf(kv, config.kvPath, config.queryThread);
 * await thread?.stop();
 * ```
 */
export function queryThreadOf(
  kv: Deno.Kv,
  kvPath: string | undefined,
  enabled: boolean,
): QueryThread | null {
  return enabled && isLocalFile(kvPath)
    ? createQueryThread({ kvPath, local: localReads(kv) })
    : null;
}

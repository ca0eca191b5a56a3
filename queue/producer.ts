/**
 * The producer side of the queue: a group commit. Requests hand in entries;
 * while one KV commit is in flight the next ones wait, and the following
 * commit carries all of them in one atomic operation, as batches written
 * under `pending_batches/<id>` (a second commit starts beside the first once
 * {@linkcode PIPELINE_ENTRIES} wait). A request's promise resolves only once
 * its entry is committed. The mutations of a rider (the rate counters) go with
 * the next commit; once started, the producer makes a commit for them alone
 * when none came within {@linkcode RIDER_INTERVAL_MS} (and has no timer
 * while the rider has nothing waiting).
 *
 * It must not read KV or process entries: that is the consumer's job.
 *
 * @module
 */
import { batchSliceKey, pendingBatchKey } from "../db/keys.ts";
import { ATOMIC_MAX_MUTATIONS, commitRetryingLocked } from "../db/kv.ts";
import { SLICE_BYTES, splitBytes } from "../db/blob.ts";
import type { QueuedEntry } from "../domain/entry.ts";
import { createId } from "../domain/ids.ts";
import {
  type BatchHeader,
  encodeBatchHeader,
  type HandedBatch,
  sealBatch,
} from "./batch.ts";
import { type After, BusyTicker, timeout } from "./ticker.ts";

/**
 * Mutations the consumer's result commit makes per entry at most: 4 for a
 * rejected one (reason counter, running total, ring slot, kept content),
 * fewer for an accepted one (its chunk's share and its counters).
 */
export const RESULT_MUTATIONS_PER_ENTRY = 4;
/** A result commit's other mutations: pending key, slices, progress, totals. */
const RESULT_OVERHEAD_MUTATIONS = 20;
/** Entries per batch: keeps the consumer's result commit under KV's cap. */
export const MAX_BATCH_ENTRIES = 200;
if (
  MAX_BATCH_ENTRIES * RESULT_MUTATIONS_PER_ENTRY + RESULT_OVERHEAD_MUTATIONS >
    ATOMIC_MAX_MUTATIONS
) {
  throw new Error("MAX_BATCH_ENTRIES does not fit KV's mutation cap");
}
/** UTF-16 units (at most ~750 KB of UTF-8, under KV's 800 KiB) and entries per commit. */
const MAX_COMMIT_CHARS = 250_000;
const MAX_COMMIT_ENTRIES = 800;
/** Mutations per commit, leaving room under KV's cap. */
export const MAX_COMMIT_MUTATIONS = ATOMIC_MAX_MUTATIONS - 10;
/**
 * Longest a rider's mutations wait for a commit of entries before one is
 * made for them alone: the rate counters' sync period
 * (docs/design.md#across-instances).
 */
export const RIDER_INTERVAL_MS = 250;
/**
 * Longest the first of few waiting entries waits for others before their
 * commit starts (docs/design.md#group-commit): a commit costs about the same
 * CPU whatever it carries, so at moderate rates a few milliseconds of
 * waiting divide the commits by several.
 */
export const LINGER_MS = 8;
/**
 * Entries waiting from which a commit starts at once, without lingering;
 * nor does one linger after a commit that carried as many (a burst, where
 * commits are large already and a wait would only leave KV idle).
 */
export const LINGER_ENTRIES = 64;
/**
 * Entries waiting from which a second commit starts while one is in flight
 * (never a third): in a burst the next commit is built and sealed while the
 * one before is written, instead of after it; at moderate rates one commit
 * at a time carries more entries.
 */
export const PIPELINE_ENTRIES = 32;
/** Commits in flight at most. */
const MAX_COMMITS_IN_FLIGHT = 2;

/**
 * The rejection of {@linkcode GroupCommitter.submit} when too many requests
 * or characters wait, or storage is behind.
 */
export class OverloadedError extends Error {
  override name = "OverloadedError";
  constructor(
    message = "Cannot queue the entry now: too many requests are waiting",
  ) {
    super(message);
  }
}

/** Rejects the entries of a commit that KV refused or failed. */
export class CommitFailedError extends Error {
  override name = "CommitFailedError";
}

/** Rejects entries while the gate holds writes back (the disk is full). */
export class WritesHeldError extends CommitFailedError {
  override name = "WritesHeldError";
  constructor() {
    super("Cannot queue the entry now: the database's disk is full");
  }
}

/**
 * Decides whether KV may be written now and hears why commits failed (the
 * disk space guard, docs/design.md#full-disk).
 */
export interface WriteGate {
  /** Whether a commit may be made now. */
  open(): boolean;
  /** Told of the error of every failed commit. */
  failed(error: unknown): void;
}

/**
 * Something else that rides each commit (the rate counters): it adds up to
 * `budget` mutations to `op`, and hears whether the commit succeeded. Its
 * mutations wait at most {@linkcode ProducerOptions.riderIntervalMs} once
 * the producer is started.
 */
export interface CommitRider {
  /** Whether it has mutations waiting (a commit is made for them alone). */
  pending(): boolean;
  /** Adds at most `budget` mutations; returns a callback told the outcome. */
  ride(op: Deno.AtomicOperation, budget: number): (ok: boolean) => void;
  /**
   * Calls `wake` (from then on) whenever mutations come to wait where none
   * did: the producer's tick runs only while the rider has some.
   */
  watch(wake: () => void): void;
}

/** Options of {@linkcode GroupCommitter}. */
export interface ProducerOptions {
  kv: Deno.Kv;
  /** Requests that may wait for a commit before new ones are refused. */
  maxPending: number;
  /**
   * UTF-16 units of entries that may wait for a commit before new ones are
   * refused: bounds memory when entries are large. @default {16777216}
   */
  maxPendingChars?: number;
  /** Clock. @default {Date.now} */
  now?: () => number;
  /**
   * Waits before a commit refused as locked is sent again
   * (docs/design.md#group-commit). @default a `setTimeout`
   */
  sleep?: (ms: number) => Promise<void>;
  /** Given the batches of each successful commit. */
  onCommitted?: (batches: HandedBatch[]) => void;
  /** Whether storage is behind (docs/storage.md#backlog): entries are refused. */
  behind?: () => boolean;
  /** Other mutations each commit takes along (the rate counters). */
  rider?: CommitRider;
  /**
   * Longest, once started, the rider's mutations wait before the producer
   * commits them alone when no commit of entries took them. @default {250}
   */
  riderIntervalMs?: number;
  /**
   * While closed, entries are refused at once and nothing is committed, the
   * rider's mutations included.
   */
  gate?: WriteGate;
  /**
   * Longest the oldest waiting entry waits for others before a commit of
   * fewer than {@linkcode LINGER_ENTRIES} starts; 0: at once.
   * @default {LINGER_MS}
   */
  lingerMs?: number;
  /**
   * Runs `fire` once after `ms` (the linger's wait and the rider's tick);
   * returns a function that cancels it. @default a `setTimeout`
   */
  after?: After;
}

/** A batch of one commit, before it is handed over. */
interface Batch {
  id: string;
  slices: number;
  items: Waiting[];
}

interface Waiting {
  entry: QueuedEntry;
  json: string;
  /** When it was queued (the producer's clock). */
  at: number;
  resolve: () => void;
  reject: (error: unknown) => void;
}

/**
 * Group commit of queued entries into KV-held batches.
 *
 * @example
 * ```ts
 * const producer = new GroupCommitter({ kv, maxPending: 10_000 });
 * producer.start();
 * await producer.submit(entry); // committed to KV from here on
 * await producer.stop();
 * ```
 */
export class GroupCommitter {
  #waiting: Waiting[] = [];
  #waitingChars = 0;
  #inFlight = new Set<Promise<void>>();
  #options: ProducerOptions;
  #now: () => number;
  /** The rider's tick, while started. */
  #ticker: BusyTicker | undefined;
  /** Cancels the wait of a lingering commit. */
  #lingering: (() => void) | undefined;
  /** Commit what waits now, without lingering (a flush). */
  #urgent = false;
  /** The linger's wait ran out: the next commit starts at once. */
  #lingered = false;
  /** Entries the last commit carried. */
  #lastCount = 0;

  constructor(options: ProducerOptions) {
    this.#options = options;
    this.#now = options.now ?? Date.now;
  }

  /** Requests waiting for a commit, those in flight excluded. */
  get backlog(): number {
    return this.#waiting.length;
  }

  /**
   * Queues `entry`; resolves once it is committed to KV. Rejects at once
   * with {@linkcode OverloadedError} when too many requests or characters
   * wait or storage is behind, at once with {@linkcode WritesHeldError}
   * while the gate is closed, and with {@linkcode CommitFailedError} when the
   * commit fails.
   */
  submit(entry: QueuedEntry): Promise<void> {
    if (this.#waiting.length >= this.#options.maxPending) {
      return Promise.reject(new OverloadedError());
    }
    if (this.#options.gate?.open() === false) {
      return Promise.reject(new WritesHeldError());
    }
    if (this.#options.behind?.()) {
      return Promise.reject(
        new OverloadedError(
          "Cannot queue the entry now: storage is catching up with a backlog",
        ),
      );
    }
    const json = JSON.stringify(entry);
    const maxChars = this.#options.maxPendingChars ?? 16 * 1024 * 1024;
    if (
      this.#waiting.length > 0 && this.#waitingChars + json.length > maxChars
    ) {
      return Promise.reject(new OverloadedError());
    }
    this.#waitingChars += json.length;
    return new Promise((resolve, reject) => {
      this.#waiting.push({ entry, json, at: this.#now(), resolve, reject });
      this.#pump();
    });
  }

  /**
   * Starts committing the rider's mutations alone `riderIntervalMs` after
   * they come to wait, and every `riderIntervalMs` while some still wait.
   */
  start(): void {
    const rider = this.#options.rider;
    if (!rider || this.#ticker) return;
    const ticker = new BusyTicker(
      this.#options.riderIntervalMs ?? RIDER_INTERVAL_MS,
      () => rider.pending(),
      () => this.#pump(),
      this.#options.after,
    );
    this.#ticker = ticker;
    rider.watch(() => ticker.wake());
    if (rider.pending()) ticker.wake();
  }

  /** Stops the rider's tick and commits what waits. */
  async stop(): Promise<void> {
    this.#ticker?.stop();
    this.#ticker = undefined;
    await this.flush();
  }

  /**
   * Commits what waits, the rider's mutations included, and resolves once
   * nothing waits and no commit is in flight.
   */
  async flush(): Promise<void> {
    this.#urgent = true;
    try {
      this.#pump();
      while (this.#inFlight.size > 0) await Promise.all(this.#inFlight);
    } finally {
      this.#urgent = false;
    }
  }

  #pump(): void {
    const inFlight = this.#inFlight.size;
    if (inFlight >= MAX_COMMITS_IN_FLIGHT) return;
    if (inFlight > 0 && this.#waiting.length < PIPELINE_ENTRIES) return;
    const rider = this.#options.rider;
    // Nothing to commit: the gate is not asked (its look may read the disk).
    if (this.#waiting.length === 0 && !rider?.pending()) return;
    if (this.#options.gate?.open() === false) {
      // Nothing is written while the gate is closed: every waiting request
      // is answered now, and the rider keeps its mutations for later.
      const refused = this.#waiting.splice(0);
      this.#waitingChars = 0;
      const error = new WritesHeldError();
      for (const w of refused) w.reject(error);
      return;
    }
    if (this.#linger()) return;
    this.#lingered = false;
    const commit: Promise<void> = this.#commit().finally(() => {
      this.#inFlight.delete(commit);
      this.#pump();
    });
    this.#inFlight.add(commit);
  }

  /**
   * Whether the commit of what waits is held back a little for more
   * entries: while fewer than {@linkcode LINGER_ENTRIES} wait, the last
   * commit carried fewer too, and the oldest has waited less than
   * `lingerMs` (then a timer pumps again).
   */
  #linger(): boolean {
    const lingerMs = this.#options.lingerMs ?? LINGER_MS;
    const oldest = this.#waiting[0];
    if (
      this.#urgent || this.#lingered || lingerMs <= 0 || oldest === undefined ||
      this.#waiting.length >= LINGER_ENTRIES ||
      this.#lastCount >= LINGER_ENTRIES ||
      this.#waitingChars >= MAX_COMMIT_CHARS
    ) {
      this.#lingering?.();
      this.#lingering = undefined;
      return false;
    }
    // One timer for the oldest entry: those after it wait with it.
    if (this.#lingering) return true;
    const left = oldest.at + lingerMs - this.#now();
    if (left <= 0) return false;
    const after = this.#options.after ?? timeout;
    this.#lingering = after(left, () => {
      this.#lingering = undefined;
      this.#lingered = true;
      this.#pump();
    });
    return true;
  }

  async #commit(): Promise<void> {
    const { kv } = this.#options;
    let count = 0;
    let chars = 0;
    while (
      count < this.#waiting.length && count < MAX_COMMIT_ENTRIES &&
      (count === 0 ||
        chars + this.#waiting[count]!.json.length <= MAX_COMMIT_CHARS)
    ) {
      chars += this.#waiting[count]!.json.length;
      count++;
    }
    const taken = this.#waiting.splice(0, count);
    this.#lastCount = count;
    this.#waitingChars -= chars;
    let batches: Batch[] = [];
    let told: ((ok: boolean) => void) | undefined;
    let versionstamp: string | undefined;
    let failure: unknown;
    // Everything that could throw is inside: every request taken is answered.
    try {
      const op = kv.atomic();
      // A commit of the rider alone is built at once, awaiting nothing.
      if (taken.length > 0) {
        batches = await this.#addBatches(op, taken, this.#now());
      }
      const mutations = batches.reduce((n, b) => n + 1 + b.slices, 0);
      told = this.#options.rider?.ride(op, MAX_COMMIT_MUTATIONS - mutations);
      // A commit refused as locked wrote nothing: the same one goes again.
      const result = await commitRetryingLocked(
        () => op.commit(),
        this.#options,
      );
      // The operation checks nothing: it commits, or throws.
      if (result.ok) versionstamp = result.versionstamp;
    } catch (error) {
      failure = error;
      this.#options.gate?.failed(error);
    }
    told?.(versionstamp !== undefined);
    if (versionstamp !== undefined) {
      for (const w of taken) w.resolve();
      if (batches.length > 0) {
        this.#options.onCommitted?.(batches.map(({ id, slices, items }) => ({
          id,
          versionstamp,
          slices,
          entries: items.map((w) => w.entry),
          texts: items.map((w) => w.json),
        })));
      }
    } else {
      const error = new CommitFailedError(
        `Cannot commit ${taken.length} entries to KV`,
        { cause: failure },
      );
      for (const w of taken) w.reject(error);
    }
  }

  /**
   * Cuts the entries taken into batches, seals each (queue/batch.ts) and
   * adds their mutations to `op`.
   */
  async #addBatches(
    op: Deno.AtomicOperation,
    taken: Waiting[],
    now: number,
  ): Promise<Batch[]> {
    const batches: Batch[] = [];
    const cuts: Waiting[][] = [];
    for (let from = 0; from < taken.length;) {
      let to = from + 1;
      let size = taken[from]!.json.length;
      while (
        to < taken.length && to - from < MAX_BATCH_ENTRIES &&
        size + taken[to]!.json.length < SLICE_BYTES
      ) {
        size += taken[to]!.json.length;
        to++;
      }
      cuts.push(taken.slice(from, to));
      from = to;
    }
    // Named before sealing, in the order taken: a batch sealed sooner than
    // one taken before it still sorts after it, so batches are processed in
    // the order their entries arrived.
    const ids = cuts.map(() => createId(now));
    const sealed = await Promise.all(
      cuts.map((items) =>
        sealBatch(this.#options.kv, `[${items.map((w) => w.json).join(",")}]`)
      ),
    );
    cuts.forEach((items, i) => {
      const { head, rest } = splitBytes(sealed[i]!);
      const id = ids[i]!;
      const header: BatchHeader = {
        createdAt: now,
        count: items.length,
        slices: 1 + rest.length,
        attempts: 0,
      };
      op.set(pendingBatchKey(id), encodeBatchHeader(header));
      [head, ...rest].forEach((slice, n) =>
        op.set(batchSliceKey(id, n), slice)
      );
      batches.push({ id, slices: header.slices, items });
    });
    return batches;
  }
}

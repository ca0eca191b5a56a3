/**
 * Live tail as server-sent events. Every `intervalMs` the stream asks the
 * query functions for the entries after the last one sent and sends each as
 * an `entry` event whose `id` is the entry's id and whose data is its
 * rendered row. A browser that reconnects sends that id back as
 * `Last-Event-ID` and the stream resumes right after it: no entry missed,
 * none sent twice. A stream ends after `maxMs` (the browser reconnects about
 * 2 s later, as the stream's `retry: 2000` asks), so a signed-out session is
 * noticed and no stream lives forever. A resume point older than
 * {@linkcode TAIL_RESUME_WINDOW_MS} before the stream's start starts there.
 *
 * A client that does not read is not sent more: past
 * {@linkcode TAIL_QUEUE_BYTES} queued the stream skips its polls, and
 * after {@linkcode TAIL_STALL_MS} of that (or, once ended, that long
 * without its client taking everything) it is cut and its queue dropped. A stream gives its
 * slot back only when nothing it queued is held any longer, so the slots
 * bound the memory the streams hold too (64 × 1 MiB and a row).
 *
 * Every open stream polls the database, so their number is bounded per
 * session, per account (however many sessions it signs in) and in all
 * ({@linkcode TailSlots}); past any bound the answer is `429` with a
 * sentence the page shows.
 *
 * @module
 */
import { Slots } from "../query_slots.ts";
import type { LogRecord } from "../../domain/entry.ts";
import type { Filter, Reads } from "../source.ts";
import { lockedAsLine } from "../../db/locked.ts";
import { firstIdAt } from "../../domain/ids.ts";
import type { TailTiming } from "./common.ts";

/** Options of {@linkcode tailStream}. */
export interface TailStreamOptions {
  /** What each poll reads with. */
  reads: Reads;
  projectId: string;
  filter: Filter;
  /**
   * Id of the last entry the browser shows; one older than
   * {@linkcode TAIL_RESUME_WINDOW_MS} before now resumes from then.
   */
  after: string;
  now: () => number;
  timing: TailTiming;
  /** Renders one entry's row. */
  row: (record: LogRecord) => string | Promise<string>;
  /**
   * Asked before every poll: `false` ends the stream (the session was
   * signed out, expired or removed, or lost the project). @default always
   */
  alive?: () => Promise<boolean>;
  /**
   * Called once when the stream holds nothing any longer: cancelled by its
   * client, closed once its client took everything queued, or cut (its
   * queue dropped) after {@linkcode TAIL_STALL_MS}. Not when it merely ends
   * with bytes still queued.
   */
  onClose?: () => void;
}

/** Options of {@linkcode TailSlots}. */
export interface TailSlotsOptions {
  /** Streams one session may hold open at once. @default {4} */
  perSession?: number;
  /**
   * Streams one account may hold open at once, all its sessions together,
   * so that one account cannot hold the whole dashboard's. @default {8}
   */
  perAccount?: number;
  /** Streams open at once in all. @default {64} */
  total?: number;
}

/**
 * The live tails open at once, per session, per account and in all, kept in
 * memory (a stream belongs to this process).
 *
 * @example
 * ```ts
 * const slots = new TailSlots({ perSession: 4, perAccount: 8, total: 64 });
 * const slot = slots.take(session.id, session.account.email);
 * if (typeof slot === "string") return c.text(slot, 429);
 * return tailStream({ ...options, onClose: slot });
 * ```
 */
export class TailSlots {
  readonly perSession: number;
  readonly perAccount: number;
  readonly total: number;
  #slots: Slots;

  constructor(options: TailSlotsOptions = {}) {
    this.perSession = options.perSession ?? 4;
    this.perAccount = options.perAccount ?? 8;
    this.total = options.total ?? 64;
    this.#slots = new Slots([
      {
        most: this.perSession,
        why:
          `Cannot open more than ${this.perSession} live tails at once in one session: pause the live tail in another tab`,
      },
      {
        most: this.perAccount,
        why:
          `Cannot open more than ${this.perAccount} live tails at once for one account: pause the live tail in another tab or browser`,
      },
    ], {
      most: this.total,
      why:
        `Cannot open more than ${this.total} live tails at once on this dashboard: try again in a minute`,
    });
  }

  /** Streams open now. */
  get open(): number {
    return this.#slots.open;
  }

  /**
   * Takes a slot for `sessionId` of account `accountId`: the function that
   * gives it back (once, however often it is called), or why there is none.
   */
  take(sessionId: string, accountId: string): (() => void) | string {
    return this.#slots.take([sessionId, accountId]);
  }
}

/**
 * Bytes of events a stream keeps queued for a client that does not read
 * them: past it, the stream reads no more entries until the client has
 * taken some (a poll stops between two rows, so one row more at most).
 */
export const TAIL_QUEUE_BYTES = 1024 * 1024;

/**
 * How long a stream may stay at {@linkcode TAIL_QUEUE_BYTES} queued (its
 * client not reading it below that), and how long a stream that has ended may wait for its
 * client to take what is left: past it the stream is cut, its queue
 * dropped and its slot given back. The browser reconnects and resumes
 * after the last entry it got.
 */
export const TAIL_STALL_MS = 30_000;

/**
 * How far before a stream's start its resume point (`Last-Event-ID`, or
 * `after`) may reach: an older one starts this long before, so that a made-up
 * id cannot replay a project's history. One stream's length, so that a
 * pause shorter than that misses nothing.
 */
export const TAIL_RESUME_WINDOW_MS = 5 * 60_000;

/** Entries one poll reads at most. */
const TAIL_PAGE = 200;

const encoder = new TextEncoder();

/**
 * One SSE event; every line of `data` gets its own `data:` field.
 *
 * @example
 * ```ts
 * sseEvent("entry", "0193…", "<details>…</details>");
 * ```
 */
export function sseEvent(event: string, id: string, data: string): string {
  const lines = data.split(/\r\n|\r|\n/).map((line) => `data: ${line}`);
  return `event: ${event}\nid: ${id}\n${lines.join("\n")}\n\n`;
}

/**
 * The resume point a stream starting at `started` uses for `after`: `after`
 * itself, or {@linkcode TAIL_RESUME_WINDOW_MS} before `started` if older.
 *
 * @example
 * ```ts
 * resumeAfter("0".repeat(28), Date.now()); // five minutes ago
 * ```
 */
export function resumeAfter(after: string, started: number): string {
  const edge = firstIdAt(started - TAIL_RESUME_WINDOW_MS);
  return after < edge ? edge : after;
}

/**
 * One stream's polls. Live, it reads the entries after the last one sent
 * every `intervalMs`, unless {@linkcode TAIL_QUEUE_BYTES} are queued;
 * ended (`maxMs`, the session gone, a read failing) it reads no more and
 * closes once its client has taken everything queued. Its slot (`onClose`)
 * is given back only when nothing it queued is held any longer: closed
 * empty, cut after {@linkcode TAIL_STALL_MS}, or cancelled by the client.
 */
class TailPolls {
  #options: TailStreamOptions;
  #controller: ReadableStreamDefaultController<Uint8Array>;
  #after: string;
  #started: number;
  #lastWrite: number;
  /** When the queue was first seen full, while it stays full. */
  #fullSince: number | undefined;
  /** Once ended: when it is cut if its client has not taken everything. */
  #cutAt: number | undefined;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #done = false;

  constructor(
    options: TailStreamOptions,
    controller: ReadableStreamDefaultController<Uint8Array>,
  ) {
    this.#options = options;
    this.#controller = controller;
    this.#started = this.#lastWrite = options.now();
    this.#after = resumeAfter(options.after, this.#started);
    this.#send("retry: 2000\n\n");
    this.#timer = setTimeout(() => this.#tick(), 0);
  }

  /** The client cancelled the body: its queue is gone. */
  cancel(): void {
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#release();
  }

  /** Bytes queued for the client. */
  get #queued(): number {
    return TAIL_QUEUE_BYTES - (this.#controller.desiredSize ?? 0);
  }

  #send(text: string): void {
    this.#controller.enqueue(encoder.encode(text));
    this.#lastWrite = this.#options.now();
  }

  #release(): void {
    if (this.#done) return;
    this.#done = true;
    this.#options.onClose?.();
  }

  async #tick(): Promise<void> {
    this.#timer = undefined;
    try {
      await (this.#cutAt === undefined ? this.#poll() : this.#drain());
    } catch (error) {
      if (this.#done) return;
      console.error("Cannot read entries for live tail:", lockedAsLine(error));
      this.#end();
    }
    if (!this.#done) {
      this.#timer = setTimeout(
        () => this.#tick(),
        this.#options.timing.intervalMs,
      );
    }
  }

  /** One poll of a live stream. */
  async #poll(): Promise<void> {
    const options = this.#options;
    if (options.alive && !(await options.alive())) return this.#end();
    if (this.#done) return;
    const now = options.now();
    if (now - this.#started >= options.timing.maxMs) return this.#end();
    if (this.#queued >= TAIL_QUEUE_BYTES) {
      this.#fullSince ??= now;
      if (now - this.#fullSince >= TAIL_STALL_MS) this.#cut();
      return;
    }
    this.#fullSince = undefined;
    const { records, lastId } = await options.reads.tailLogs(
      options.projectId,
      {
        afterId: this.#after,
        filter: options.filter,
        limit: TAIL_PAGE,
        now,
      },
    );
    let sent = 0;
    for (const record of records) {
      if (this.#done || this.#queued >= TAIL_QUEUE_BYTES) break;
      const row = await options.row(record);
      if (this.#done) return;
      this.#send(sseEvent("entry", record.id, row));
      this.#after = record.id;
      sent++;
    }
    // Entries that did not match move the start on too, unannounced; not
    // past a record left for the next poll.
    if (sent === records.length && lastId !== null && lastId > this.#after) {
      this.#after = lastId;
    }
    if (this.#done) return;
    if (options.now() - this.#lastWrite >= options.timing.heartbeatMs) {
      this.#send(": keep-alive\n\n");
    }
  }

  /** Ends the stream: no more reads; it closes once its queue is taken. */
  #end(): void {
    this.#cutAt = this.#options.now() + TAIL_STALL_MS;
    this.#drain();
  }

  /** An ended stream closes once empty, or is cut at `#cutAt`. */
  #drain(): void {
    if (this.#done) return;
    if (this.#queued <= 0) {
      this.#controller.close();
      this.#release();
    } else if (this.#options.now() >= this.#cutAt!) {
      this.#cut();
    }
  }

  /** Drops what is queued and ends the answer, giving the slot back. */
  #cut(): void {
    this.#controller.error(
      new Error(
        `Live tail cut: its client read too little in ${TAIL_STALL_MS} ms`,
      ),
    );
    this.#release();
  }
}

/** The `text/event-stream` answer of a live tail. */
export function tailStream(options: TailStreamOptions): Response {
  let polls: TailPolls | undefined;
  const stream = new ReadableStream<Uint8Array>({
    start(controller) {
      polls = new TailPolls(options, controller);
    },
    cancel() {
      polls?.cancel();
    },
  }, {
    highWaterMark: TAIL_QUEUE_BYTES,
    size: (chunk) => chunk.byteLength,
  });
  return new Response(stream, {
    headers: {
      "Content-Type": "text/event-stream; charset=utf-8",
      "Cache-Control": "no-store",
      "X-Accel-Buffering": "no",
    },
  });
}

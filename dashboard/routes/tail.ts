/**
 * Live tail as server-sent events. Every `intervalMs` the stream asks the
 * query functions for the entries after the last one sent and sends each as
 * an `entry` event whose `id` is the entry's id and whose data is its
 * rendered row. A browser that reconnects sends that id back as
 * `Last-Event-ID` and the stream resumes right after it: no entry missed,
 * none sent twice. A stream ends after `maxMs` (the browser reconnects about
 * 2 s later, as the stream's `retry: 2000` asks), so a signed-out session is
 * noticed and no stream lives forever.
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
import type { TailTiming } from "./common.ts";

/** Options of {@linkcode tailStream}. */
export interface TailStreamOptions {
  /** What each poll reads with. */
  reads: Reads;
  projectId: string;
  filter: Filter;
  /** Id of the last entry the browser shows. */
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
  /** Called once when the stream ends, however it ends. */
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

/** The `text/event-stream` answer of a live tail. */
export function tailStream(options: TailStreamOptions): Response {
  const { reads, projectId, filter, timing } = options;
  let after = options.after;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let closed = false;
  const started = options.now();
  let lastWrite = started;
  const stream = new ReadableStream<Uint8Array>({
    start(controller) {
      const send = (text: string) => {
        controller.enqueue(encoder.encode(text));
        lastWrite = options.now();
      };
      const finish = () => {
        if (closed) return;
        closed = true;
        options.onClose?.();
        controller.close();
      };
      const poll = async () => {
        timer = undefined;
        try {
          if (options.alive && !(await options.alive())) return finish();
          if (closed) return;
          const { records, lastId } = await reads.tailLogs(projectId, {
            afterId: after,
            filter,
            limit: 200,
            now: options.now(),
          });
          if (closed) return;
          for (const record of records) {
            send(sseEvent("entry", record.id, await options.row(record)));
          }
          after = records.at(-1)?.id ?? after;
          // Entries that did not match move the start on too, unannounced.
          if (lastId !== null && lastId > after) after = lastId;
          const now = options.now();
          if (now - lastWrite >= timing.heartbeatMs) send(": keep-alive\n\n");
          if (now - started >= timing.maxMs) return finish();
        } catch (error) {
          if (closed) return;
          console.error(
            "Cannot read entries for live tail:",
            lockedAsLine(error),
          );
          return finish();
        }
        if (!closed) timer = setTimeout(poll, timing.intervalMs);
      };
      send("retry: 2000\n\n");
      timer = setTimeout(poll, 0);
    },
    cancel() {
      closed = true;
      options.onClose?.();
      if (timer !== undefined) clearTimeout(timer);
    },
  });
  return new Response(stream, {
    headers: {
      "Content-Type": "text/event-stream; charset=utf-8",
      "Cache-Control": "no-store",
      "X-Accel-Buffering": "no",
    },
  });
}

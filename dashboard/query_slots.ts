/**
 * Queries one account (all its sessions together) or one read token may
 * run at once, and the dashboard in all: whether they read in the query
 * thread or in the server's, one reader looping heavy queries must not
 * hold them for everyone (docs/limits.md#dashboard). Kept in memory, per
 * process. The live tail's slots (dashboard/routes/tail.ts) are the same
 * {@linkcode Slots}. A read API answer keeps its query's slot while its body
 * is sent ({@linkcode heldBody}): a page left unread holds its slot, so the
 * slots bound the unread pages too.
 *
 * @module
 */

/** Options of {@linkcode QuerySlots}. */
export interface QuerySlotsOptions {
  /** Queries one account or token runs at once. @default {4} */
  perReader?: number;
  /** Queries the dashboard runs at once. @default {16} */
  total?: number;
  /** Queries the read tokens of one project run at once. @default {8} */
  perProjectTokens?: number;
  /**
   * Queries read tokens run at once in all, so that signed-in readers keep
   * the rest of `total`. @default {total - perReader}
   */
  allTokens?: number;
  /**
   * Time a body that holds a slot ({@linkcode heldBody}) may go unread by
   * its client before it is ended. @default {UNREAD_BODY_MS}
   */
  unreadMs?: number;
  /**
   * Time a body that holds a slot ({@linkcode heldBody}) may take to be sent
   * whole, however its client reads. @default {SEND_BODY_MS}
   */
  sendMs?: number;
  /**
   * The timers of held bodies' bounds ({@linkcode heldBody}).
   * @default the runtime's `setTimeout`
   */
  after?: After;
}

/**
 * Time a read API answer's body may wait for its client to read on, by
 * default: past it the answer is ended and its slot given back, so a client
 * that stops reading holds a slot no longer.
 */
export const UNREAD_BODY_MS = 30_000;

/**
 * Time a read API answer's body may take to be sent whole, by default: a
 * client that takes a piece just before each {@linkcode UNREAD_BODY_MS} ran
 * out would otherwise hold a slot for an hour over the largest page. Past
 * it the answer is ended as an unread one is (the largest page, 8,000,000
 * characters, needs about 80 KB/s).
 */
export const SEND_BODY_MS = 5 * 60_000;

/**
 * Characters of a held body encoded at a time: at most three times as many
 * bytes of it are encoded and not yet taken by the connection.
 */
export const BODY_PIECE_CHARS = 65_536;

/** One bound of {@linkcode Slots}: holders at most, and why a take past it is refused. */
export interface SlotBound {
  most: number;
  why: string;
}

/**
 * Holders counted per key at each level (a session, an account, a reader)
 * and in all, each with its bound, in memory. A take answers the function
 * that gives the slot back (once, however often it is called), or why there
 * is none: the first bound it would pass.
 *
 * @example
 * ```ts
 * const slots = new Slots([{ most: 4, why: "one reader holds 4" }], { most: 16, why: "16 in all" });
 * const slot = slots.take(["account:a@example.com"]);
 * ```
 */
export class Slots {
  #open = 0;
  #levels: SlotBound[];
  #total: SlotBound;
  #counts: Map<string, number>[];

  constructor(levels: SlotBound[], total: SlotBound) {
    this.#levels = levels;
    this.#total = total;
    this.#counts = levels.map(() => new Map());
  }

  /** Slots held now. */
  get open(): number {
    return this.#open;
  }

  /**
   * Takes a slot for `keys`, one per level, in the levels' order; levels
   * past the keys given do not count this holder.
   */
  take(keys: string[]): (() => void) | string {
    for (const [i, key] of keys.entries()) {
      const bound = this.#levels[i]!;
      if ((this.#counts[i]!.get(key) ?? 0) >= bound.most) return bound.why;
    }
    if (this.#open >= this.#total.most) return this.#total.why;
    this.#open++;
    keys.forEach((key, i) => {
      const counts = this.#counts[i]!;
      counts.set(key, (counts.get(key) ?? 0) + 1);
    });
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.#open--;
      keys.forEach((key, i) => giveBack(this.#counts[i]!, key));
    };
  }
}

/**
 * The queries running now, by reader; a read token's also by its project
 * and among all tokens', since a member may make up to 100 tokens a project
 * (4 tokens × 4 queries were every slot).
 */
export class QuerySlots {
  readonly perReader: number;
  readonly total: number;
  readonly perProjectTokens: number;
  readonly allTokens: number;
  /** Time a body holding a slot may go unread ({@linkcode heldBody}). */
  readonly unreadMs: number;
  /** Time a body holding a slot may take to be sent whole ({@linkcode heldBody}). */
  readonly sendMs: number;
  /** The timers of held bodies' bounds, when not the runtime's. */
  readonly after: After | undefined;
  #slots: Slots;

  constructor(options: QuerySlotsOptions = {}) {
    this.perReader = options.perReader ?? 4;
    this.total = options.total ?? 16;
    this.perProjectTokens = options.perProjectTokens ?? 8;
    this.allTokens = options.allTokens ??
      Math.max(1, this.total - this.perReader);
    this.unreadMs = options.unreadMs ?? UNREAD_BODY_MS;
    this.sendMs = options.sendMs ?? SEND_BODY_MS;
    this.after = options.after;
    this.#slots = new Slots([{
      most: this.perReader,
      why:
        `Cannot run more than ${this.perReader} queries at once for one reader: wait for one to end`,
    }, {
      most: this.perProjectTokens,
      why:
        `Cannot run more than ${this.perProjectTokens} queries at once with one project's read tokens: wait for one to end`,
    }, {
      most: this.allTokens,
      why:
        `Cannot run more than ${this.allTokens} queries at once with read tokens: the rest are kept for signed-in readers; try again in a moment`,
    }], {
      most: this.total,
      why:
        `Cannot run more than ${this.total} queries at once on this dashboard: try again in a moment`,
    });
  }

  /**
   * Takes a slot for `reader` (`account:<email>`, or `token:<id>` with the
   * token's `projectId`): the function that gives it back (once, however
   * often it is called), or why there is none.
   *
   * @example
   * ```ts
   * const slot = slots.take(`account:${email}`);
   * if (typeof slot === "string") return tooMany(slot);
   * try { return await query(); } finally { slot(); }
   * ```
   */
  take(reader: string, projectId?: string): (() => void) | string {
    // An account is counted at the first level only.
    return this.#slots.take(
      projectId === undefined
        ? [reader]
        : [reader, `project:${projectId}`, "tokens"],
    );
  }
}

/**
 * A response body of `parts` (texts sent one after another, UTF-8) that
 * holds a slot: `release` is called once the last part is handed to the
 * connection, when the body is cancelled (its client went away), when the
 * connection has asked for nothing more for `unreadMs`, or when the body
 * was not sent whole within `sendMs`: the body then ends there, short of
 * its `Content-Length`, so the server cuts the connection (and logs
 * nothing) and the client knows it is not whole. It is pulled
 * {@linkcode BODY_PIECE_CHARS} characters at a time, each part let go (in
 * `parts`) once sent, so the text not yet sent is never also held encoded.
 * `bytes` is its length, for `Content-Length`.
 *
 * @example
 * ```ts
 * const { body, bytes } = heldBody(rows, slot, slots);
 * return new Response(body, { headers: { "Content-Length": String(bytes) } });
 * ```
 */
export function heldBody(
  parts: string[],
  release: () => void,
  timing: { unreadMs: number; sendMs: number; after?: After },
): { body: ReadableStream<Uint8Array>; bytes: number } {
  const { unreadMs, sendMs, after = timeout } = timing;
  const bytes = parts.reduce((sum, part) => sum + utf8Length(part), 0);
  const encoder = new TextEncoder();
  const rest = pieces(parts);
  let unread = () => {};
  let whole = () => {};
  let ended = false;
  const end = () => {
    if (ended) return;
    ended = true;
    unread();
    whole();
    release();
  };
  const cut = (controller: ReadableStreamDefaultController<Uint8Array>) => {
    if (ended) return;
    end();
    controller.close();
  };
  const wait = (controller: ReadableStreamDefaultController<Uint8Array>) => {
    unread = after(unreadMs, () => cut(controller));
  };
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      whole = after(sendMs, () => cut(controller));
      wait(controller);
    },
    pull(controller) {
      unread();
      const text = rest.next();
      if (text !== "") controller.enqueue(encoder.encode(text));
      if (rest.done()) cut(controller);
      else wait(controller);
    },
    cancel: end,
  }, { highWaterMark: 0 });
  return { body, bytes };
}

/** A one-shot timer: runs `fire` after `ms`; the function returned cancels it. */
export type After = (ms: number, fire: () => void) => () => void;

/** {@linkcode After} on the runtime's timers. */
function timeout(ms: number, fire: () => void): () => void {
  const id = setTimeout(fire, ms);
  return () => clearTimeout(id);
}

/**
 * The texts of `parts` in order, {@linkcode BODY_PIECE_CHARS} characters a
 * call of `next` at most (`""` once none is left), each part let go once it
 * was given whole. A cut never parts a surrogate pair, so the pieces encode
 * to the bytes the whole text does.
 */
function pieces(parts: string[]): { next(): string; done(): boolean } {
  let index = 0;
  let offset = 0;
  return {
    next() {
      let text = "";
      while (index < parts.length && text.length < BODY_PIECE_CHARS) {
        const part = parts[index]!;
        let cut = Math.min(
          part.length,
          offset + BODY_PIECE_CHARS - text.length,
        );
        if (cut < part.length) {
          if (isHighSurrogate(part.charCodeAt(cut - 1))) cut--;
          text += part.slice(offset, cut);
          offset = cut;
          break;
        }
        text += offset === 0 ? part : part.slice(offset);
        parts[index++] = "";
        offset = 0;
      }
      return text;
    },
    done: () => index >= parts.length,
  };
}

/** Whether a UTF-16 code unit is the first of a surrogate pair. */
function isHighSurrogate(unit: number): boolean {
  return unit >= 0xd800 && unit <= 0xdbff;
}

/**
 * Bytes of `text` in UTF-8 as `TextEncoder` writes it: a lone surrogate as
 * U+FFFD's three.
 */
export function utf8Length(text: string): number {
  let bytes = 0;
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i);
    if (unit < 0x80) bytes += 1;
    else if (unit < 0x800) bytes += 2;
    else if (
      isHighSurrogate(unit) && i + 1 < text.length &&
      (text.charCodeAt(i + 1) & 0xfc00) === 0xdc00
    ) {
      bytes += 4;
      i++;
    } else bytes += 3;
  }
  return bytes;
}

/** Counts one holder fewer for `key`, forgetting it at none. */
function giveBack(counts: Map<string, number>, key: string): void {
  const left = (counts.get(key) ?? 1) - 1;
  if (left > 0) counts.set(key, left);
  else counts.delete(key);
}

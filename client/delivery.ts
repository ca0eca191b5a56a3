/**
 * Delivery of queued entries: a bounded queue, a token bucket that keeps the
 * sender under the service's per-address rate limit, and retries with
 * exponential backoff and jitter that honour `Retry-After`. The clock, the
 * timers, `fetch` and the randomness of the jitter are parameters, so that
 * tests drive time by hand.
 *
 * A retryable failure (`429`, `5xx`, network error) pauses the whole sender,
 * not only the entry that met it: a `429` says the address is over its limit,
 * so the next entries would be refused too. Consecutive failures double the
 * pause, but only a request sent after the previous failure counts, so that
 * the requests in flight together when the service said "slow down" do not
 * escalate the backoff between them. The retried entry goes back to the head
 * of the queue, and the sender resumes at its steady rate without a burst:
 * the service's bucket for the address is nearly empty then, whatever the
 * sender's own bucket says. A `429` also names the service's burst
 * (`RateLimit-Limit`); a sender configured with a larger one shrinks its own
 * bucket to fit. Other answers (`400`, `413`, `415`...) are not retried: the
 * entry would be refused again; it goes to `onError`.
 *
 * Beacons (client/page.ts) keep to the same pace and pause: their answers
 * are never read, so a beacon the service refuses is lost.
 *
 * @module
 */
import { createPace, type Pace } from "./pace.ts";
import type { Entry } from "./sign.ts";

/** Bytes a page may have in flight in `keepalive` requests and beacons. */
export const KEEPALIVE_BUDGET = 65536;

/** An entry on its way: the body to send and what its retries need. */
export interface Job {
  entry: Entry;
  /** The JSON body. */
  body: string;
  /** The signed text of the entry (`signedParams`), made with the body. */
  params: string;
  /** Size of the body in UTF-8 bytes. */
  bytes: number;
  /** Retryable failures met so far. */
  attempts: number;
  /** Headers of the first attempt, resent unchanged by retries. */
  headers?: Record<string, string>;
  /** When `headers` were made. */
  madeAt?: number;
}

/** An entry given up on, as told to `onError`. */
export interface DeliveryError {
  /** HTTP status of the last answer; 0 when there was none (network error). */
  status: number;
  /** `error.code` of the service's JSON answer, or `network_error`, `http_error`, `invalid_entry`. */
  code: string;
  message: string;
  /** The failing fields, for `invalid_body`. */
  issues?: { path: string; message: string }[];
  entry?: Entry;
}

/** Counters of a sender. */
export interface DeliveryStats {
  /** Entries waiting to be sent. */
  queued: number;
  /** Requests waiting for an answer. */
  inFlight: number;
  /** Entries answered `200 queued`. */
  sent: number;
  /** Retries made (after `429`, `5xx` or a network error). */
  retried: number;
  /** Entries dropped unsent: the oldest when the queue was full, and those left at `close()`. */
  dropped: number;
  /** Entries given up on: refused (`4xx`) or out of retries; each went to `onError`. */
  failed: number;
  /**
   * Entries sent by beacon when the page was hidden or left, within what the
   * service's rate limit takes then (their answer is not known).
   */
  beaconed: number;
}

/** Options of the delivery. */
export interface DeliveryOptions {
  /** Entries kept waiting at most; past it the oldest is dropped and counted. @default {1000} */
  maxQueue?: number;
  /** Requests per second of the service's per-address limit, which the sender keeps to. @default {20} */
  rate?: number;
  /**
   * Burst of the service's per-address limit. The sender keeps a tenth of it
   * in reserve (it sends 45 at once by default), so that requests delayed on
   * the way less than the ones before them (a first request waits for the
   * connection) do not arrive over the limit: the reserve absorbs 250 ms of
   * such differences at 20/s.
   * @default {50}
   */
  burst?: number;
  /** Requests in flight at most. @default {4} */
  concurrency?: number;
  /** Retries of one entry before it is given up. @default {10} */
  maxRetries?: number;
  /** Pause after a first failure; it doubles with each consecutive one. @default {500} */
  retryBaseMs?: number;
  /** Longest pause between retries (unless `Retry-After` says more). @default {30000} */
  retryMaxMs?: number;
  /** A request not answered in this time is aborted and retried. @default {10000} */
  timeoutMs?: number;
  /** Told of every entry given up on. @default nothing */
  onError?: (error: DeliveryError) => void;
  /** @default {globalThis.fetch} */
  fetch?: typeof fetch;
  /** Clock, in milliseconds. @default {Date.now} */
  now?: () => number;
  /** @default {globalThis.setTimeout} */
  setTimeout?: (fn: () => void, ms: number) => unknown;
  /** @default {globalThis.clearTimeout} */
  clearTimeout?: (id: never) => void;
  /** Randomness of the jitter, in [0, 1). @default {Math.random} */
  random?: () => number;
}

/** What a sender needs beyond the options. */
export interface SenderOptions extends DeliveryOptions {
  endpoint: string;
  /** Headers of a job's request (signing happens here). */
  headers: (
    job: Job,
  ) => Record<string, string> | Promise<Record<string, string>>;
  /** Send with `keepalive` while within the budget (browsers). */
  keepalive?: boolean;
}

/** A running sender. */
export interface Sender {
  /** Queues a job and sends what the pacing allows. */
  push(job: Job): void;
  /** Resolves `true` once nothing is queued or in flight, `false` after `timeoutMs`. */
  flush(timeoutMs?: number): Promise<boolean>;
  /**
   * Sends queued jobs, oldest first, with `send` while they fit the
   * keepalive budget and the pace: none while the sender is paused; when the
   * page is hidden, what the bucket holds now; when it is `leaving`, at most
   * the service's burst less what was spent recently. The rest stays queued.
   * (A beacon the browser refuses costs its token all the same.)
   */
  beacon(send: (body: string) => boolean, leaving?: boolean): void;
  /** Refuses further jobs (they are counted as dropped); what is queued still goes. */
  seal(): void;
  /** Drops what is queued and stops sending. */
  stop(): void;
  stats(): DeliveryStats;
}

/** The error told to `onError` for a job given up on. */
function deliveryError(
  job: Job,
  status: number,
  error?: Partial<DeliveryError>,
): DeliveryError {
  return {
    status,
    code: error?.code ?? (status ? "http_error" : "network_error"),
    message: error?.message ?? `Cannot send the entry: answered ${status}`,
    ...(error?.issues ? { issues: error.issues } : {}),
    entry: job.entry,
  };
}

/** A `Retry-After` header (seconds or an HTTP date) as a wait from `now`. */
function retryAfterMs(header: string | null, now: () => number): number {
  return header
    ? Math.max(0, +header * 1000 || Date.parse(header) - now() || 0)
    : 0;
}

/** An answer's status (0 if none), wait asked and error; a small tuple. */
type Answer = [status: number, retryMs: number, error?: Partial<DeliveryError>];

/**
 * What posts one job and reads its answer. The request never throws: a
 * network error, an abort at the deadline or a failure to make the headers
 * answers status 0.
 */
function poster(
  options: SenderOptions,
  doFetch: typeof fetch,
  pace: Pace,
  now: () => number,
): (job: Job, keepalive: boolean, signal: AbortSignal) => Promise<Answer> {
  return async (job, keepalive, signal) => {
    let status = 0;
    let retryAfter = 0;
    let error: Partial<DeliveryError> | undefined;
    try {
      const res = await doFetch(options.endpoint, {
        method: "POST",
        headers: await options.headers(job),
        body: job.body,
        keepalive,
        signal,
      });
      status = res.status;
      if (status === 200) {
        await res.body?.cancel();
      } else {
        // A 429 tells the service's burst for this address: keep under it.
        const limit = +res.headers.get("ratelimit-limit")!;
        if (status === 429 && limit > 0) pace.fit(limit);
        retryAfter = retryAfterMs(res.headers.get("retry-after"), now);
        error = (await res.json()).error;
      }
    } catch (e) {
      if (!status) {
        error = { message: `Cannot send the entry: ${(e as Error)?.message}` };
      }
    }
    return [status, retryAfter, error];
  };
}

/**
 * Whether an answer is worth sending again: none at all (a network
 * failure, `0`), `429`, a `5xx`, or a body that did not arrive whole
 * (`408`, `400 incomplete_body`: nothing was queued).
 */
function retried(status: number, code?: string): boolean {
  return !status || status >= 500 || status === 429 || status === 408 ||
    code === "incomplete_body";
}

/** The sending half of a sender, as its queue side sees it. */
interface Dispatch {
  /** Sends what the pacing and the concurrency allow, then settles. */
  pump(): void;
  /** Sends nothing more and cancels the pacing's timer. */
  stop(): void;
  /** Bytes of the keepalive budget not in flight. */
  budget(): number;
  /** The pace, which beacons keep to as well. */
  pace: Pace;
}

/**
 * The sending half of a sender: takes jobs from the head of `queue` at the
 * pace, posts them, and counts or retries them by their answers; `settle`
 * is called whenever the work left may have reached zero. `set` and `clear`
 * are the sender's timers.
 */
function createDispatch(
  options: SenderOptions,
  queue: Job[],
  stats: DeliveryStats,
  settle: () => void,
  set: (fn: () => void, ms: number) => unknown,
  clear: (id: unknown) => void,
): Dispatch {
  const concurrency = options.concurrency ?? 4;
  const maxRetries = options.maxRetries ?? 10;
  const timeoutMs = options.timeoutMs ?? 10000;
  const now = options.now ?? Date.now;
  const onError = options.onError ?? (() => {});
  const pace = createPace({ ...options, now });
  const post = poster(options, options.fetch ?? fetch, pace, now);
  let keepaliveBytes = 0;
  let timer: unknown;
  let stopped = false;

  function pump(): void {
    while (
      timer === undefined && !stopped && queue.length > 0 &&
      stats.inFlight < concurrency
    ) {
      const wait = pace.take();
      if (wait > 0) {
        timer = set(() => {
          timer = undefined;
          pump();
        }, Math.ceil(wait));
      } else {
        send(queue.shift()!);
      }
    }
    settle();
  }

  async function send(job: Job): Promise<void> {
    stats.inFlight++;
    const keepalive = !!options.keepalive &&
      keepaliveBytes + job.bytes <= KEEPALIVE_BUDGET;
    if (keepalive) keepaliveBytes += job.bytes;
    const sentAt = now();
    const abort = new AbortController();
    const deadline = set(() => abort.abort(), timeoutMs);
    const [status, retryAfter, error] = await post(
      job,
      keepalive,
      abort.signal,
    );
    clear(deadline);
    stats.inFlight--;
    if (keepalive) keepaliveBytes -= job.bytes;
    if (status === 200) {
      stats.sent++;
      pace.succeed();
    } else if (
      !retried(status, error?.code) || ++job.attempts > maxRetries || stopped
    ) {
      stats.failed++;
      onError(deliveryError(job, status, error));
    } else {
      stats.retried++;
      pace.pause(sentAt, retryAfter);
      queue.unshift(job);
    }
    pump();
  }

  return {
    pump,
    stop() {
      stopped = true;
      if (timer !== undefined) clear(timer);
      timer = undefined;
    },
    budget: () => KEEPALIVE_BUDGET - keepaliveBytes,
    pace,
  };
}

/**
 * Builds a sender. Nothing runs until a job is pushed, and nothing is left
 * scheduled once the queue is empty, so an idle sender keeps no process alive.
 *
 * @example
 * ```ts
 * const sender = createSender({ endpoint, headers: () => ({ "Content-Type": "application/json" }) });
 * const body = JSON.stringify(entry);
 * sender.push({ entry, body, params: body, bytes: body.length, attempts: 0 });
 * await sender.flush();
 * ```
 */
export function createSender(options: SenderOptions): Sender {
  const maxQueue = options.maxQueue ?? 1000;
  const set = options.setTimeout ?? setTimeout;
  const clear = (options.clearTimeout ?? clearTimeout) as (id: unknown) => void;
  const queue: Job[] = [];
  const waiters = new Set<(idle: boolean) => void>();
  const stats = {
    queued: 0,
    inFlight: 0,
    sent: 0,
    retried: 0,
    dropped: 0,
    failed: 0,
    beaconed: 0,
  };
  const settle = () => {
    if (queue.length + stats.inFlight === 0) {
      for (const resolve of waiters) resolve(true);
    }
  };
  const dispatch = createDispatch(
    options,
    queue,
    stats,
    settle,
    set,
    clear,
  );
  let sealed = false;

  return {
    push(job) {
      if (sealed) {
        stats.dropped++;
        return;
      }
      if (queue.length >= maxQueue) {
        queue.shift();
        stats.dropped++;
      }
      queue.push(job);
      dispatch.pump();
    },
    flush(timeoutMs) {
      return new Promise((resolve) => {
        let id: unknown;
        const done = (idle: boolean) => {
          waiters.delete(done);
          if (id !== undefined) clear(id);
          resolve(idle);
        };
        waiters.add(done);
        if (timeoutMs !== undefined) id = set(() => done(false), timeoutMs);
        settle();
      });
    },
    beacon(sendBeacon, leaving) {
      let budget = dispatch.budget();
      while (
        queue.length > 0 && queue[0]!.bytes <= budget &&
        dispatch.pace.take(leaving) <= 0 && sendBeacon(queue[0]!.body)
      ) {
        budget -= queue.shift()!.bytes;
        stats.beaconed++;
      }
      settle();
    },
    seal() {
      sealed = true;
    },
    stop() {
      sealed = true;
      dispatch.stop();
      stats.dropped += queue.length;
      queue.length = 0;
      settle();
    },
    stats: () => ({ ...stats, queued: queue.length }),
  };
}

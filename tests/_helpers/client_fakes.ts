/**
 * Fakes for the client library's unit tests: a clock with timers that move
 * only when told to, and a `fetch` that records each request and answers
 * what the test says, or holds it until released.
 *
 * @module
 */

/** A clock and its timers, driven by hand. */
export interface FakeTime {
  now: () => number;
  setTimeout: (fn: () => void, ms: number) => number;
  clearTimeout: (id: number) => void;
  /** Moves time on by `ms`, firing due timers in order, letting promises settle after each. */
  advance(ms: number): Promise<void>;
  /** Timers not yet fired. */
  pending(): number;
}

/**
 * Lets pending promises and async operations (WebCrypto) settle: a few turns
 * of the event loop, by message (a `setTimeout(0)` turn costs about 2 ms).
 *
 * @example
 * ```ts
 * logger.info("x");
 * await settle(); // the request was made
 * ```
 */
export async function settle(): Promise<void> {
  for (let i = 0; i < 6; i++) {
    await new Promise<void>((go) => {
      const { port1, port2 } = new MessageChannel();
      port1.onmessage = () => {
        port1.close();
        port2.close();
        go();
      };
      port2.postMessage(0);
    });
  }
}

/**
 * Waits (in real time, at most `timeoutMs`) until `condition` holds: for work
 * that runs outside the fake clock, such as WebCrypto signing, which can take
 * longer than a few turns of the event loop on a busy machine.
 *
 * @example
 * ```ts
 * await until(() => net.calls.length === 2);
 * ```
 */
export async function until(
  condition: () => boolean,
  timeoutMs = 5000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) {
      throw new Error(`Cannot wait longer: still false after ${timeoutMs} ms`);
    }
    await new Promise((go) => setTimeout(go, 1));
  }
}

/**
 * A clock starting at `start` with its own timers.
 *
 * @example
 * ```ts
 * const time = fakeTime();
 * const logger = createLogger({ ...options, ...time.options });
 * await time.advance(1000);
 * ```
 */
export function fakeTime(start = Date.UTC(2026, 0, 1)): FakeTime {
  let t = start;
  let next = 1;
  const timers = new Map<number, { at: number; fn: () => void }>();
  return {
    now: () => t,
    setTimeout(fn, ms) {
      const id = next++;
      timers.set(id, { at: t + Math.max(0, ms), fn });
      return id;
    },
    clearTimeout(id) {
      timers.delete(id);
    },
    async advance(ms) {
      const end = t + ms;
      await settle();
      for (;;) {
        let due: [number, { at: number; fn: () => void }] | undefined;
        for (const timer of timers) {
          if (timer[1].at <= end && (!due || timer[1].at < due[1].at)) {
            due = timer;
          }
        }
        if (!due) break;
        timers.delete(due[0]);
        t = due[1].at;
        due[1].fn();
        await settle();
      }
      t = end;
      await settle();
    },
    pending: () => timers.size,
  };
}

/** One request the fake `fetch` received. */
export interface Call {
  url: string;
  headers: Headers;
  body: string;
  /** Fake time it was made at. */
  at: number;
  keepalive: boolean;
}

/** An answer: a response, an error to throw (network error), or "hold". */
export type Answer = Response | Error | "hold";

/** A recording `fetch`. */
export interface FakeFetch {
  fetch: typeof fetch;
  calls: Call[];
  /** Answers every held request with `200 queued`. */
  release(): void;
  /** Requests held now. */
  held(): number;
}

/**
 * A `fetch` that answers with `answer(call, index)`; by default `200 queued`.
 *
 * @example
 * ```ts
 * const net = fakeFetch(time.now, (_, i) => i === 0 ? refused(429, "rate_limited", { "Retry-After": "2" }) : queued());
 * ```
 */
export function fakeFetch(
  now: () => number,
  answer: (call: Call, index: number) => Answer = () => queued(),
): FakeFetch {
  const calls: Call[] = [];
  const held = new Set<() => void>();
  const fake = (input: string | URL | Request, init: RequestInit = {}) => {
    const call: Call = {
      url: String(input),
      headers: new Headers(init.headers),
      body: String(init.body),
      at: now(),
      keepalive: init.keepalive ?? false,
    };
    const result = answer(call, calls.length);
    calls.push(call);
    return new Promise<Response>((resolve, reject) => {
      if (init.signal?.aborted) {
        return reject(new DOMException("Aborted before sending", "AbortError"));
      }
      init.signal?.addEventListener("abort", () => {
        held.delete(go);
        reject(new DOMException("The signal has been aborted", "AbortError"));
      });
      const go = () => {
        held.delete(go);
        resolve(queued());
      };
      if (result === "hold") held.add(go);
      else if (result instanceof Error) reject(result);
      else resolve(result);
    });
  };
  return {
    fetch: fake as typeof fetch,
    calls,
    release() {
      for (const go of [...held]) go();
    },
    held: () => held.size,
  };
}

/**
 * `200 {"status":"queued"}`.
 *
 * @example
 * ```ts
 * const net = fakeFetch(time.now, () => queued());
 * ```
 */
export function queued(): Response {
  return new Response('{"status":"queued"}', {
    status: 200,
    headers: { "Content-Type": "application/json" },
  });
}

/**
 * An error answer as the service writes it.
 *
 * @example
 * ```ts
 * refused(429, "rate_limited", { "Retry-After": "2" });
 * ```
 */
export function refused(
  status: number,
  code: string,
  headers: Record<string, string> = {},
  issues?: { path: string; message: string }[],
): Response {
  return new Response(
    JSON.stringify({
      status: "error",
      error: {
        code,
        message: `Refused: ${code}`,
        ...(issues ? { issues } : {}),
      },
    }),
    { status, headers: { "Content-Type": "application/json", ...headers } },
  );
}

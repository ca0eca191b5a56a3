/**
 * A `Deno.Kv` whose writes outlast a locked database: every process opens KV
 * through {@linkcode retryingLocked} (in `openKv`), so every module's
 * commits, `set`s, `delete`s, reads and `enqueue`s are sent again while
 * SQLite refuses them as `database is locked`, and give up, within a bound,
 * with one {@linkcode KvLockedError} that the edges print as one line or
 * answer as `503` (docs/design.md#locked-database).
 *
 * A refusal wrote nothing, so sending the same call again is safe. Deno KV
 * itself waits up to about 5 s for another connection's write lock, so one
 * attempt can take that long: the bound counts time, not only attempts.
 *
 * @module
 */
import { isLockedError, timeout } from "./kv.ts";
import { ThreadStalledError } from "./own_thread.ts";

/** Past this many milliseconds after the first attempt, no new one starts. */
export const LOCKED_RETRY_MAX_MS = 10_000;
/** The wait before the second attempt; each next one doubles, up to the cap. */
export const LOCKED_RETRY_FIRST_MS = 5;
/** The longest wait between two attempts. */
export const LOCKED_RETRY_CAP_MS = 200;

/**
 * Thrown when a call stayed refused as locked past the bound. Its message is
 * one line, for a log line, a `503` body or a command's error.
 */
export class KvLockedError extends Error {
  override name = "KvLockedError";
  constructor(attempts: number, elapsedMs: number, options?: ErrorOptions) {
    super(
      `The database stayed locked by another process (${attempts} attempts in ${
        (elapsedMs / 1000).toFixed(1)
      } s); retry in a moment`,
      options,
    );
  }
}

/** Options of {@linkcode retryingLocked} and {@linkcode retryLocked}. */
export interface RetryingLockedOptions {
  /**
   * A number in [0, 1): each wait is between half and all of its step, so
   * that processes refused together do not retry in step.
   * @default {Math.random}
   */
  random?: () => number;
  /** No new attempt starts this long after the first. @default {LOCKED_RETRY_MAX_MS} */
  maxMs?: number;
  /** Waits `ms` milliseconds. @default a `setTimeout` */
  sleep?: (ms: number) => Promise<void>;
  /** Milliseconds of a monotonic clock. @default {performance.now} */
  now?: () => number;
}

/**
 * Calls `call` until it does not throw a locked refusal: again after waits
 * from {@linkcode LOCKED_RETRY_FIRST_MS} doubling up to
 * {@linkcode LOCKED_RETRY_CAP_MS}, while {@linkcode LOCKED_RETRY_MAX_MS}
 * allows; then throws {@linkcode KvLockedError}. Any other error is thrown
 * at once, as it is. Under steady writes from three processes, a commit that
 * reads first is refused many times in a row: a bound of 5 attempts (155 ms)
 * gave up on operator commands, so the bound is time.
 *
 * @example
 * ```ts
 * const entry = await retryLocked(() => kv.get(key));
 * ```
 */
export async function retryLocked<T>(
  call: () => Promise<T>,
  options: RetryingLockedOptions = {},
): Promise<T> {
  try {
    // The hot path: one attempt, no clock read.
    return await call();
  } catch (error) {
    if (!isRetryable(error)) throw error;
    return await retryAfter(call, error, options);
  }
}

/** A raw refusal; a {@linkcode KvLockedError} has been retried already. */
function isRetryable(error: unknown): boolean {
  return isLockedError(error) && !(error instanceof KvLockedError);
}

async function retryAfter<T>(
  call: () => Promise<T>,
  first: unknown,
  options: RetryingLockedOptions,
): Promise<T> {
  const maxMs = options.maxMs ?? LOCKED_RETRY_MAX_MS;
  const sleep = options.sleep ?? timeout;
  const now = options.now ?? (() => performance.now());
  const random = options.random ?? Math.random;
  // The first attempt's own wait (Deno KV's, up to 5 s) is not counted.
  const start = now();
  let last = first;
  let attempts = 1;
  let step = LOCKED_RETRY_FIRST_MS;
  while (now() - start < maxMs) {
    await sleep(Math.round(step * (0.5 + random() / 2)));
    step = Math.min(step * 2, LOCKED_RETRY_CAP_MS);
    attempts++;
    try {
      return await call();
    } catch (error) {
      if (!isRetryable(error)) throw error;
      last = error;
    }
  }
  throw new KvLockedError(attempts, now() - start, { cause: last });
}

/**
 * `kv` with every call that writes or reads a value retried while refused
 * as locked ({@linkcode retryLocked}): `atomic().commit()`, `set`,
 * `delete`, `get`, `getMany` and `enqueue`. `list` and `watch` are streams
 * whose position a retry could not keep; they are left as they are (a read
 * in WAL mode is not refused as locked). The handle is `kv` itself behind a
 * proxy: `close`, `listenQueue` and the rest reach it unchanged.
 *
 * @example
 * ```ts
 * const kv = retryingLocked(await Deno.openKv(path));
 * ```
 */
export function retryingLocked(
  kv: Deno.Kv,
  options: RetryingLockedOptions = {},
): Deno.Kv {
  const wrapped = new Map<PropertyKey, unknown>([
    ["atomic", () => {
      const op = kv.atomic();
      const commit = op.commit.bind(op);
      op.commit = () => retryLocked(commit, options);
      return op;
    }],
    [
      "set",
      (...a: Parameters<Deno.Kv["set"]>) =>
        retryLocked(() => kv.set(...a), options),
    ],
    ["delete", (key: Deno.KvKey) => retryLocked(() => kv.delete(key), options)],
    [
      "get",
      (...a: Parameters<Deno.Kv["get"]>) =>
        retryLocked(() => kv.get(...a), options),
    ],
    [
      "getMany",
      (...a: Parameters<Deno.Kv["getMany"]>) =>
        retryLocked(() => kv.getMany(...a), options),
    ],
    [
      "enqueue",
      (...a: Parameters<Deno.Kv["enqueue"]>) =>
        retryLocked(() => kv.enqueue(...a), options),
    ],
  ]);
  const bound = new Map<PropertyKey, unknown>();
  return new Proxy(kv, {
    get(target, prop) {
      if (wrapped.has(prop)) return wrapped.get(prop);
      const value = Reflect.get(target, prop, target);
      if (typeof value !== "function") return value;
      // The runtime's methods read private fields: call them on `kv` itself.
      let fn = bound.get(prop);
      if (fn === undefined) bound.set(prop, fn = value.bind(target));
      return fn;
    },
  });
}

/**
 * `error` for a log line: a locked refusal or a stalled thread
 * (db/own_thread.ts), or an error caused by one, as its one-line message;
 * anything else as it is, stack included.
 *
 * @example
 * ```ts
 * console.error("Cannot merge chunks:", lockedAsLine(error));
 * ```
 */
export function lockedAsLine(error: unknown): unknown {
  if (expected(error)) return (error as Error).message;
  if (error instanceof Error && expected(error.cause)) {
    return `${error.message}: ${(error.cause as Error).message}`;
  }
  return error;
}

/** A failure the service expects and says in one line. */
function expected(error: unknown): boolean {
  return isLockedError(error) || error instanceof ThreadStalledError;
}

/**
 * `text` with each run of white space that holds a line break made one
 * space: `\s+` matches a run once, where `\s*\n\s*` was tried from each of
 * its characters.
 */
export function oneLine(text: string): string {
  return text.replace(/\s+/g, (space) => space.includes("\n") ? " " : space);
}

/**
 * An error as one line: its message and its causes' messages, never its
 * stack (docs/design.md#locked-database): a batch that fails is retried and
 * kept as a dead letter with its message, so the log needs no more.
 *
 * @example
 * ```ts
 * errorLine(new Error("Cannot merge", { cause: new Error("disk\nfull") }));
 * // "Cannot merge: disk full"
 * ```
 */
export function errorLine(error: unknown): string {
  const parts: string[] = [];
  for (let e = error, depth = 0; e !== undefined && depth < 4; depth++) {
    const text = e instanceof Error ? e.message : String(e);
    if (!parts.some((p) => p.includes(text))) parts.push(text);
    e = e instanceof Error ? e.cause : undefined;
  }
  return oneLine(parts.join(": "));
}

/**
 * A failure as the log prints it: one line (a locked database as its own
 * line, see {@linkcode lockedAsLine}) that says `what` failed once, whether
 * or not the error's message already says so.
 *
 * @example
 * ```ts
 * failureLine("Cannot merge", new Error("disk full")); // "Cannot merge: disk full"
 * ```
 */
export function failureLine(what: string, error: unknown): string {
  const line = errorLine(lockedAsLine(error));
  return line.startsWith(what) ? line : `${what}: ${line}`;
}

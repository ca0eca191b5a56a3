/**
 * Capture of uncaught errors and unhandled promise rejections, with their
 * stacks, wherever the logger runs:
 *
 * - Browsers and workers: the global `error` and `unhandledrejection` events,
 *   reported at level `error`; the page carries on as it would have.
 * - Deno: the same events on the global scope. The runtime would exit at
 *   once; the handler stops that (`preventDefault`), reports at level
 *   `critical`, flushes (for at most `timeoutMs`) and exits with status 1.
 * - Node and Bun: `process` `uncaughtException` and `unhandledRejection`,
 *   handled the same way as in Deno.
 *
 * With `exit: false`, servers report at level `error` and keep running.
 *
 * Opt-in as well: `captureConsole()` reports what `console.error` and
 * `console.warn` print, at levels `error` and `warning`, and still prints it.
 *
 * @module
 */

/** Options of `captureErrors()`. */
export interface CaptureOptions {
  /** Servers: exit with status 1 after reporting, as the runtime would have. @default {true} */
  exit?: boolean;
  /** Servers: longest wait for the report to be delivered before exiting. @default {2000} */
  timeoutMs?: number;
}

/** What captured errors are handed to. */
export interface CaptureSink {
  log(level: string, data: Record<string, unknown>): void;
  flush(timeoutMs?: number): Promise<boolean>;
}

type Report = (error: unknown, event: string, extra?: object) => void;

// deno-lint-ignore no-explicit-any
const scope = globalThis as any;

/**
 * The `data` of a captured error: its message as the title, its name and
 * stack.
 *
 * @example
 * ```ts
 * describeError(new TypeError("x is undefined"), "error");
 * // { title: "x is undefined", name: "TypeError", stack: "TypeError: ...", event: "error" }
 * ```
 */
export function describeError(
  error: unknown,
  event: string,
): Record<string, unknown> {
  const e = error as Error | null;
  return e instanceof Error
    ? { title: e.message || e.name, name: e.name, stack: e.stack, event }
    : { title: String(error), event };
}

/**
 * Installs the handlers for the runtime the code runs in and returns the
 * function that removes them.
 *
 * @example
 * ```ts
 * const stop = captureErrors(logger, { exit: true });
 * ```
 */
export function captureErrors(
  sink: CaptureSink,
  options: CaptureOptions = {},
): () => void {
  const server = !scope.document &&
    (!!scope.Deno || typeof scope.process?.on === "function");
  const exit = server && options.exit !== false;
  const report: Report = (error, event, extra) => {
    sink.log(exit ? "critical" : "error", {
      ...describeError(error, event),
      ...extra,
    });
    if (exit) {
      sink.flush(options.timeoutMs ?? 2000).finally(() =>
        (scope.Deno ?? scope.process).exit(1)
      );
    }
  };
  if (scope.Deno || !server) {
    const onError = (e: ErrorEvent) => {
      if (server) e.preventDefault();
      report(e.error ?? e.message, "error", {
        source: `${e.filename}:${e.lineno}:${e.colno}`,
      });
    };
    const onRejection = (e: PromiseRejectionEvent) => {
      if (server) e.preventDefault();
      report(e.reason, "unhandledrejection");
    };
    scope.addEventListener("error", onError);
    scope.addEventListener("unhandledrejection", onRejection);
    return () => {
      scope.removeEventListener("error", onError);
      scope.removeEventListener("unhandledrejection", onRejection);
    };
  }
  const onException = (error: unknown) => report(error, "uncaughtException");
  const onRejection = (reason: unknown) => report(reason, "unhandledRejection");
  scope.process.on("uncaughtException", onException);
  scope.process.on("unhandledRejection", onRejection);
  return () => {
    scope.process.off("uncaughtException", onException);
    scope.process.off("unhandledRejection", onRejection);
  };
}

/** The console methods `captureConsole()` reports. */
export type ConsoleMethod = "error" | "warn";

function textOf(value: unknown): string {
  if (typeof value === "string") return value;
  if (value instanceof Error) return value.message;
  try {
    return JSON.stringify(value);
  } catch {
    return String(value);
  }
}

/**
 * How many calls of the logger's own callbacks (`onError`, `beforeSend`)
 * and of its own reports are running: while any is, what the console
 * prints is not reported. Module-wide, so that one logger's callback does
 * not feed another's capture either.
 */
let quiet = 0;

/**
 * Runs `fn` with the console's capture off: what it prints synchronously is
 * still printed but not reported. The logger calls its user callbacks this
 * way, `onError` included, which delivery calls long after the entry was
 * logged: an `onError` that prints with `console.error` would otherwise log
 * a new entry, which may fail again, and so on.
 *
 * @example
 * ```ts
 * quietly(() => onError(error));
 * ```
 */
export function quietly<T>(fn: () => T): T {
  quiet++;
  try {
    return fn();
  } finally {
    quiet--;
  }
}

/**
 * Reports each call of `console.error` and `console.warn` (or `methods`)
 * as an entry: its arguments as the title, the stack of an `Error` among
 * them; the console still prints them. What the logging itself prints is
 * not reported again: neither what is printed while an entry is being
 * logged nor what the logger's callbacks print (see {@linkcode quietly}).
 * Returns the function that restores the console.
 *
 * @example
 * ```ts
 * const stop = captureConsole(logger, ["error"]);
 * ```
 */
export function captureConsole(
  sink: CaptureSink,
  methods: ConsoleMethod[] = ["error", "warn"],
): () => void {
  const c = scope.console;
  const saved = methods.map((m) => c[m]);
  methods.forEach((m, i) => {
    c[m] = (...args: unknown[]) => {
      saved[i].apply(c, args);
      if (quiet > 0) return;
      const error = args.find((a) => a instanceof Error) as Error | undefined;
      quietly(() =>
        sink.log(m == "warn" ? "warning" : "error", {
          title: args.map(textOf).join(" ").slice(0, 1000),
          stack: error?.stack,
          event: `console.${m}`,
        })
      );
    };
  });
  return () => methods.forEach((m, i) => c[m] = saved[i]);
}

/**
 * Serving HTTP so that running out of file descriptors never ends the
 * process (docs/design.md#connections).
 *
 * When `accept` fails (measured on Deno 2.9: `Too many open files (os error
 * 24)` once every descriptor is taken by open connections), `Deno.serve`'s
 * accept loop stops, its listening socket closes and `server.finished`
 * rejects; left unhandled, that rejection ends the process. Here it is
 * handled: the failed server is shut down gracefully (requests in progress
 * are answered, idle connections are closed, which frees descriptors) and a
 * new server listens on the same port, retried with a growing delay until
 * the socket can be opened again.
 *
 * At start-up, an address that cannot be listened on (a port taken or not
 * permitted, a host not of this machine) is one line and exit code 1
 * ({@linkcode listenOrExit}), not a stack trace.
 *
 * @module
 */

/** Options of {@linkcode serveResilient}. */
export interface ResilientServeOptions {
  port: number;
  hostname: string;
  handler: Deno.ServeHandler<Deno.NetAddr>;
  /** `Deno.serve`'s error hook (a failing response body, a throwing handler). */
  onError?: (error: unknown) => Response | Promise<Response>;
  /** Called each time the server listens; `again` after a failure. */
  onListen?: (addr: Deno.NetAddr, again: boolean) => void;
  /** Called when listening failed or stopped; `retryMs` until the next try. */
  onFailure?: (error: unknown, retryMs: number) => void;
  /** First delay before listening again; it doubles per failure. @default {50} */
  retryMs?: number;
  /** Longest delay before listening again. @default {2000} */
  maxRetryMs?: number;
  /** The server to run. @default {Deno.serve} */
  serve?: (
    options: Deno.ServeTcpOptions,
    handler: Deno.ServeHandler<Deno.NetAddr>,
  ) => Pick<Deno.HttpServer<Deno.NetAddr>, "addr" | "finished" | "shutdown">;
  /** Clock. @default {Date.now} */
  now?: () => number;
}

/** A server that listens again after its accept loop failed. */
export interface ResilientServer {
  /** The address it listens on (the port stays the same across restarts). */
  readonly addr: Deno.NetAddr;
  /** Times it listened again after a failure. */
  readonly restarts: number;
  /** Stops listening and waits for requests in progress. */
  shutdown(): Promise<void>;
}

/**
 * Serves `handler` like `Deno.serve`, and listens again whenever the accept
 * loop fails, instead of letting the process end.
 *
 * @example
 * ```ts
 * const server = serveResilient({
 *   port: 8000,
 *   hostname: "0.0.0.0",
 *   handler: (req) => new Response("ok"),
 *   onFailure: (error, retryMs) => console.error(`${error}; retry in ${retryMs} ms`),
 * });
 * await server.shutdown();
 * ```
 */
export function serveResilient(
  options: ResilientServeOptions,
): ResilientServer {
  const serve = options.serve ?? Deno.serve;
  const now = options.now ?? Date.now;
  const firstDelay = options.retryMs ?? 50;
  const maxDelay = options.maxRetryMs ?? 2000;
  let delay = firstDelay;
  let stopping = false;
  let restarts = 0;
  let listenedAt = 0;
  let retryTimer: ReturnType<typeof setTimeout> | undefined;
  let port = options.port;

  const listen = (again: boolean) => {
    const server = serve({
      port,
      hostname: options.hostname,
      ...(options.onError ? { onError: options.onError } : {}),
      onListen: (addr) => {
        port = addr.port;
        options.onListen?.(addr, again);
      },
    }, options.handler);
    listenedAt = now();
    server.finished.catch((error) => {
      if (stopping) return;
      // Answer what is in progress and close idle connections: that frees
      // the descriptors a flood took.
      server.shutdown().catch(() => {});
      retryLater(error);
    });
    return server;
  };

  const retryLater = (error: unknown) => {
    // A server that ran a while starts over from the shortest delay.
    if (now() - listenedAt > 10 * maxDelay) delay = firstDelay;
    const wait = delay;
    delay = Math.min(maxDelay, delay * 2);
    options.onFailure?.(error, wait);
    retryTimer = setTimeout(() => {
      retryTimer = undefined;
      if (stopping) return;
      try {
        current = listen(true);
        restarts++;
      } catch (e) {
        retryLater(e);
      }
    }, wait);
  };

  let current = listen(false);
  const addr = current.addr;
  return {
    addr,
    get restarts() {
      return restarts;
    },
    async shutdown() {
      stopping = true;
      clearTimeout(retryTimer);
      await current.shutdown();
    },
  };
}

/**
 * Errors of opening a listening socket that an operator fixes: the port is
 * taken, the process may not use it (a port below 1024), or the host is no
 * address of this machine.
 */
const LISTEN_FAILURES = [
  Deno.errors.AddrInUse,
  Deno.errors.PermissionDenied,
  Deno.errors.AddrNotAvailable,
];

/**
 * The one line that says why `hostname`:`port` cannot be listened on, or
 * `null` when `error` is not one an operator fixes by choosing another
 * address.
 *
 * @example
 * ```ts
 * listenFailure(new Deno.errors.AddrInUse("Address already in use (os error 98)"), "127.0.0.1", 8000);
 * // "Cannot listen on 127.0.0.1:8000: Address already in use (os error 98)"
 * ```
 */
export function listenFailure(
  error: unknown,
  hostname: string,
  port: number,
): string | null {
  if (!LISTEN_FAILURES.some((kind) => error instanceof kind)) return null;
  const host = hostname.includes(":") ? `[${hostname}]` : hostname;
  return `Cannot listen on ${host}:${port}: ${(error as Error).message}`;
}

/**
 * Runs `listen` (`Deno.serve` or {@linkcode serveResilient}, at start-up)
 * and returns what it returns; when the socket cannot be opened (a port
 * taken, not permitted, a host not of this machine), prints one line on
 * stderr and exits with code 1 instead of a stack trace. Other errors
 * propagate.
 *
 * @example
 * ```ts
 * const server = listenOrExit("127.0.0.1", 8000, () =>
 *   Deno.serve({ hostname: "127.0.0.1", port: 8000 }, handler));
 * ```
 */
export function listenOrExit<T>(
  hostname: string,
  port: number,
  listen: () => T,
): T {
  try {
    return listen();
  } catch (error) {
    const line = listenFailure(error, hostname, port);
    if (line === null) throw error;
    console.error(line);
    Deno.exit(1);
  }
}

/**
 * Runs `shutdown` on SIGINT or SIGTERM, where the platform has signals (Deno
 * Deploy has none).
 */
export function onStopSignals(shutdown: () => void | Promise<void>): void {
  for (const signal of ["SIGINT", "SIGTERM"] as const) {
    try {
      Deno.addSignalListener(signal, shutdown);
    } catch { /* no signals on this platform (Deno Deploy) */ }
  }
}

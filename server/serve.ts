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

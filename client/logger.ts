/**
 * `createLogger()`: the entry builders (`info`, `warning`, `error`,
 * `critical`, `log`), signing for server loggers, and the wiring of the
 * sender, the page watch and error capture.
 *
 * A server logger (one given the project `secret`) signs each entry when it
 * is first sent. A retry resends it unchanged, the same `timestamp` and
 * `signature`: a `429` or `503` means nothing was queued, and after a network
 * error the service may have queued it, in which case it drops the second
 * copy as `replayed` (it remembers signatures for twice the 5-minute skew
 * window), so the entry is stored once either way. A signature older than
 * `resignAfterMs` (4 minutes) would arrive stale, so such a retry is signed
 * again. Timestamps increase by at least 1 ms from one entry to the next, so
 * two equal entries never share a signature. Entries without a signature
 * (browsers, app ids) have no such guard: a retry after a lost answer may
 * store them twice.
 *
 * @module
 */
import {
  captureConsole,
  captureErrors,
  type CaptureOptions,
  type ConsoleMethod,
  quietly,
} from "./capture.ts";
import { deviceOf } from "./context.ts";
import {
  createSender,
  type DeliveryError,
  type DeliveryOptions,
  type DeliveryStats,
  type Job,
} from "./delivery.ts";
import { watchPage } from "./page.ts";
import { type Entry, sign, signedParams } from "./sign.ts";

/** Options of {@linkcode createLogger}. */
export interface LoggerOptions extends DeliveryOptions {
  /** URL of the endpoint, `https://logs.example.com/api/v1/logs`. */
  endpoint: string;
  projectId: string;
  /** Application id in reverse domain notation, for mobile clients. */
  appid?: string;
  /** Project secret, for servers only: never put it in a page. */
  secret?: string;
  /** Sent with every entry. */
  context?: Record<string, unknown>;
  /**
   * The release of the code sending, as `context.release`: what the
   * service's releases and "resolved in release" go by (docs/errors.md).
   * @default none
   */
  release?: string;
  /** The build of the release (`context.dist`), such as a platform's build number. @default none */
  dist?: string;
  /** Sent with every entry, over what `deviceContext` adds. */
  device?: Record<string, unknown> | string;
  /**
   * Add to `device` where the logger runs: in a browser the user agent,
   * platform, language, viewport and page URL (no query or fragment); on a
   * server the runtime, OS and host name (client/context.ts).
   * @default {true}
   */
  deviceContext?: boolean;
  /** Age past which a retried signed entry is signed again. @default {240000} */
  resignAfterMs?: number;
  /** Send what is queued by beacon when the page is hidden or left, at the pace (client/page.ts). @default {true} in a browser without `secret` */
  beacon?: boolean;
  /**
   * Called with each entry before it is sent (and signed): returns the
   * entry to send, changed or not, or `null` to drop it. For scrubbing at
   * the source. When it throws or returns no entry object, the entry is
   * dropped and `onError` is told (`before_send_failed`): an entry the hook
   * was meant to clean is never sent as it was.
   * @default none
   */
  beforeSend?: (entry: Entry) => Entry | null;
}

/** A message: a string, or an error whose message and stack are sent. */
export type Message = string | Error;

/** Logs an entry of one standard level: a title, a message, more data. */
export type LevelMethod = (
  title: string,
  message?: Message,
  data?: Record<string, unknown>,
) => void;

/** The logger returned by {@linkcode createLogger}. */
export interface Logger {
  /** General events and user actions. */
  info: LevelMethod;
  /** Potential issues that do not stop execution. */
  warning: LevelMethod;
  /** Runtime errors and failed operations. */
  error: LevelMethod;
  /** System failures, data corruption, security breaches. */
  critical: LevelMethod;
  /** An entry at any level, custom levels included. */
  log(level: string, data: Record<string, unknown>): void;
  /** Resolves `true` once every entry queued was answered, `false` after `timeoutMs`. */
  flush(timeoutMs?: number): Promise<boolean>;
  /**
   * Stops taking entries, flushes (for at most `timeoutMs`), then drops what
   * is left and removes every listener. Resolves as `flush()` does.
   */
  close(timeoutMs?: number): Promise<boolean>;
  /** Logs uncaught errors and unhandled rejections; returns the function that stops it. */
  captureErrors(options?: CaptureOptions): () => void;
  /**
   * Logs what `console.error` and `console.warn` print (or `methods`), at
   * levels `error` and `warning`; returns the function that stops it.
   */
  captureConsole(methods?: ConsoleMethod[]): () => void;
  /** Counters: queued, in flight, sent, retried, dropped, failed, beaconed. */
  stats(): DeliveryStats;
}

const encoder = new TextEncoder();

/** The parts of a browser's global scope the logger uses. */
const page = globalThis as unknown as {
  document?: { visibilityState: string };
  navigator: { sendBeacon(url: string, body: string): boolean };
};

/**
 * The headers of a job's request. A server logger (one given `secret`)
 * signs a job when it is first sent and again once the signature is older
 * than `resignAfterMs`; a retry in between resends it unchanged.
 */
function jobHeaders(
  options: LoggerOptions,
  browser: boolean,
): (job: Job) => Promise<Record<string, string>> {
  const { projectId, secret } = options;
  const now = options.now ?? Date.now;
  const resignAfterMs = options.resignAfterMs ?? 240000;
  const headers = {
    "Content-Type": browser && !secret
      ? "text/plain;charset=UTF-8"
      : "application/json",
  };
  let lastStamp = 0;
  return async (job) => {
    if (!secret) return headers;
    if (!job.headers || now() - job.madeAt! > resignAfterMs) {
      lastStamp = Math.max(now(), lastStamp + 1);
      job.madeAt = lastStamp;
      job.headers = {
        ...headers,
        timestamp: String(lastStamp),
        signature: await sign(secret, projectId + job.params + lastStamp),
      };
    }
    return job.headers;
  };
}

/** The method logging at `level`: a title, a message, more data. */
function levelMethod(log: Logger["log"], level: string): LevelMethod {
  return (title, message, data) =>
    log(
      level,
      message instanceof Error
        ? { title, message: message.message, stack: message.stack, ...data }
        : { title, message, ...data },
    );
}

/**
 * `entry` as `options.beforeSend` returns it, for the logger's own project
 * and app id; `null` to drop it, also when the hook fails (`onError` is
 * told).
 */
function beforeSend(
  options: LoggerOptions,
  onError: (error: DeliveryError) => void,
  entry: Entry,
): Entry | null {
  const hook = options.beforeSend;
  if (!hook) return entry;
  let out: Entry | null;
  try {
    out = quietly(() => hook(entry));
    if (out !== null && (typeof out !== "object" || !out.data)) {
      throw new Error("it returned no entry");
    }
  } catch (e) {
    onError({
      status: 0,
      code: "before_send_failed",
      message: `Cannot send the entry: beforeSend failed: ${
        (e as Error)?.message
      }`,
      entry,
    });
    return null;
  }
  // A copy: the hook may hand back an entry it froze.
  return out && { ...out, projectId: options.projectId, appid: options.appid };
}

/**
 * `options.onError`, called so that what it prints is not captured
 * (`captureConsole`): it is called as delivery gives up on an entry, long
 * after the entry was logged, and an entry made of its print could fail the
 * same way, and so on without end.
 */
function quietOnError(
  options: LoggerOptions,
): (error: DeliveryError) => void {
  return (error) => quietly(() => options.onError?.(error));
}

/** The context of every entry: `context`, with `release` and `dist` over it. */
function contextOf(
  options: LoggerOptions,
): Record<string, unknown> | undefined {
  const { release, dist } = options;
  return release || dist
    ? { ...options.context, release, dist }
    : options.context;
}

/**
 * Creates a logger that sends entries to the service, paced, retried and
 * flushed as the page or process ends.
 *
 * @example
 * ```ts
 * const logger = createLogger({
 *   endpoint: "https://logs.example.com/api/v1/logs",
 *   projectId: "kVJnjiTjzH553YfV8uhZ4g",
 *   context: { environment: "production" },
 * });
 * logger.error("Checkout failed", "Card declined", { orderId: 1234 });
 * ```
 */
export function createLogger(options: LoggerOptions): Logger {
  const onError = quietOnError(options);
  const browser = !!page.document;
  const device = deviceOf(
    globalThis,
    options.deviceContext ?? true,
    options.device,
  );
  const sender = createSender({
    ...options,
    onError,
    keepalive: browser,
    headers: jobHeaders(options, browser),
  });
  const stops: (() => void)[] = [];
  const context = contextOf(options);
  const keep = (stop: () => void) => (stops.push(stop), stop);
  if (options.beacon ?? (browser && !options.secret)) {
    stops.push(watchPage(sender, {
      target: globalThis,
      hidden: () => page.document?.visibilityState === "hidden",
      sendBeacon: (body) => page.navigator.sendBeacon(options.endpoint, body),
    }));
  }
  function log(level: string, data: Record<string, unknown>): void {
    const entry = beforeSend(options, onError, {
      level,
      projectId: options.projectId,
      device: device(),
      context,
      data,
      appid: options.appid,
    });
    if (entry === null) return;
    // The text is made now, so that changes to `data` after this call
    // change neither the body nor what is signed.
    let params: string;
    try {
      params = signedParams(entry);
    } catch (e) {
      onError({
        status: 0,
        code: "invalid_entry",
        message: `Cannot serialize the entry: ${(e as Error).message}`,
        entry,
      });
      return;
    }
    const body = options.appid === undefined
      ? params
      : `${params.slice(0, -1)},"appid":${JSON.stringify(options.appid)}}`;
    sender.push({
      entry,
      body,
      params,
      bytes: encoder.encode(body).length,
      attempts: 0,
    });
  }

  const logger: Logger = {
    info: levelMethod(log, "info"),
    warning: levelMethod(log, "warning"),
    error: levelMethod(log, "error"),
    critical: levelMethod(log, "critical"),
    log,
    flush: sender.flush,
    async close(timeoutMs) {
      sender.seal();
      const idle = await sender.flush(timeoutMs);
      sender.stop();
      for (const stop of stops.splice(0)) stop();
      return idle;
    },
    captureErrors: (capture) => keep(captureErrors(logger, capture)),
    captureConsole: (methods) => keep(captureConsole(logger, methods)),
    stats: sender.stats,
  };
  return logger;
}

export type {
  CaptureOptions,
  ConsoleMethod,
  DeliveryError,
  DeliveryOptions,
  DeliveryStats,
};

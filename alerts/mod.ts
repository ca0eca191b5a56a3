/**
 * The alert loop of one process: each tick evaluates the rules within a
 * budget of time shared among projects, which take turns from tick to tick
 * (alerts/evaluate.ts, alerts/rotation.ts), and starts the deliveries that
 * are due (alerts/dispatch.ts), without waiting for their answers. `main.ts` starts it on an interval and calls
 * {@linkcode AlertLoop.tick} from its cron as well, since intervals may not
 * run between requests on Deno Deploy; tests call `tick` by hand. Ticks do
 * not overlap: a tick asked for while one runs joins it.
 *
 * @module
 */
import type { AttemptOutcome, Delivery } from "../db/alerts.ts";
import { type EvaluateOptions, evaluateRules } from "./evaluate.ts";
import { createDispatcher, type DispatchOptions } from "./dispatch.ts";
import { lockedAsLine } from "../db/locked.ts";
import type { Reads } from "../db/query/reads.ts";
import { createTurns } from "./rotation.ts";

/** Period of the alert loop. */
export const ALERT_INTERVAL_MS = 2000;

/** Options of {@linkcode createAlertLoop}. */
export interface AlertLoopOptions extends Omit<DispatchOptions, "onError"> {
  /** Told of a failure; the loop goes on. @default logs to stderr */
  onError?: (error: unknown) => void;
  /** @default {ALERT_INTERVAL_MS} */
  intervalMs?: number;
  /** The dashboard's URL, for the links of group deliveries. @default none */
  dashboardUrl?: string;
  /** Where the rules' entries are read (the query thread). @default in this thread */
  reads?: Reads;
  /**
   * Milliseconds of a monotonic clock, for the time a tick spends
   * evaluating rules. @default {performance.now}
   */
  clock?: () => number;
}

/** What one tick did. */
export interface TickResult {
  queued: Delivery[];
  /** Deliveries the tick started (their answers are not awaited). */
  started: number;
  /** Outcomes recorded since the previous tick (attempts that ended, backoffs). */
  attempts: AttemptOutcome[];
}

/** The running alert loop. */
export interface AlertLoop {
  /**
   * Evaluates the rules (those of the projects whose turn it is, within the
   * tick's budget), then starts what is due.
   */
  tick(): Promise<TickResult>;
  /**
   * Waits until no delivery is in flight; the outcomes recorded since the
   * previous tick or call.
   */
  settled(): Promise<AttemptOutcome[]>;
  /** Ticks every `intervalMs` until stopped. */
  start(): void;
  /**
   * Stops the interval, waits for the tick in progress and ends the
   * deliveries in flight (each recorded as retrying).
   */
  stop(): Promise<void>;
}

/**
 * Builds the alert loop of a process.
 *
 * @example
 * ```ts
 * const alerts = createAlertLoop({ kv, allowPrivate: false });
 * alerts.start();
 * ```
 */
export function createAlertLoop(options: AlertLoopOptions): AlertLoop {
  const onError = options.onError ??
    ((error: unknown) => console.error("Alerts:", lockedAsLine(error)));
  let running: Promise<TickResult> | null = null;
  let timer: ReturnType<typeof setInterval> | undefined;
  const evaluate: EvaluateOptions = {
    kv: options.kv,
    ...(options.now ? { now: options.now } : {}),
    ...(options.dashboardUrl ? { dashboardUrl: options.dashboardUrl } : {}),
    ...(options.reads ? { reads: options.reads } : {}),
    ...(options.clock ? { clock: options.clock } : {}),
    turns: createTurns(),
    onError: (rule, error) =>
      onError(
        new Error(`Cannot evaluate alert rule "${rule.id}"`, { cause: error }),
      ),
  };
  const dispatcher = createDispatcher({ ...options, onError });
  const run = async (): Promise<TickResult> => {
    const queued = await evaluateRules(evaluate);
    const started = await dispatcher.sweep();
    return { queued, started, attempts: dispatcher.take() };
  };
  const tick = () => {
    running ??= run().finally(() => {
      running = null;
    });
    return running;
  };
  return {
    tick,
    async settled() {
      await dispatcher.settled();
      return dispatcher.take();
    },
    start() {
      timer = setInterval(() => {
        tick().catch(onError);
      }, options.intervalMs ?? ALERT_INTERVAL_MS);
    },
    async stop() {
      clearInterval(timer);
      timer = undefined;
      await running?.catch(() => {});
      await dispatcher.stop();
    },
  };
}

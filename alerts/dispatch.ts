/**
 * Which deliveries of the outbox go now, and how many at once
 * (docs/alerts.md#fairness): one slow target must not delay anyone else's
 * alerts.
 *
 * - A sweep starts the due deliveries and returns at once: no sweep, and
 *   no tick of the alert loop, waits for an answer.
 * - At most {@linkcode MAX_IN_FLIGHT_PER_TARGET} attempts per target (the
 *   webhook's host and port), {@linkcode MAX_IN_FLIGHT_PER_PROJECT} per
 *   project and {@linkcode MAX_IN_FLIGHT} in all are in flight. A due
 *   delivery over a bound goes to the back of the queue (its due time
 *   becomes now), so the ones behind it are reached in the same sweep.
 * - A target that timed out {@linkcode BACKOFF_AFTER_TIMEOUTS} times in a
 *   row is backed off ({@linkcode TARGET_BACKOFF_MS}): its deliveries wait,
 *   without an attempt counted, and each rule's history says so. Any answer
 *   from it ends the backoff.
 * - When an attempt ends and the last sweep left work behind, another
 *   sweep starts, without waiting for the next tick.
 *
 * What is in flight and which targets are backed off is this process's
 * view: each server applies the bounds to what it sends.
 *
 * @module
 */
import {
  type AlertRule,
  type AttemptOutcome,
  type Delivery,
  type DeliveryAttempt,
  forgetDelivery,
  getAlertRule,
} from "../db/alerts.ts";
import { decodeJson } from "../db/kv.ts";
import {
  attemptDelivery,
  type Claim,
  claimDelivery,
  listDueDeliveries,
  postponeDelivery,
  recordAttempt,
  type SendOptions,
  settleDelivery,
} from "./deliver.ts";

/** Attempts one server has in flight at most. */
export const MAX_IN_FLIGHT = 32;
/** Attempts in flight at most for the rules of one project. */
export const MAX_IN_FLIGHT_PER_PROJECT = 8;
/** Attempts in flight at most to one target (host and port). */
export const MAX_IN_FLIGHT_PER_TARGET = 2;
/** Timeouts in a row after which a target is backed off. */
export const BACKOFF_AFTER_TIMEOUTS = 3;
/** Backoff of a target, growing with each further timeout; then the last. */
export const TARGET_BACKOFF_MS: readonly number[] = [30_000, 120_000, 600_000];
/** Due outbox entries one sweep reads at most. */
const SWEEP_LIST = 200;
/** Targets whose timeouts are remembered at most (the oldest go first). */
const MAX_TARGETS_TRACKED = 10_000;

/** Options of {@linkcode createDispatcher}. */
export interface DispatchOptions extends SendOptions {
  /** Told of every attempt recorded (and of every backoff). */
  onAttempt?: (attempt: DeliveryAttempt & { ruleId: string }) => void;
  /** Told of a failure of a sweep or of settling an attempt. */
  onError?: (error: unknown) => void;
}

/** The deliveries of one process. */
export interface Dispatcher {
  /** Starts what is due now; resolves once started, with how many. */
  sweep(): Promise<number>;
  /** The outcomes recorded since the last call, cleared. */
  take(): AttemptOutcome[];
  /** Waits until no attempt is in flight. */
  settled(): Promise<void>;
  /** Ends the attempts in flight (recorded as retrying) and waits for them. */
  stop(): Promise<void>;
}

/** A target's run of timeouts. */
interface TargetState {
  timeouts: number;
  /** Backed off until then, Unix ms (0: not backed off). */
  until: number;
}

/** Where a rule's deliveries go, for the bounds: the webhook's host and port. */
export function targetOf(webhook: string): string {
  try {
    return new URL(webhook).host.toLowerCase();
  } catch {
    return webhook;
  }
}

function formatUtc(ms: number): string {
  return `${new Date(ms).toISOString().slice(11, 19)} UTC`;
}

/**
 * Builds the dispatcher of a process.
 *
 * @example
 * ```ts
 * const dispatcher = createDispatcher({ kv, allowPrivate: false });
 * await dispatcher.sweep(); // started, not awaited
 * ```
 */
export function createDispatcher(options: DispatchOptions): Dispatcher {
  const state: DispatchState = {
    options,
    kv: options.kv,
    clock: options.now ?? Date.now,
    stopping: new AbortController(),
    inFlight: new Set(),
    perProject: new Map(),
    perTarget: new Map(),
    targets: new Map(),
    outcomes: [],
    sweeping: null,
    again: false,
    leftBehind: false,
  };
  return {
    sweep: () => sweep(state),
    take() {
      const taken = state.outcomes;
      state.outcomes = [];
      return taken;
    },
    settled: () => settled(state),
    async stop() {
      state.stopping.abort();
      await settled(state);
    },
  };
}

/** What one dispatcher knows, shared by the steps below. */
interface DispatchState {
  options: DispatchOptions;
  kv: Deno.Kv;
  clock: () => number;
  stopping: AbortController;
  inFlight: Set<Promise<void>>;
  /** Attempts in flight per project and per target (none: absent). */
  perProject: Map<string, number>;
  perTarget: Map<string, number>;
  /** Targets with timeouts in a row, oldest first. */
  targets: Map<string, TargetState>;
  /** Outcomes since the last `take()`. */
  outcomes: AttemptOutcome[];
  /** The sweep running, if any. */
  sweeping: Promise<number> | null;
  /** A sweep was asked for while one ran. */
  again: boolean;
  /** The last sweep left due deliveries behind for a bound. */
  leftBehind: boolean;
}

/** Sweeps do not overlap: one asked for while one runs follows it. */
function sweep(state: DispatchState): Promise<number> {
  if (state.sweeping !== null) {
    state.again = true;
    return state.sweeping;
  }
  const sweeping = (async () => {
    let started = 0;
    do {
      state.again = false;
      started += await sweepOnce(state);
    } while (state.again && !state.stopping.signal.aborted);
    return started;
  })().finally(() => {
    state.sweeping = null;
  });
  state.sweeping = sweeping;
  return sweeping;
}

/** Waits until no attempt is in flight and no sweep runs. */
async function settled(state: DispatchState): Promise<void> {
  while (state.inFlight.size > 0 || state.sweeping !== null) {
    await Promise.allSettled([...state.inFlight, state.sweeping]);
  }
}

/**
 * Goes once through what is due: drops what cannot be sent, holds back what
 * goes to a backed-off target, postpones what is over a bound and starts
 * the rest. Resolves with how many attempts it started.
 */
async function sweepOnce(state: DispatchState): Promise<number> {
  const { kv } = state;
  const now = state.clock();
  const rules = new Map<string, AlertRule | null>();
  let started = 0;
  state.leftBehind = false;
  for (const entry of await listDueDeliveries(kv, now, SWEEP_LIST)) {
    if (state.stopping.signal.aborted) break;
    if (state.inFlight.size >= MAX_IN_FLIGHT) {
      state.leftBehind = true;
      break;
    }
    const delivery = decodeJson<Delivery>(entry.value);
    const rule = delivery === null ? null : await ruleOf(kv, rules, delivery);
    if (delivery === null || rule === null) {
      // Unreadable, or its rule is gone: dropped.
      const op = kv.atomic().check(entry).delete(entry.key);
      if (delivery !== null) forgetDelivery(op, delivery);
      await op.commit();
      continue;
    }
    const target = targetOf(rule.webhook);
    const backoff = state.targets.get(target);
    if (backoff !== undefined && backoff.until > now) {
      await holdBack(state, entry, delivery, target, backoff);
      continue;
    }
    if (atBound(state, delivery.projectId, target)) {
      // To the back of what is due, behind the other projects' deliveries.
      await postponeDelivery(kv, entry, delivery, now + 1);
      state.leftBehind = true;
      continue;
    }
    const claim = await claimDelivery(kv, entry, delivery, now);
    if (claim === null) continue;
    startAttempt(state, claim, rule, target);
    started++;
  }
  return started;
}

/** The rule of `delivery` (null: gone), read once per sweep into `rules`. */
async function ruleOf(
  kv: Deno.Kv,
  rules: Map<string, AlertRule | null>,
  delivery: Delivery,
): Promise<AlertRule | null> {
  const ruleKey = `${delivery.projectId}/${delivery.ruleId}`;
  if (!rules.has(ruleKey)) {
    rules.set(
      ruleKey,
      await getAlertRule(kv, delivery.projectId, delivery.ruleId),
    );
  }
  return rules.get(ruleKey) ?? null;
}

/** Whether the project or the target has as many attempts in flight as allowed. */
function atBound(
  state: DispatchState,
  projectId: string,
  target: string,
): boolean {
  return (state.perProject.get(projectId) ?? 0) >= MAX_IN_FLIGHT_PER_PROJECT ||
    (state.perTarget.get(target) ?? 0) >= MAX_IN_FLIGHT_PER_TARGET;
}

/**
 * Starts an attempt, not awaited: counted in flight until it is settled;
 * when it ends and the last sweep left work behind, another sweep starts.
 */
function startAttempt(
  state: DispatchState,
  claim: Claim,
  rule: AlertRule,
  target: string,
): void {
  const { options, perProject, perTarget, inFlight, stopping } = state;
  const { projectId } = claim.delivery;
  addCount(perProject, projectId, 1);
  addCount(perTarget, target, 1);
  const send = async () => {
    const result = await attemptDelivery(claim.delivery, rule, {
      ...options,
      stop: stopping.signal,
    });
    const at = state.clock();
    // A timeout counts towards a backoff, any answer ends it; a refused
    // connection is quick and changes neither.
    if (result.timedOut) observeTarget(state, target, true, at);
    else if (result.status !== undefined) {
      observeTarget(state, target, false, at);
    }
    record(state, await settleDelivery(state.kv, claim, result, at), rule.id);
  };
  const run: Promise<void> = send().catch((error) => options.onError?.(error))
    .finally(() => {
      addCount(perProject, projectId, -1);
      addCount(perTarget, target, -1);
      inFlight.delete(run);
      if (state.leftBehind && !stopping.signal.aborted) {
        sweep(state).catch((error) => options.onError?.(error));
      }
    });
  inFlight.add(run);
}

/** Adds `n` to the count of `key`, removing it at 0. */
function addCount(map: Map<string, number>, key: string, n: number): void {
  const value = (map.get(key) ?? 0) + n;
  if (value === 0) map.delete(key);
  else map.set(key, value);
}

/** Counts a timeout or an answer of `target`; backs it off when due. */
function observeTarget(
  state: DispatchState,
  target: string,
  timedOut: boolean,
  at: number,
): void {
  const { targets } = state;
  if (!timedOut) {
    targets.delete(target);
    return;
  }
  const backoff = targets.get(target) ?? { timeouts: 0, until: 0 };
  targets.delete(target); // re-inserted last: the map stays in age order
  backoff.timeouts++;
  const step = backoff.timeouts - BACKOFF_AFTER_TIMEOUTS;
  if (step >= 0 && backoff.until <= at) {
    backoff.until = at +
      TARGET_BACKOFF_MS[Math.min(step, TARGET_BACKOFF_MS.length - 1)]!;
  }
  targets.set(target, backoff);
  if (targets.size > MAX_TARGETS_TRACKED) {
    targets.delete(targets.keys().next().value!);
  }
}

/** Holds a delivery of a backed-off target until its backoff ends. */
async function holdBack(
  state: DispatchState,
  entry: Deno.KvEntry<unknown>,
  delivery: Delivery,
  target: string,
  backoff: TargetState,
): Promise<void> {
  const { kv } = state;
  if (!await postponeDelivery(kv, entry, delivery, backoff.until)) return;
  const attempt = await recordAttempt(kv, delivery, {
    at: state.clock(),
    attempt: delivery.attempts + 1, // not made
    outcome: "backed-off",
    error:
      `Backed off: "${target}" timed out ${backoff.timeouts} times in a row; next attempt at ${
        formatUtc(backoff.until)
      }`,
  });
  record(state, attempt, delivery.ruleId);
}

/** Keeps an attempt's outcome for `take()` and tells `onAttempt`. */
function record(
  state: DispatchState,
  attempt: DeliveryAttempt,
  ruleId: string,
): void {
  state.outcomes.push(attempt.outcome);
  state.options.onAttempt?.({ ...attempt, ruleId });
}

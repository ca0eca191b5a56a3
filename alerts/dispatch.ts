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
  getAlertRule,
  recordAlertAttempt,
} from "../db/alerts.ts";
import { decodeJson } from "../db/kv.ts";
import { createId } from "../domain/ids.ts";
import {
  attemptDelivery,
  type Claim,
  claimDelivery,
  listDueDeliveries,
  postponeDelivery,
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
  const { kv } = options;
  const clock = options.now ?? Date.now;
  const stopping = new AbortController();
  const inFlight = new Set<Promise<void>>();
  const perProject = new Map<string, number>();
  const perTarget = new Map<string, number>();
  const targets = new Map<string, TargetState>();
  let outcomes: AttemptOutcome[] = [];
  let sweeping: Promise<number> | null = null;
  let again = false;
  let leftBehind = false;

  const add = (map: Map<string, number>, key: string, n: number) => {
    const value = (map.get(key) ?? 0) + n;
    if (value === 0) map.delete(key);
    else map.set(key, value);
  };

  const record = (attempt: DeliveryAttempt, ruleId: string) => {
    outcomes.push(attempt.outcome);
    options.onAttempt?.({ ...attempt, ruleId });
  };

  /** Counts a timeout or an answer of `target`; backs it off when due. */
  const observe = (target: string, timedOut: boolean, at: number) => {
    if (!timedOut) {
      targets.delete(target);
      return;
    }
    const state = targets.get(target) ?? { timeouts: 0, until: 0 };
    targets.delete(target); // re-inserted last: the map stays in age order
    state.timeouts++;
    const step = state.timeouts - BACKOFF_AFTER_TIMEOUTS;
    if (step >= 0 && state.until <= at) {
      state.until = at +
        TARGET_BACKOFF_MS[Math.min(step, TARGET_BACKOFF_MS.length - 1)]!;
    }
    targets.set(target, state);
    if (targets.size > MAX_TARGETS_TRACKED) {
      targets.delete(targets.keys().next().value!);
    }
  };

  const start = (claim: Claim, rule: AlertRule, target: string) => {
    const { projectId } = claim.delivery;
    add(perProject, projectId, 1);
    add(perTarget, target, 1);
    const send = async () => {
      const result = await attemptDelivery(claim.delivery, rule, {
        ...options,
        stop: stopping.signal,
      });
      const at = clock();
      // A timeout counts towards a backoff, any answer ends it; a refused
      // connection is quick and changes neither.
      if (result.timedOut) observe(target, true, at);
      else if (result.status !== undefined) observe(target, false, at);
      record(await settleDelivery(kv, claim, result, at), rule.id);
    };
    const run: Promise<void> = send().catch((error) => options.onError?.(error))
      .finally(() => {
        add(perProject, projectId, -1);
        add(perTarget, target, -1);
        inFlight.delete(run);
        if (leftBehind && !stopping.signal.aborted) {
          sweep().catch((error) => options.onError?.(error));
        }
      });
    inFlight.add(run);
  };

  /** Holds a delivery of a backed-off target until its backoff ends. */
  const holdBack = async (
    entry: Deno.KvEntry<unknown>,
    delivery: Delivery,
    state: TargetState,
    target: string,
  ) => {
    if (!await postponeDelivery(kv, entry, delivery, state.until)) return;
    const at = clock();
    const attempt: DeliveryAttempt = {
      deliveryId: delivery.id,
      at,
      attempt: delivery.attempts + 1,
      count: delivery.count,
      error:
        `Backed off: "${target}" timed out ${state.timeouts} times in a row; next attempt at ${
          formatUtc(state.until)
        }`,
      outcome: "backed-off",
    };
    await recordAlertAttempt(
      kv,
      delivery.projectId,
      delivery.ruleId,
      createId(at),
      attempt,
    );
    record(attempt, delivery.ruleId);
  };

  const sweepOnce = async (): Promise<number> => {
    const now = clock();
    const rules = new Map<string, AlertRule | null>();
    let started = 0;
    leftBehind = false;
    for (const entry of await listDueDeliveries(kv, now, SWEEP_LIST)) {
      if (stopping.signal.aborted) break;
      if (inFlight.size >= MAX_IN_FLIGHT) {
        leftBehind = true;
        break;
      }
      const delivery = decodeJson<Delivery>(entry.value);
      const ruleKey = `${delivery?.projectId}/${delivery?.ruleId}`;
      if (delivery !== null && !rules.has(ruleKey)) {
        rules.set(
          ruleKey,
          await getAlertRule(kv, delivery.projectId, delivery.ruleId),
        );
      }
      const rule = delivery === null ? null : rules.get(ruleKey) ?? null;
      if (delivery === null || rule === null) {
        // Unreadable, or its rule is gone: dropped.
        await kv.atomic().check(entry).delete(entry.key).commit();
        continue;
      }
      const target = targetOf(rule.webhook);
      const state = targets.get(target);
      if (state !== undefined && state.until > now) {
        await holdBack(entry, delivery, state, target);
        continue;
      }
      if (
        (perProject.get(delivery.projectId) ?? 0) >=
          MAX_IN_FLIGHT_PER_PROJECT ||
        (perTarget.get(target) ?? 0) >= MAX_IN_FLIGHT_PER_TARGET
      ) {
        // To the back of what is due, behind the other projects' deliveries.
        await postponeDelivery(kv, entry, delivery, now + 1);
        leftBehind = true;
        continue;
      }
      const claim = await claimDelivery(kv, entry, delivery, now);
      if (claim === null) continue;
      start(claim, rule, target);
      started++;
    }
    return started;
  };

  /** Sweeps do not overlap: one asked for while one runs follows it. */
  const sweep = (): Promise<number> => {
    if (sweeping !== null) {
      again = true;
      return sweeping;
    }
    sweeping = (async () => {
      let started = 0;
      do {
        again = false;
        started += await sweepOnce();
      } while (again && !stopping.signal.aborted);
      return started;
    })().finally(() => {
      sweeping = null;
    });
    return sweeping;
  };

  const settled = async () => {
    while (inFlight.size > 0 || sweeping !== null) {
      await Promise.allSettled([...inFlight, sweeping]);
    }
  };

  return {
    sweep,
    take() {
      const taken = outcomes;
      outcomes = [];
      return taken;
    },
    settled,
    async stop() {
      stopping.abort();
      await settled();
    },
  };
}

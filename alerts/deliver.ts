/**
 * Sending one delivery of the alert outbox: a durable queue kept in KV
 * (never Deno's `enqueue`, which the new Deno Deploy lacks). Which
 * deliveries go, and how many at once, is alerts/dispatch.ts's business
 * (docs/alerts.md#deliveries-retries-and-history).
 *
 * A delivery is claimed by moving its outbox key to the end of a lease in
 * one atomic operation checked on its versionstamp: one instance wins, and
 * if it dies while sending, the delivery is due again when the lease ends.
 * Each attempt is signed, sent with a timeout, no redirect followed and at
 * most a few KB of the answer read, and recorded in the rule's history; a
 * failure is retried after each of {@linkcode RETRY_DELAYS_MS}, then given up.
 *
 * @module
 */
import { createHmac, timingSafeEqual } from "node:crypto";
import {
  type AttemptOutcome,
  type Delivery,
  type DeliveryAttempt,
  dropOldDeliveries,
  forgetDelivery,
  MAX_WAITING_PER_RULE,
  putDelivery,
  recordAlertAttempt,
} from "../db/alerts.ts";
import { alertOutboxKey } from "../db/keys.ts";
import { createId } from "../domain/ids.ts";
import {
  checkResolvedTarget,
  type Resolver,
  WebhookTargetError,
} from "./targets.ts";

/** Waits before each new attempt after a failure; then it is given up. */
export const RETRY_DELAYS_MS: readonly number[] = [
  1000,
  5000,
  30_000,
  120_000,
  600_000,
];
/** Time a receiver has to answer. */
export const DELIVERY_TIMEOUT_MS = 5000;
/** Time a claimed delivery is held before another instance may send it. */
const LEASE_MS = 60_000;
/** Bytes of a receiver's answer read at most. */
const MAX_ANSWER_BYTES = 4096;
/** Header carrying the signature. */
export const SIGNATURE_HEADER = "X-Logs-Signature";

/**
 * The signature header of `body` sent at `t` (Unix ms):
 * `t=<ms>,v1=<hex HMAC-SHA256 of "<t>.<body>">`.
 *
 * @example
 * ```ts
 * signDelivery("whsec_…", '{"text":"…"}', Date.now()); // "t=1767225600000,v1=5f2c…"
 * ```
 */
export function signDelivery(secret: string, body: string, t: number): string {
  const mac = createHmac("sha256", secret).update(`${t}.${body}`).digest(
    "hex",
  );
  return `t=${t},v1=${mac}`;
}

/**
 * Checks a signature header as a receiver would: the HMAC matches (compared
 * in constant time) and `t` is within `toleranceMs` of `now`.
 *
 * @example
 * ```ts
 * verifyDelivery(secret, req.headers.get("X-Logs-Signature"), await req.text());
 * ```
 */
export function verifyDelivery(
  secret: string,
  header: string | null,
  body: string,
  options: { now?: number; toleranceMs?: number } = {},
): boolean {
  const match = /^t=(\d{1,16}),v1=([0-9a-f]{64})$/.exec(header ?? "");
  if (!match) return false;
  const t = Number(match[1]);
  const now = options.now ?? Date.now();
  if (Math.abs(now - t) > (options.toleranceMs ?? 300_000)) return false;
  const expected = signDelivery(secret, body, t).slice(-64);
  return timingSafeEqual(
    new TextEncoder().encode(expected),
    new TextEncoder().encode(match[2]!),
  );
}

/** Options of one delivery attempt. */
export interface SendOptions {
  kv: Deno.Kv;
  /** `ALERT_PRIVATE_TARGETS=allow`. */
  allowPrivate: boolean;
  /** Clock. @default {Date.now} */
  now?: () => number;
  /** @default {globalThis.fetch} */
  fetch?: typeof fetch;
  /** @default Deno.resolveDns */
  resolve?: Resolver;
  /** @default {DELIVERY_TIMEOUT_MS} */
  timeoutMs?: number;
}

/** The result of one attempt. */
export interface AttemptResult {
  ok: boolean;
  status?: number;
  error?: string;
  /** No retry can help (a refused address). */
  final?: boolean;
  /** The receiver did not answer within the timeout. */
  timedOut?: boolean;
}

/** Reads at most `max` bytes of a body, then lets go of the rest. */
async function drain(body: ReadableStream<Uint8Array> | null, max: number) {
  if (body === null) return;
  const reader = body.getReader();
  let read = 0;
  try {
    while (read < max) {
      const { done, value } = await reader.read();
      if (done) return;
      read += value.length;
    }
  } finally {
    await reader.cancel().catch(() => {});
  }
}

/**
 * Sends one claimed delivery: the target is checked (after resolution),
 * then the body POSTed, signed, with a timeout that covers the answer's
 * first bytes too. `stop` ends the attempt early (the server shuts down).
 */
export async function attemptDelivery(
  delivery: Delivery,
  rule: { webhook: string; secret: string },
  options: SendOptions & { stop?: AbortSignal },
): Promise<AttemptResult> {
  try {
    await checkResolvedTarget(rule.webhook, options);
  } catch (error) {
    // A refused address stays refused; a name that does not resolve now
    // may resolve at the next attempt.
    return {
      ok: false,
      error: (error as Error).message,
      final: error instanceof WebhookTargetError,
    };
  }
  const fetcher = options.fetch ?? fetch;
  const timeoutMs = options.timeoutMs ?? DELIVERY_TIMEOUT_MS;
  const timeout = `No answer within ${timeoutMs} ms`;
  // A timer of our own, cleared when the attempt ends, rather than
  // AbortSignal.timeout: nothing outlives the attempt or a stopped loop.
  const controller = new AbortController();
  const timer = setTimeout(
    () => controller.abort(new DOMException(timeout, "TimeoutError")),
    timeoutMs,
  );
  const onStop = () =>
    controller.abort(
      new DOMException("Stopped before an answer", "AbortError"),
    );
  options.stop?.addEventListener("abort", onStop, { once: true });
  try {
    const response = await fetcher(rule.webhook, {
      method: "POST",
      redirect: "manual",
      signal: controller.signal,
      headers: {
        "Content-Type": "application/json",
        "User-Agent": "logs-alerts/1",
        "X-Logs-Delivery": delivery.id,
        "X-Logs-Rule": delivery.ruleId,
        [SIGNATURE_HEADER]: signDelivery(
          rule.secret,
          delivery.body,
          (options.now ?? Date.now)(),
        ),
      },
      body: delivery.body,
    });
    // The status decides: a 2xx whose body never ends is still delivered
    // (a timeout here would send it again).
    await drain(response.body, MAX_ANSWER_BYTES).catch(() => {});
    return response.status >= 200 && response.status < 300
      ? { ok: true, status: response.status }
      : { ok: false, status: response.status };
  } catch (error) {
    const reason = controller.signal.reason ?? error;
    if (reason instanceof DOMException) {
      return reason.name === "TimeoutError"
        ? { ok: false, error: timeout, timedOut: true }
        : { ok: false, error: reason.message };
    }
    return {
      ok: false,
      error: error instanceof Error ? error.message : String(error),
    };
  } finally {
    clearTimeout(timer);
    options.stop?.removeEventListener("abort", onStop);
  }
}

/** A delivery this instance holds: its lease in the outbox. */
export interface Claim {
  delivery: Delivery;
  leaseKey: Deno.KvKey;
  versionstamp: string;
}

/**
 * Claims an outbox entry: moves it to the end of a lease, counting one
 * more attempt; `null` if another instance took it first.
 */
export async function claimDelivery(
  kv: Deno.Kv,
  entry: Deno.KvEntry<unknown>,
  delivery: Delivery,
  now: number,
): Promise<Claim | null> {
  const claimed: Delivery = { ...delivery, attempts: delivery.attempts + 1 };
  const leaseKey = alertOutboxKey(now + LEASE_MS, delivery.id);
  const op = kv.atomic().check(entry).delete(entry.key);
  putDelivery(op, claimed, now + LEASE_MS, true);
  const claim = await op.commit();
  return claim.ok
    ? { delivery: claimed, leaseKey, versionstamp: claim.versionstamp }
    : null;
}

/**
 * Moves an outbox entry to `dueAt` without counting an attempt (its target
 * is busy or backed off); `false` if another instance changed it first.
 */
export async function postponeDelivery(
  kv: Deno.Kv,
  entry: Deno.KvEntry<unknown>,
  delivery: Delivery,
  dueAt: number,
): Promise<boolean> {
  const op = kv.atomic().check(entry).delete(entry.key);
  putDelivery(op, delivery, dueAt);
  return (await op.commit()).ok;
}

/**
 * Ends a claimed attempt: the lease is dropped, the delivery put back for
 * its retry if one is left, and the attempt recorded in the rule's history.
 * Returns what was recorded.
 */
export async function settleDelivery(
  kv: Deno.Kv,
  claim: Claim,
  result: AttemptResult,
  at: number,
): Promise<DeliveryAttempt> {
  const { delivery } = claim;
  const delay = RETRY_DELAYS_MS[delivery.attempts - 1];
  const outcome: AttemptOutcome = result.ok
    ? "delivered"
    : result.final || delay === undefined
    ? "failed"
    : "retrying";
  const op = kv.atomic()
    .check({ key: claim.leaseKey, versionstamp: claim.versionstamp })
    .delete(claim.leaseKey);
  if (outcome === "retrying") putDelivery(op, delivery, at + delay!);
  else forgetDelivery(op, delivery);
  // Lost only if the lease ran out and another instance took it over.
  await op.commit();
  return await recordAttempt(kv, delivery, {
    at,
    attempt: delivery.attempts,
    ...(result.status === undefined ? {} : { status: result.status }),
    ...(result.error === undefined ? {} : { error: result.error }),
    outcome,
  });
}

/**
 * Writes an attempt of `delivery` to its rule's history, under an id of the
 * attempt's time; returns what was written.
 *
 * @example
 * ```ts
 * await recordAttempt(kv, delivery, {
 *   at: Date.now(),
 *   attempt: delivery.attempts + 1, // not made
 *   error: "Backed off: …",
 *   outcome: "backed-off",
 * });
 * ```
 */
export async function recordAttempt(
  kv: Deno.Kv,
  delivery: Delivery,
  fields: Omit<DeliveryAttempt, "deliveryId" | "count">,
): Promise<DeliveryAttempt> {
  const attempt: DeliveryAttempt = {
    deliveryId: delivery.id,
    count: delivery.count,
    ...fields,
  };
  await recordAlertAttempt(
    kv,
    delivery.projectId,
    delivery.ruleId,
    createId(attempt.at),
    attempt,
  );
  return attempt;
}

/**
 * Drops a rule's oldest deliveries past {@linkcode MAX_WAITING_PER_RULE}
 * (its target does not take them as fast as the rule fires), each recorded
 * as `failed` in the rule's history; returns what was recorded.
 *
 * @example
 * ```ts
 * await dropPastBound(kv, rule.projectId, rule.id, Date.now());
 * ```
 */
export async function dropPastBound(
  kv: Deno.Kv,
  projectId: string,
  ruleId: string,
  at: number,
): Promise<DeliveryAttempt[]> {
  const recorded: DeliveryAttempt[] = [];
  for (const delivery of await dropOldDeliveries(kv, projectId, ruleId)) {
    recorded.push(
      await recordAttempt(kv, delivery, {
        at,
        attempt: delivery.attempts + 1, // not made
        error:
          `Dropped unsent: ${MAX_WAITING_PER_RULE} newer deliveries of this rule are waiting`,
        outcome: "failed",
      }),
    );
  }
  return recorded;
}

/** The outbox entries due at `now`, oldest first, at most `limit`. */
export async function listDueDeliveries(
  kv: Deno.Kv,
  now: number,
  limit: number,
): Promise<Deno.KvEntry<unknown>[]> {
  return await Array.fromAsync(kv.list({
    start: alertOutboxKey(),
    end: alertOutboxKey(now + 1, ""),
  }, { limit }));
}

/**
 * Sending the deliveries of the alert outbox: a durable queue kept in KV
 * (never Deno's `enqueue`, which the new Deno Deploy lacks), swept by the
 * same loop that evaluates the rules (docs/alerts.md#deliveries).
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
  getAlertRule,
  recordAlertAttempt,
} from "../db/alerts.ts";
import { alertOutboxKey } from "../db/keys.ts";
import { decodeJson, encodeJson } from "../db/kv.ts";
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
/** Deliveries one sweep claims at most. */
const SWEEP_LIMIT = 20;
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

/** Options of {@linkcode sendDueDeliveries}. */
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
interface AttemptResult {
  ok: boolean;
  status?: number;
  error?: string;
  /** No retry can help (a refused address). */
  final?: boolean;
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

async function attempt(
  delivery: Delivery,
  rule: { webhook: string; secret: string },
  options: SendOptions,
  t: number,
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
  try {
    const response = await fetcher(rule.webhook, {
      method: "POST",
      redirect: "manual",
      signal: AbortSignal.timeout(options.timeoutMs ?? DELIVERY_TIMEOUT_MS),
      headers: {
        "Content-Type": "application/json",
        "User-Agent": "logs-alerts/1",
        "X-Logs-Delivery": delivery.id,
        "X-Logs-Rule": delivery.ruleId,
        [SIGNATURE_HEADER]: signDelivery(rule.secret, delivery.body, t),
      },
      body: delivery.body,
    });
    await drain(response.body, MAX_ANSWER_BYTES);
    return response.status >= 200 && response.status < 300
      ? { ok: true, status: response.status }
      : { ok: false, status: response.status };
  } catch (error) {
    const message = error instanceof DOMException &&
        error.name === "TimeoutError"
      ? `No answer within ${options.timeoutMs ?? DELIVERY_TIMEOUT_MS} ms`
      : error instanceof Error
      ? error.message
      : String(error);
    return { ok: false, error: message };
  }
}

/** Claims, sends and settles one outbox entry; the outcome, or `null` if another instance has it. */
async function sendOne(
  entry: Deno.KvEntry<unknown>,
  options: SendOptions,
): Promise<AttemptOutcome | null> {
  const { kv } = options;
  const now = options.now ?? Date.now;
  const delivery = decodeJson<Delivery>(entry.value);
  if (delivery === null) {
    await kv.atomic().check(entry).delete(entry.key).commit();
    return null;
  }
  const deliveryId = delivery.id;
  const claimed: Delivery = { ...delivery, attempts: delivery.attempts + 1 };
  const leaseKey = alertOutboxKey(now() + LEASE_MS, deliveryId);
  const claim = await kv.atomic().check(entry).delete(entry.key)
    .set(leaseKey, encodeJson(claimed)).commit();
  if (!claim.ok) return null;
  const rule = await getAlertRule(kv, delivery.projectId, delivery.ruleId);
  if (rule === null) {
    await kv.delete(leaseKey);
    return null;
  }
  const result = await attempt(claimed, rule, options, now());
  const delay = RETRY_DELAYS_MS[claimed.attempts - 1];
  const outcome: AttemptOutcome = result.ok
    ? "delivered"
    : result.final || delay === undefined
    ? "failed"
    : "retrying";
  const at = now();
  const op = kv.atomic().check({
    key: leaseKey,
    versionstamp: claim.versionstamp,
  })
    .delete(leaseKey);
  if (outcome === "retrying") {
    op.set(alertOutboxKey(at + delay!, deliveryId), encodeJson(claimed));
  }
  // Lost only if the lease ran out and another instance took it over.
  await op.commit();
  await recordAlertAttempt(
    kv,
    delivery.projectId,
    delivery.ruleId,
    createId(at),
    {
      deliveryId,
      at,
      attempt: claimed.attempts,
      count: delivery.count,
      ...(result.status === undefined ? {} : { status: result.status }),
      ...(result.error === undefined ? {} : { error: result.error }),
      outcome,
    },
  );
  return outcome;
}

/**
 * Sends the deliveries of the outbox that are due at `now` (at most 20 per
 * call, at once); returns the outcome of each attempt made.
 */
export async function sendDueDeliveries(
  options: SendOptions,
): Promise<AttemptOutcome[]> {
  const now = (options.now ?? Date.now)();
  const due: Deno.KvEntry<unknown>[] = [];
  const iter = options.kv.list({
    start: alertOutboxKey(),
    end: alertOutboxKey(now + 1, ""),
  }, { limit: SWEEP_LIMIT });
  for await (const entry of iter) due.push(entry);
  const outcomes = await Promise.all(due.map((e) => sendOne(e, options)));
  return outcomes.filter((o): o is AttemptOutcome => o !== null);
}

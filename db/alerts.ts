/**
 * Alert rules, their evaluation state, the outbox of deliveries and each
 * rule's delivery history, as stored in KV (docs/alerts.md). This module
 * reads and writes records; what a rule means (evaluating it, sending a
 * delivery) lives in alerts/.
 *
 * Every record is JSON bytes (db/kv.ts). A rule's state and its outbox
 * entries are changed only by atomic operations checked on the
 * versionstamp read, so two instances evaluating or sending at once never
 * both win. Each delivery in the outbox is also listed under its rule
 * (`alert_waiting/`), moved in the same operations, so that a rule whose
 * target never answers keeps at most {@linkcode MAX_WAITING_PER_RULE}.
 *
 * @module
 */
import type { AtomicWriter } from "./atomic.ts";
import {
  alertHistoryKey,
  alertOutboxKey,
  alertRuleKey,
  alertStateKey,
  alertWaitingKey,
} from "./keys.ts";
import { decodeJson, encodeJson, listJson } from "./kv.ts";
import { commitUnderProject } from "./projects.ts";
import { findRecord, MAX_RECORD_NAME } from "./validation.ts";
import { timeBound } from "../domain/ids.ts";

/** Delivery attempts kept per rule. */
export const ALERT_HISTORY_SIZE = 50;
/** Deliveries of one rule waiting in the outbox at most; past it the oldest are dropped. */
export const MAX_WAITING_PER_RULE = 100;

/** What a rule on error groups fires on (alerts/group_rules.ts). */
export type GroupTrigger = "new" | "regressed" | "escalating";

/** An alert rule as stored. */
export interface AlertRule {
  id: string;
  projectId: string;
  /** The explorer's query syntax (db/query/parse.ts). */
  query: string;
  /**
   * A rule on error groups: fires on each group's first entry, on its
   * regression, or on its escalation, instead of on matches of `query`.
   * @default absent: a query rule
   */
  on?: GroupTrigger;
  /** Of `escalating`: the factor over the group's average hourly rate. */
  factor?: number;
  /** Fire only when more than this many entries match within `windowMs`. */
  threshold?: number;
  /** The threshold's window, in milliseconds (set with `threshold`). */
  windowMs?: number;
  /** At most one delivery per this many milliseconds. */
  everyMs: number;
  /** Where deliveries are POSTed. */
  webhook: string;
  /** HMAC-SHA256 key of the deliveries' signature; shown once at creation. */
  secret: string;
  /** Creation time, Unix milliseconds; entries before it never match. */
  createdAt: number;
}

/** A rule's evaluation state. */
export interface AlertState {
  /** The last entry id examined (tailLogs' `afterId`). */
  cursor: string;
  /** Matches per time bucket `[start ms, count]` within the threshold's window. */
  buckets: [number, number][];
  /** Matches since the last delivery, to be reported by the next one. */
  pendingCount: number;
  /** Receipt time of the first of those matches, Unix milliseconds. */
  firstPendingAt?: number | null;
  /** The first of those matches (recordJson), up to five. */
  samples: Record<string, unknown>[];
  /** When the last delivery was queued, Unix milliseconds. */
  lastDeliveryAt: number | null;
  /**
   * A rule on groups: per group, what it was last alerted for (the
   * resolution's time, or the escalation's hour), so each fires once.
   * @default absent
   */
  alerted?: Record<string, number>;
}

/** A delivery waiting in the outbox. */
export interface Delivery {
  id: string;
  projectId: string;
  ruleId: string;
  /** The JSON body, as it will be signed and sent. */
  body: string;
  /** The count it reports. */
  count: number;
  /** Attempts made so far. */
  attempts: number;
  /** When it was queued, Unix milliseconds. */
  createdAt: number;
}

/** A delivery as listed under its rule: its outbox key's due time. */
interface Waiting {
  due: number;
  /** Claimed by a server, which is sending it (due when its lease ends). */
  sending?: true;
}

/**
 * Puts `delivery` in the outbox, due at `due` (Unix ms), and under its rule,
 * as part of `op`; `sending` when a server claims it to send it.
 */
export function putDelivery(
  op: Pick<AtomicWriter, "set">,
  delivery: Delivery,
  due: number,
  sending = false,
): void {
  op.set(alertOutboxKey(due, delivery.id), encodeJson(delivery));
  op.set(
    alertWaitingKey(delivery.projectId, delivery.ruleId, delivery.id),
    encodeJson(
      { due, ...(sending ? { sending: true } : {}) } satisfies Waiting,
    ),
  );
}

/** Takes `delivery` off its rule's list, as part of `op` (it leaves the outbox). */
export function forgetDelivery(
  op: Pick<AtomicWriter, "delete">,
  delivery: Delivery,
): void {
  op.delete(alertWaitingKey(delivery.projectId, delivery.ruleId, delivery.id));
}

/**
 * Drops a rule's deliveries past the newest {@linkcode MAX_WAITING_PER_RULE}
 * from the outbox, oldest first, except those being sent; returns those
 * dropped. Each goes in one operation checked on what was read: one that a
 * server moved meanwhile (to send it) is left to it.
 */
export async function dropOldDeliveries(
  kv: Deno.Kv,
  projectId: string,
  ruleId: string,
): Promise<Delivery[]> {
  const past = (await Array.fromAsync(kv.list<Uint8Array>(
    { prefix: alertWaitingKey(projectId, ruleId) },
    { reverse: true },
  ))).slice(MAX_WAITING_PER_RULE).reverse();
  const dropped: Delivery[] = [];
  for (const entry of past) {
    const waiting = decodeJson<Waiting>(entry.value);
    if (waiting === null || waiting.sending) continue;
    const outbox = await kv.get(
      alertOutboxKey(waiting.due, String(entry.key.at(-1))),
    );
    const delivery = decodeJson<Delivery>(outbox.value);
    const op = kv.atomic().check(entry, outbox).delete(entry.key);
    if (outbox.versionstamp !== null) op.delete(outbox.key);
    if ((await op.commit()).ok && delivery !== null) dropped.push(delivery);
  }
  return dropped;
}

/**
 * How an attempt ended; `backed-off` records a delivery held back, without
 * an attempt, because its target kept timing out.
 */
export type AttemptOutcome = "delivered" | "retrying" | "failed" | "backed-off";

/** One delivery attempt, as a rule's history shows it. */
export interface DeliveryAttempt {
  deliveryId: string;
  /** When the attempt ended, Unix milliseconds. */
  at: number;
  /** 1 for the first attempt. */
  attempt: number;
  count: number;
  /** The receiver's HTTP status, when it answered. */
  status?: number;
  /** Why the attempt failed without an answer (timeout, refused address, backoff). */
  error?: string;
  outcome: AttemptOutcome;
}

/** The state of a rule that has not been evaluated yet: it starts at its creation. */
export function initialAlertState(rule: AlertRule): AlertState {
  return {
    cursor: timeBound(rule.createdAt),
    buckets: [],
    pendingCount: 0,
    firstPendingAt: null,
    samples: [],
    lastDeliveryAt: null,
  };
}

/**
 * Stores a new rule with its initial state, checked on its project's record
 * (`ProjectNotFoundError` when it is gone); `false` when a rule with its id
 * exists.
 */
export async function putNewAlertRule(
  kv: Deno.Kv,
  rule: AlertRule,
): Promise<boolean> {
  const key = alertRuleKey(rule.projectId, rule.id);
  return await commitUnderProject(kv, rule.projectId, (op) =>
    op
      .check({ key, versionstamp: null })
      .set(key, encodeJson(rule))
      .set(
        alertStateKey(rule.projectId, rule.id),
        encodeJson(initialAlertState(rule)),
      ));
}

/** Reads a rule, or `null`. */
export async function getAlertRule(
  kv: Deno.Kv,
  projectId: string,
  ruleId: string,
): Promise<AlertRule | null> {
  // A name past the bound names nothing, and is never made a key.
  if (projectId === "" || ruleId === "" || ruleId.length > MAX_RECORD_NAME) {
    return null;
  }
  return decodeJson<AlertRule>(
    (await kv.get(alertRuleKey(projectId, ruleId))).value,
  );
}

/** A project's rules (every project's without an id), ordered by id. */
export async function listAlertRules(
  kv: Deno.Kv,
  projectId?: string,
): Promise<AlertRule[]> {
  return await listJson<AlertRule>(
    kv,
    projectId === undefined ? alertRuleKey() : alertRuleKey(projectId),
  );
}

/**
 * Deletes a rule, its state, its history and its list of waiting
 * deliveries; `false` when there was no such rule. Deliveries already in
 * the outbox find no rule and are dropped.
 */
export async function deleteAlertRule(
  kv: Deno.Kv,
  projectId: string,
  ruleId: string,
): Promise<boolean> {
  const entry = await findRecord(kv, ruleId, alertRuleKey(projectId, ruleId));
  if (entry === null) return false;
  const op = kv.atomic().check(entry).delete(entry.key)
    .delete(alertStateKey(projectId, ruleId));
  for (
    const prefix of [
      alertHistoryKey(projectId, ruleId),
      alertWaitingKey(projectId, ruleId),
    ]
  ) {
    for await (const h of kv.list({ prefix })) op.delete(h.key);
  }
  return (await op.commit()).ok;
}

/** Decodes a rule's state, or the initial state when none is stored. */
export function decodeAlertState(
  rule: AlertRule,
  value: unknown,
): AlertState {
  return decodeJson<AlertState>(value) ?? initialAlertState(rule);
}

/** A rule's delivery history, newest first. */
export async function readAlertHistory(
  kv: Deno.Kv,
  projectId: string,
  ruleId: string,
): Promise<DeliveryAttempt[]> {
  return await listJson<DeliveryAttempt>(
    kv,
    alertHistoryKey(projectId, ruleId),
    { reverse: true, limit: ALERT_HISTORY_SIZE },
  );
}

/**
 * Adds one attempt to a rule's history and deletes what falls past the
 * last {@linkcode ALERT_HISTORY_SIZE}. `attemptId` sorts by time. Written
 * only while the rule exists, checked in the same commit: an attempt that
 * ends after its rule or project was deleted leaves no row behind.
 */
export async function recordAlertAttempt(
  kv: Deno.Kv,
  projectId: string,
  ruleId: string,
  attemptId: string,
  attempt: DeliveryAttempt,
): Promise<void> {
  for (;;) {
    const rule = await kv.get(alertRuleKey(projectId, ruleId));
    if (rule.versionstamp === null) return;
    const written = await kv.atomic().check(rule)
      .set(alertHistoryKey(projectId, ruleId, attemptId), encodeJson(attempt))
      .commit();
    if (written.ok) break;
  }
  const old = kv.list({ prefix: alertHistoryKey(projectId, ruleId) }, {
    reverse: true,
  });
  let n = 0;
  const stale: Deno.KvKey[] = [];
  for await (const entry of old) {
    if (++n > ALERT_HISTORY_SIZE) stale.push(entry.key);
  }
  for (let i = 0; i < stale.length; i += 100) {
    const op = kv.atomic();
    for (const key of stale.slice(i, i + 100)) op.delete(key);
    await op.commit();
  }
}

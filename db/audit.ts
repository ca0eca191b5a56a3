/**
 * The audit log: who changed what, and when, per project (settings,
 * secrets, accounts given the project, read tokens, alerts) and for the
 * service as a whole (accounts). An event names what changed, never a
 * secret.
 *
 * Kept by time, not by count: each event is kept {@linkcode AUDIT_TTL_MS}
 * and nothing deletes it sooner (but the deletion of its project), so no
 * account can push another's events, or its own older ones, out of the log.
 * Bounded per account instead: each account records at most
 * {@linkcode MAX_EVENTS_PER_ACTOR_DAY} events a day in one log, those of the
 * tokens it created included (`chargedTo`); past that,
 * its further events of that day are folded into one event per action that
 * counts them and keeps the last one's detail and time (docs/limits.md).
 *
 * @module
 */
import { createId, isIdForm } from "../domain/ids.ts";
import { auditBudgetKey, auditBudgetsPrefix, auditKey } from "./keys.ts";
import { decodeJson, encodeJson } from "./kv.ts";
import { deletePrefix } from "./projects.ts";
import { DAY_MS } from "../domain/entry.ts";

/** How long an event is kept: at least 90 days, whatever happens after it. */
export const AUDIT_TTL_MS = 180 * DAY_MS;
/** Events one account records in full per log and UTC day; more are folded. */
export const MAX_EVENTS_PER_ACTOR_DAY = 200;
/** Events a listing returns at most. */
export const MAX_AUDIT_LIST = 500;
/** Longest detail kept, in characters. */
const MAX_DETAIL = 500;
/** Longest actor and action kept, in characters. */
const MAX_NAME = 254;

/** One audit event as stored. */
export interface AuditEvent {
  id: string;
  /** Unix milliseconds: of the event, or of the last one folded into it. */
  at: number;
  /** Who: an account's email, `admin`, or `cli` for the operator commands. */
  actor: string;
  /** What, as `area.verb`: `settings.allow`, `token.create`, `user.remove`, … */
  action: string;
  /** The value changed or the object named (never a secret). @default absent */
  detail?: string;
  /**
   * Events of this account and action past its day's budget, folded into
   * this one (`at` and `detail` are the last one's). @default absent: one event
   */
  repeated?: number;
  /** Time of the first event folded into this one. @default absent */
  since?: number;
}

/** An account's day in one log. */
interface Budget {
  /** Events recorded in full. */
  count: number;
  /** The id of the folded event of each action past the budget. */
  folded: Record<string, string>;
}

/** Options of {@linkcode recordAudit}. */
export interface RecordAuditOptions {
  /** The project the change belongs to; `null` for the service itself. */
  projectId: string | null;
  actor: string;
  /**
   * The account whose day's budget the event counts against: a token's
   * creator for what the token does, so that no number of tokens gives an
   * account more. @default the actor
   */
  chargedTo?: string;
  action: string;
  detail?: string;
  /** Clock. @default {Date.now} */
  now?: () => number;
}

/**
 * Records one audit event, or folds it into the day's event of its action
 * once its account has recorded {@linkcode MAX_EVENTS_PER_ACTOR_DAY} that day.
 *
 * @example
 * ```ts
 * await recordAudit(kv, { projectId, actor: "ana@example.com", action: "alert.add", detail: "level:critical" });
 * ```
 */
export async function recordAudit(
  kv: Deno.Kv,
  options: RecordAuditOptions,
): Promise<AuditEvent> {
  const scope = options.projectId ?? "";
  const at = (options.now ?? Date.now)();
  const actor = options.actor.slice(0, MAX_NAME);
  const action = options.action.slice(0, MAX_NAME);
  const detail = options.detail?.slice(0, MAX_DETAIL);
  const budgetKey = auditBudgetKey(
    scope,
    (options.chargedTo ?? options.actor).slice(0, MAX_NAME),
    Math.floor(at / DAY_MS),
  );
  for (let attempt = 0; attempt < 10; attempt++) {
    const found = await kv.get<Uint8Array>(budgetKey);
    const budget = decodeJson<Budget>(found.value) ??
      { count: 0, folded: {} };
    const op = kv.atomic().check(found);
    let event: AuditEvent;
    if (budget.count < MAX_EVENTS_PER_ACTOR_DAY) {
      budget.count++;
      event = { id: createId(at), at, actor, action };
      if (detail !== undefined) event.detail = detail;
    } else {
      const id = budget.folded[action] ?? createId(at);
      budget.folded[action] = id;
      const prior = await kv.get<Uint8Array>(auditKey(scope, id));
      const before = decodeJson<AuditEvent>(prior.value);
      op.check(prior);
      event = {
        id,
        at,
        actor,
        action,
        repeated: (before?.repeated ?? 0) + 1,
        since: before?.since ?? at,
      };
      if (detail !== undefined) event.detail = detail;
    }
    op.set(auditKey(scope, event.id), encodeJson(event), {
      expireIn: AUDIT_TTL_MS,
    });
    op.set(budgetKey, encodeJson(budget), { expireIn: 2 * DAY_MS });
    if ((await op.commit()).ok) return event;
  }
  throw new Error(
    `Cannot record audit event "${action}": the log kept changing`,
  );
}

/**
 * Records the same event in several scopes: a change to an account goes to
 * the service's log and to each project it concerns.
 */
export async function recordAuditIn(
  kv: Deno.Kv,
  projectIds: (string | null)[],
  options: Omit<RecordAuditOptions, "projectId">,
): Promise<void> {
  for (const projectId of new Set(projectIds)) {
    await recordAudit(kv, { ...options, projectId });
  }
}

/** Thrown for an event id to page from that no event could have. */
export class AuditCursorError extends Error {
  override name = "AuditCursorError";
}

/**
 * The audit events of a project (or, with `null`, of the service), newest
 * first (a folded event at its first event's time), at most
 * {@linkcode MAX_AUDIT_LIST}; with `before` (an event's id), those recorded
 * before it: the next page.
 *
 * @example
 * ```ts
 * const page = await listAudit(kv, projectId, 100);
 * const next = await listAudit(kv, projectId, 100, page.at(-1)?.id);
 * ```
 */
export async function listAudit(
  kv: Deno.Kv,
  projectId: string | null,
  limit = MAX_AUDIT_LIST,
  before?: string,
): Promise<AuditEvent[]> {
  if (before !== undefined && !isIdForm(before)) {
    throw new AuditCursorError(
      `Cannot read event id "${before.slice(0, 40)}": expected 28 hex digits`,
    );
  }
  const prefix = auditKey(projectId ?? "");
  const selector = before === undefined
    ? { prefix }
    : { prefix, end: [...prefix, before] };
  const events: AuditEvent[] = [];
  for await (
    const entry of kv.list(selector, {
      reverse: true,
      limit: Math.min(limit, MAX_AUDIT_LIST),
    })
  ) {
    const event = decodeJson<AuditEvent>(entry.value);
    if (event !== null) events.push(event);
  }
  return events;
}

/** Deletes a project's audit log (with the project; the service's log keeps the deletion). */
export async function deleteAudit(
  kv: Deno.Kv,
  projectId: string,
): Promise<number> {
  return await deletePrefix(kv, auditKey(projectId)) +
    await deletePrefix(kv, auditBudgetsPrefix(projectId));
}

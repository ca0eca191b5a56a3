/**
 * The audit log: who changed what, and when, per project (settings,
 * secrets, accounts given the project, read tokens, alerts) and for the
 * service as a whole (accounts). Bounded: each scope keeps its last
 * {@linkcode MAX_AUDIT_EVENTS} events, each for at most
 * {@linkcode AUDIT_TTL_MS}. An event names what changed, never a secret.
 *
 * @module
 */
import { createId } from "../domain/ids.ts";
import { auditKey } from "./keys.ts";
import { encodeJson, listJson } from "./kv.ts";
import { deletePrefix } from "./projects.ts";

/** Events kept per project (and for the service). */
export const MAX_AUDIT_EVENTS = 500;
/** How long an event is kept at most. */
export const AUDIT_TTL_MS = 180 * 86_400_000;
/** Events beyond the bound deleted per new event, at most. */
const TRIM_BATCH = 20;

/** One audit event as stored. */
export interface AuditEvent {
  id: string;
  /** Unix milliseconds. */
  at: number;
  /** Who: an account's email, `admin`, or `cli` for the operator commands. */
  actor: string;
  /** What, as `area.verb`: `settings.allow`, `token.create`, `user.remove`, … */
  action: string;
  /** The value changed or the object named (never a secret). @default absent */
  detail?: string;
}

/** Options of {@linkcode recordAudit}. */
export interface RecordAuditOptions {
  /** The project the change belongs to; `null` for the service itself. */
  projectId: string | null;
  actor: string;
  action: string;
  detail?: string;
  /** Clock. @default {Date.now} */
  now?: () => number;
}

/**
 * Records one audit event and trims the oldest beyond the bound.
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
  const event: AuditEvent = {
    id: createId(at),
    at,
    actor: options.actor,
    action: options.action,
    ...(options.detail === undefined
      ? {}
      : { detail: options.detail.slice(0, 500) }),
  };
  await kv.set(auditKey(scope, event.id), encodeJson(event), {
    expireIn: AUDIT_TTL_MS,
  });
  const extra: Deno.KvKey[] = [];
  let seen = 0;
  for await (
    const entry of kv.list({ prefix: auditKey(scope) }, {
      reverse: true,
      limit: MAX_AUDIT_EVENTS + TRIM_BATCH,
    })
  ) {
    if (++seen > MAX_AUDIT_EVENTS) extra.push(entry.key);
  }
  if (extra.length > 0) {
    const op = kv.atomic();
    for (const key of extra) op.delete(key);
    await op.commit();
  }
  return event;
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

/**
 * The audit events of a project (or, with `null`, of the service), newest
 * first.
 */
export async function listAudit(
  kv: Deno.Kv,
  projectId: string | null,
  limit = MAX_AUDIT_EVENTS,
): Promise<AuditEvent[]> {
  return await listJson<AuditEvent>(kv, auditKey(projectId ?? ""), {
    reverse: true,
    limit,
  });
}

/** Deletes a project's audit log (with the project; the service's log keeps the deletion). */
export async function deleteAudit(
  kv: Deno.Kv,
  projectId: string,
): Promise<number> {
  return await deletePrefix(kv, auditKey(projectId));
}

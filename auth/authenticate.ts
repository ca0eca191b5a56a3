/**
 * Deciding whether an entry is authorized, by the three client kinds in the
 * spec's order: (1) the `Origin` header listed in `settings.allowedOrigin`,
 * (2) `appid` listed in the same array, (3) a valid signature. The first that
 * succeeds authorizes. Exact string equality, no wildcards.
 *
 * Replays are refused by the consumer, which owns the memory of signatures.
 *
 * @module
 */
import type { Project } from "../db/projects.ts";
import {
  type AuthMethod,
  isStandardLevel,
  type QueuedEntry,
  type RejectReason,
} from "../domain/entry.ts";
import { signedParams, verifySignature } from "./signature.ts";

/** Outcome of {@linkcode authenticate}. */
export type AuthResult =
  | { ok: true; method: AuthMethod }
  | { ok: false; reason: RejectReason };

/**
 * Authenticates `entry` for `project` (`null` when the project does not
 * exist), then checks its level. When no method succeeds, the reason is that
 * of the last credential presented (signature, then app id, then origin).
 *
 * @example
 * ```ts
 * const result = authenticate(entry, project, 300_000);
 * if (!result.ok) console.log(result.reason); // "bad_origin"
 * ```
 */
export function authenticate(
  entry: QueuedEntry,
  project: Project | null,
  maxSkewMs: number,
): AuthResult {
  if (project === null) return { ok: false, reason: "unknown_project" };
  const result = authorize(entry, project, maxSkewMs);
  if (result.ok && !isKnownLevel(entry.level, project)) {
    return { ok: false, reason: "unknown_level" };
  }
  return result;
}

function authorize(
  entry: QueuedEntry,
  project: Project,
  maxSkewMs: number,
): AuthResult {
  const allowed = project.settings.allowedOrigin;
  let reason: RejectReason = "no_credentials";
  if (entry.origin !== undefined) {
    if (allowed.includes(entry.origin)) return { ok: true, method: "origin" };
    reason = "bad_origin";
  }
  if (entry.appid !== undefined) {
    if (allowed.includes(entry.appid)) return { ok: true, method: "appid" };
    reason = "unknown_appid";
  }
  if (entry.signature !== undefined) {
    const verdict = verifySignature(entry, project, maxSkewMs);
    if (verdict === "ok") return { ok: true, method: "signature" };
    reason = verdict;
  }
  return { ok: false, reason };
}

/** Whether `level` is standard or declared by the project. */
export function isKnownLevel(level: string, project: Project): boolean {
  return isStandardLevel(level) || project.levels.includes(level);
}

/**
 * The text a signed entry should have been signed over, as the service
 * expects it: `projectId + params + timestamp`, with `params` in its
 * canonical form, the compact JSON of `level, projectId, device, context,
 * data` in that order as JavaScript writes it (absent members left out). It
 * holds no secret; shown beside a `bad_signature`, it lets a developer see
 * what their client signed differently (docs/design.md#kept-rejected-entries).
 *
 * @example
 * ```ts
 * expectedSignedText(entry); // 'p1{"level":"info","projectId":"p1","data":{}}1767225600000'
 * ```
 */
export function expectedSignedText(entry: QueuedEntry): string {
  return entry.projectId + signedParams(entry)[0] + (entry.timestamp ?? "");
}

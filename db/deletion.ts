/**
 * Deleting a project with everything stored under it, in one place: the
 * modules of what lives under a project (tokens, the audit log) build on
 * the projects module, so this one stands above them all.
 *
 * The record goes first, in one commit with a mark
 * (`deleting_projects/<projectId>`); the data then goes in passes, and the
 * mark last. A deletion cut short (Ctrl-C, a crash, a KV error) is finished
 * by `project delete` run again or by the merger's next rounds
 * ({@linkcode finishDeletions}), never left half done
 * (docs/design.md#retention-and-deletion).
 *
 * @module
 */
import {
  alertPrefixes,
  auditBudgetsPrefix,
  auditKey,
  deletingProjectIdOf,
  deletingProjectKey,
  deletingProjectsPrefix,
  errorGroupPrefixes,
  fingerprintKeyKey,
  projectKey,
  quotaStateKey,
  rejectedEntriesPrefix,
  rejectionsPrefix,
  releaseAwaitedKey,
  releaseCountKey,
  savedViewKey,
  seenSignaturesPrefix,
  sourceMapIndexKey,
  sourceMapKey,
  sourceMapLooseKey,
  sourceMapSliceKey,
  statsPrefix,
  usagePrefix,
} from "./keys.ts";
import { decodeJson, encodeJson, listJson } from "./kv.ts";
import { type Project, ProjectNotFoundError } from "./projects.ts";
import { countStoredEntries } from "./query/summaries.ts";
import { storedLogKeys, storedLogPrefixes } from "./storage/write.ts";
import { deleteReadTokens } from "./tokens.ts";
import { forgetProject } from "./users.ts";
import { MAX_RECORD_NAME } from "./validation.ts";

/** Keys deleted per atomic operation. */
const DELETE_CHUNK = 500;
/**
 * Keys a round of the merger deletes at most of the projects whose
 * deletion was cut short (queue/merger.ts).
 */
export const DELETION_KEYS_PER_ROUND = 5000;
/** Marks a name is looked for among when a deletion is resumed by name. */
const MAX_MARKS_LISTED = 1000;

/** A project being deleted, as its mark keeps it. */
export interface ProjectDeletion {
  /** The project's id. */
  id: string;
  /** Its name, as it was when its deletion began. */
  name: string;
}

/** Keys a deletion may still delete; a merger round's is bounded. */
interface Allowance {
  left: number;
}

/**
 * Deletes a project and all under it: entries (chunks, their summaries and
 * counters), counters, recent and kept rejections, remembered signatures,
 * saved views, error groups and their key, alert rules with their states and
 * histories, usage and quota state, read tokens, source maps and the audit
 * log, and takes it out of the accounts given it; returns how many
 * entries it deleted. The record goes first, in one commit with the
 * project's deletion mark: every write under a project checks the record
 * in its own atomic operation, so none can land after. The data then goes
 * in passes until one finds nothing, and the mark last. A project whose
 * record is gone but whose mark is left (a deletion cut short) is finished;
 * {@linkcode ProjectNotFoundError} when there is neither.
 *
 * @example
 * ```ts
 * const entries = await deleteProject(kv, projectId);
 * ```
 */
export async function deleteProject(
  kv: Deno.Kv,
  projectId: string,
): Promise<number> {
  await markDeleting(kv, projectId);
  const all: Allowance = { left: Infinity };
  let logs = 0;
  for (let deleted = -1; deleted !== 0;) {
    logs += await countStoredEntries(kv, projectId);
    deleted = await deletePass(kv, projectId, all);
  }
  await kv.delete(deletingProjectKey(projectId));
  return logs;
}

/**
 * Deletes the project's record and writes its deletion mark, in one
 * commit; does nothing when the record is gone and the mark is there.
 */
async function markDeleting(kv: Deno.Kv, projectId: string): Promise<void> {
  if (projectId === "" || projectId.length > MAX_RECORD_NAME) {
    throw new ProjectNotFoundError(projectId);
  }
  for (;;) {
    const [record, mark] = await kv.getMany([
      projectKey(projectId),
      deletingProjectKey(projectId),
    ]);
    const project = decodeJson<Project>(record!.value);
    if (project === null) {
      if (mark!.versionstamp !== null) return;
      throw new ProjectNotFoundError(projectId);
    }
    const deletion: ProjectDeletion = { id: projectId, name: project.name };
    const result = await kv.atomic()
      .check(record!)
      .delete(projectKey(projectId))
      .set(deletingProjectKey(projectId), encodeJson(deletion))
      .commit();
    // Else changed meanwhile (a setting): read again.
    if (result.ok) return;
  }
}

/**
 * The project being deleted whose id, or else whose name (when one alone
 * has it), is `idOrName`: a deletion cut short, whose record is gone.
 *
 * @example
 * ```ts
 * const deletion = await deletionOf(kv, "Web shop"); // { id, name } or null
 * ```
 */
export async function deletionOf(
  kv: Deno.Kv,
  idOrName: string,
): Promise<ProjectDeletion | null> {
  if (idOrName === "" || idOrName.length > MAX_RECORD_NAME) return null;
  const own = await kv.get(deletingProjectKey(idOrName));
  const byId = decodeJson<ProjectDeletion>(own.value);
  if (byId !== null) return byId;
  const named = (await listJson<ProjectDeletion>(kv, deletingProjectsPrefix(), {
    limit: MAX_MARKS_LISTED,
  })).filter((d) => d.name === idOrName);
  return named.length === 1 ? named[0]! : null;
}

/**
 * Goes on with the deletions cut short (the projects with a deletion mark),
 * deleting at most `maxKeys` keys in all; `true` when some is left for a
 * later call. The merger calls it once a round.
 *
 * @example
 * ```ts
 * const more = await finishDeletions(kv);
 * ```
 */
export async function finishDeletions(
  kv: Deno.Kv,
  maxKeys: number = DELETION_KEYS_PER_ROUND,
): Promise<boolean> {
  const allowance: Allowance = { left: maxKeys };
  const marks = kv.list({ prefix: deletingProjectsPrefix() });
  for await (const mark of marks) {
    if (allowance.left <= 0) return true;
    const projectId = deletingProjectIdOf(mark.key);
    if (!await finishDeletion(kv, projectId, allowance)) return true;
  }
  return false;
}

/**
 * Deletes what is left under a project being deleted, within `allowance`;
 * `true` once all is gone and its mark with it.
 */
async function finishDeletion(
  kv: Deno.Kv,
  projectId: string,
  allowance: Allowance,
): Promise<boolean> {
  // A record there is no deletion's: its data is kept, the mark dropped.
  if ((await kv.get(projectKey(projectId))).versionstamp !== null) {
    await kv.delete(deletingProjectKey(projectId));
    return true;
  }
  while (allowance.left > 0) {
    if (await deletePass(kv, projectId, allowance) > 0) continue;
    await kv.delete(deletingProjectKey(projectId));
    allowance.left--;
    return true;
  }
  return false;
}

/**
 * One pass over everything under a project, entries first (a reader finds
 * none once their summaries are gone), the audit log last (an account's own
 * events are written under its projects until it loses them): the keys
 * it deleted, within `allowance`.
 */
async function deletePass(
  kv: Deno.Kv,
  projectId: string,
  allowance: Allowance,
): Promise<number> {
  let deleted = 0;
  for (
    const prefix of [
      ...storedLogPrefixes(projectId),
      statsPrefix(projectId),
      rejectionsPrefix(projectId),
      rejectedEntriesPrefix(projectId),
      seenSignaturesPrefix(projectId),
      savedViewKey(projectId),
      ...errorGroupPrefixes(projectId),
      usagePrefix(projectId),
      releaseCountKey(projectId),
      releaseAwaitedKey(projectId),
      ...alertPrefixes(projectId),
      sourceMapKey(projectId),
      sourceMapSliceKey(projectId),
      sourceMapLooseKey(projectId),
    ]
  ) {
    deleted += await deleteUnder(kv, prefix, allowance);
  }
  if (allowance.left <= 0) return deleted;
  // One key each, not a prefix: a prefix's listing leaves the key itself out.
  deleted += await deleteKeys(kv, [
    ...storedLogKeys(projectId),
    quotaStateKey(projectId),
    fingerprintKeyKey(projectId),
    sourceMapIndexKey(projectId),
  ], allowance);
  // A token with its hash and its name's key: at most a hundred of them.
  const tokens = await deleteReadTokens(kv, projectId);
  allowance.left -= 3 * tokens;
  await forgetProject(kv, projectId);
  deleted += 3 * tokens +
    await deleteUnder(kv, auditKey(projectId), allowance) +
    await deleteUnder(kv, auditBudgetsPrefix(projectId), allowance);
  return deleted;
}

/**
 * Deletes the keys under `prefix`, {@linkcode DELETE_CHUNK} per atomic
 * operation, within `allowance`; returns how many.
 */
async function deleteUnder(
  kv: Deno.Kv,
  prefix: Deno.KvKey,
  allowance: Allowance,
): Promise<number> {
  let deleted = 0;
  while (allowance.left > 0) {
    const op = kv.atomic();
    let n = 0;
    const limit = Math.min(DELETE_CHUNK, allowance.left);
    for await (const entry of kv.list({ prefix }, { limit })) {
      op.delete(entry.key);
      n++;
    }
    if (n === 0) break;
    await op.commit();
    allowance.left -= n;
    deleted += n;
  }
  return deleted;
}

/** Deletes those of `keys` that are there, within `allowance`; returns how many. */
async function deleteKeys(
  kv: Deno.Kv,
  keys: Deno.KvKey[],
  allowance: Allowance,
): Promise<number> {
  if (allowance.left <= 0) return 0;
  const present = (await kv.getMany(keys))
    .filter((entry) => entry.versionstamp !== null)
    .slice(0, allowance.left);
  if (present.length === 0) return 0;
  const op = kv.atomic();
  for (const entry of present) op.delete(entry.key);
  await op.commit();
  allowance.left -= present.length;
  return present.length;
}

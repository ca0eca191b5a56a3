/**
 * Deleting a project with everything stored under it, in one place: the
 * modules of what lives under a project (tokens, the audit log) build on
 * the projects module, so this one stands above them all.
 *
 * @module
 */
import { deleteAudit } from "./audit.ts";
import {
  alertPrefixes,
  errorGroupPrefixes,
  fingerprintKeyKey,
  projectKey,
  quotaStateKey,
  rejectedEntriesPrefix,
  rejectionsPrefix,
  releaseCountKey,
  savedViewKey,
  seenSignaturesPrefix,
  statsPrefix,
  usagePrefix,
} from "./keys.ts";
import { deletePrefix, ProjectNotFoundError } from "./projects.ts";
import { countStoredEntries } from "./query/summaries.ts";
import { storedLogKeys, storedLogPrefixes } from "./storage/write.ts";
import { deleteReadTokens } from "./tokens.ts";
import { deleteProjectSourceMaps } from "./sourcemaps.ts";
import { forgetProject } from "./users.ts";

/**
 * Deletes a project and all under it: entries (chunks, their summaries and
 * counters), counters, recent and kept rejections, remembered signatures,
 * saved views, error groups and their key, alert rules with their states and
 * histories, usage and quota state, read tokens, source maps and the audit
 * log, and takes it out of the accounts given it; returns how many
 * entries it deleted. The record goes first:
 * every write under a project checks it in its own atomic operation, so none
 * can land after. The data then goes in passes until one finds nothing
 * (docs/design.md#retention-and-deletion).
 */
export async function deleteProject(
  kv: Deno.Kv,
  projectId: string,
): Promise<number> {
  const entry = await kv.get(projectKey(projectId));
  if (entry.value === null) throw new ProjectNotFoundError(projectId);
  await kv.delete(projectKey(projectId));
  let logs = 0;
  for (let deleted = -1; deleted !== 0;) {
    logs += await countStoredEntries(kv, projectId);
    deleted = 0;
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
        ...alertPrefixes(projectId),
      ]
    ) {
      deleted += await deletePrefix(kv, prefix);
    }
    for (const key of storedLogKeys(projectId)) {
      if ((await kv.get(key)).versionstamp === null) continue;
      await kv.delete(key);
      deleted++;
    }
  }
  // Its writes check the project record: none lands after the deletion.
  await kv.delete(quotaStateKey(projectId));
  // One key, not a prefix: a prefix's listing leaves the key itself out.
  await kv.delete(fingerprintKeyKey(projectId));
  await deleteReadTokens(kv, projectId);
  await deleteProjectSourceMaps(kv, projectId);
  // Before the audit log: the accounts' own events are written under
  // their projects.
  await forgetProject(kv, projectId);
  await deleteAudit(kv, projectId);
  return logs;
}

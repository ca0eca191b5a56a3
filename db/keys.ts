/**
 * The KV key layout. This is the only module that spells a key: every other
 * file builds keys through these functions, so the layout can be read (and
 * changed) in one place. A key that is its prefix and then its parts in order
 * is built by {@linkcode keyed}; the rest (optional parts, fixed names after
 * the project) by a function of their own.
 *
 * | prefix | value |
 * |---|---|
 * | `projects/<projectId>` | {@linkcode Project} |
 * | `deleting_projects/<projectId>` | the id and name of a project whose record is deleted and whose data is not yet all gone (db/deletion.ts); deleted last |
 * | `pending_batches/<batchId>` | batch header |
 * | `dead_letters/<batchId>` | batch header of a batch that kept failing; kept until replayed or deleted by an operator |
 * | `batch_slices/<batchId>/<n>` | the slices of a batch's entries; deleted with the batch's results, or with its dead letter; the sweeper deletes those no header names |
 * | `batch_progress/<batchId>` | projects whose results a batch spanning many projects has committed |
 * | `log_chunks/<projectId>/<last entry id>` | a chunk of stored entries: deflated JSON lines |
 * | `log_chunk_slices/<projectId>/<last entry id>/<n>` | further slices of a chunk too large for one value |
 * | `log_summaries/<projectId>/<last entry id>` | a chunk's summary: first id, count, levels |
 * | `log_blooms/<projectId>/<last entry id>` | the summary and the chunk's Bloom filter |
 * | `log_columns/<projectId>/<last entry id>` | a chunk's columns: minute, level and coded fields per entry, for aggregations |
 * | `log_column_slices/<projectId>/<last entry id>/<n>` | further slices of a chunk's columns too large for one value |
 * | `log_counts/<projectId>/<"m" or "h">/<start ms>/<level>` | `Deno.KvU64`, entries received in that minute or hour |
 * | `log_merges/<projectId>` | `Deno.KvU64`, bumped by every merge commit |
 * | `log_coarse_groups/<projectId>/<last id of its newest chunk>` | a coarse group: the settled merged chunks one coarse filter covers (db/storage/coarse.ts) |
 * | `log_coarse_bits/<projectId>/<segment>/<group's last id>` | one segment of a coarse group's Bloom filter |
 * | `log_coarse_pending/<projectId>/<last entry id>` | a merged chunk's number of token hashes, tier and entries, until a coarse group takes it |
 * | `log_coarse_hashes/<projectId>/<last entry id>` | those hashes |
 * | `log_ungrouped/<projectId>/<last entry id>` | a chunk written since a coarse group last named it (or never named): a word search lists these beside the groups |
 * | `log_coarse_state/<projectId>` | `Deno.KvU64`, set once every chunk of the project in no group has its `log_ungrouped/` key; bumped when a group is made or a merge moves a grouped chunk |
 * | `seen_signatures/<projectId>/<signature>` | id of the entry that used it |
 * | `stats/<projectId>/accepted` | `Deno.KvU64` |
 * | `stats/<projectId>/rejected/<reason>` | `Deno.KvU64` |
 * | `stats/<projectId>/rejected_total` | `Deno.KvU64` |
 * | `stats/<projectId>/replayed` | `Deno.KvU64`, rejected entries stored by a replay |
 * | `global_stats/rejected/<reason>` | `Deno.KvU64`, projects that do not exist |
 * | `global_stats/rejected_total` | `Deno.KvU64`, picks the next global slot |
 * | `rejections/<projectId>/<slot>` | one of the last 100 rejections |
 * | `rejected_entries/<projectId>/<slot>` | content of one of the last 100 rejected entries |
 * | `global_rejected_entries/<slot>` | content of one of the last 100 entries naming no project |
 * | `rate_limits/<epoch>/<ip>` | `Deno.KvU64`, requests admitted while the address was busy |
 * | `dashboard_secret` | 32 random bytes, mixed with `ADMIN_PASSWORD` into the dashboard's signing key |
 * | `quota_state/<projectId>` | a project's quota and spike state: entries stored this day and minute, rates (db/quota.ts), expiring |
 * | `quota_grants/<batchId>/<projectId>` | entries a batch may store under a project's quota, decided once for every processor of the batch; deleted by its result commit, expiring |
 * | `usage/<projectId>/<day ms>/<name>` | `Deno.KvU64`: entries accepted, stored, dropped by reason, bytes stored that UTC day (db/usage.ts); deleted past `USAGE_DAYS` and with the project |
 * | `batch_key` | 32 random bytes: the AES-GCM key queued batches are sealed with (queue/batch.ts) |
 * | `dashboard_sessions/<sessionId>` | one signed-in dashboard session, expiring with it |
 * | `dashboard_flash/<sessionId>` | what a session's next page shows once (a new secret, replay results), expiring in minutes |
 * | `alert_rules/<projectId>/<ruleId>` | an alert rule (query, threshold, webhook, signing secret) |
 * | `alert_state/<projectId>/<ruleId>` | a rule's evaluation state: cursor, window counts, what waits for the next delivery |
 * | `alert_outbox/<due ms>/<deliveryId>` | a delivery waiting to be sent (or being sent, due when its lease ends) |
 * | `alert_waiting/<projectId>/<ruleId>/<deliveryId>` | the due time of a rule's delivery in the outbox, so that a rule's waiting deliveries can be counted and the oldest dropped |
 * | `alert_history/<projectId>/<ruleId>/<attemptId>` | one delivery attempt of a rule; the last 50 are kept |
 * | `health_probe` | never written: the health check reads it to see that KV answers |
 * | `users/<email>` | a dashboard account: role, projects, scrypt hash of its password |
 * | `read_tokens/<projectId>/<tokenId>` | a read token's name and SHA-256 hash (never the token) |
 * | `read_token_hashes/<sha256 hex>` | the project and id of the read token with that hash |
 * | `read_token_names/<projectId>/<name>` | the id of the project's read token of that name: written in the token's own commit, so that no two get one name |
 * | `audit/<projectId or "">/<eventId>` | one audit event of a project (`""`: of the service), by time (ids start with their ms), expiring |
 * | `audit_budgets/<projectId or "">/<account>/<day>` | events an account (the actor, or the creator of the token that acted) recorded that day in that scope, and its summaries past the budget (db/audit.ts), expiring |
 * | `fingerprint_keys/<projectId>` | 16 random bytes: the project's key of error group ids, made once on first use |
 * | `error_groups/<projectId>/<groupId>` | an error group: title, top frame, sample, first and last seen, hourly counts (db/error_groups.ts); deleted when evicted or past the retention |
 * | `error_group_counts/<projectId>/<groupId>` | `KvU64`: the group's exact count, added to with `sum`; deleted with its group |
 * | `error_groups_by_seen/<projectId>/<last seen ms>/<groupId>` | empty bytes: the groups by last seen, newest last; deleted with its group |
 * | `error_group_ids/<projectId>/<fingerprint>` | the id of the group of a public fingerprint and the release of its first entry (db/error_group_ids.ts), written by every commit that writes the group; deleted with it |
 * | `error_group_releases/<projectId>/<groupId>/<release>` | `KvU64`: the group's entries of that release, added to with `sum` (db/releases.ts); deleted with its group |
 * | `error_group_triage/<projectId>/<groupId>` | a group's triage: resolved, ignored, assignee, and the counts when it was set (db/error_group_triage.ts); deleted with its group |
 * | `release_counts/<projectId>/<release>/<field>` | `KvU64`: a release's first and last seen (`min`, `max`), entries and errors (`sum`) (db/releases.ts; its new groups are counted from `error_group_ids`, and the `groups` field of earlier versions is not read); deleted past the retention or the bound |
 * | `release_awaited/<projectId>/<release>` | `KvU64`: a release a group was resolved in before it was seen: 0, then its first seen once its counters are deleted (db/releases.ts); deleted with the project |
 * | `saved_views/<projectId>/<viewId>` | a named query and time range (db/views.ts) |
 * | `source_maps/<projectId>/<release>/<mapId>` | a source map's release, URL, size and slice count (db/sourcemaps.ts) |
 * | `source_map_slices/<projectId>/<mapId>/<n>` | slice `n` (from 0) of a source map's bytes |
 * | `source_map_loose/<projectId>/<mapId>` | a map's slices that go unless its record names them: written before an upload's slices and with a record's deletion, deleted once settled; a merge round deletes what an upload or deletion cut short left |
 * | `source_map_index/<projectId>` | the project's maps per release, their count and bytes: its bounds, and the releases with maps |
 * | `write_probe` | one byte written and deleted at start-up, to find a database that cannot be written |
 *
 * @module
 */

/**
 * A key builder of the form `prefix/<part>/<part>...`, the parts named in
 * `Parts` (a labelled tuple, so a builder's parameters keep their names).
 *
 * @example
 * ```ts
 * const logChunkKey = keyed<[projectId: string, lastId: string]>("log_chunks");
 * logChunkKey("p1", "01J..."); // ["log_chunks", "p1", "01J..."]
 * ```
 */
function keyed<Parts extends Deno.KvKeyPart[]>(
  prefix: string,
): (...parts: Parts) => Deno.KvKey {
  return (...parts) => [prefix, ...parts];
}

/** Key of a project record. */
export const projectKey = keyed<[projectId: string]>("projects");

/** Prefix of all project records. */
export const projectsPrefix = keyed<[]>("projects");

/**
 * Key marking a project being deleted: written in the commit that deletes
 * its record, deleted once nothing under the project is left.
 */
export const deletingProjectKey = keyed<[projectId: string]>(
  "deleting_projects",
);

/** Prefix of the projects being deleted. */
export const deletingProjectsPrefix = keyed<[]>("deleting_projects");

/** Key of a batch waiting to be processed. */
export const pendingBatchKey = keyed<[batchId: string]>("pending_batches");

/** Prefix of all pending batches, in creation order. */
export const pendingBatchesPrefix = keyed<[]>("pending_batches");

/** Key of a batch moved aside after repeated failures. */
export const deadLetterKey = keyed<[batchId: string]>("dead_letters");

/** Prefix of all dead letters. */
export const deadLettersPrefix = keyed<[]>("dead_letters");

/** Key of slice `n` (from 0) of a batch's entries. */
export const batchSliceKey = keyed<[batchId: string, n: number]>(
  "batch_slices",
);

/** Prefix of all the slices of a batch's entries. */
export const batchSlicesPrefix = keyed<[batchId: string]>("batch_slices");

/** Prefix of the slices of every batch, by batch id. */
export const allBatchSlicesPrefix = keyed<[]>("batch_slices");

/**
 * Key of the projects whose results a batch spanning more projects than one
 * atomic operation can check has committed so far.
 */
export const batchProgressKey = keyed<[batchId: string]>("batch_progress");

/** Key of a chunk of stored entries, named by its last entry (see db/storage/chunk.ts). */
export const logChunkKey = keyed<[projectId: string, lastId: string]>(
  "log_chunks",
);

/** Prefix of a project's chunks. */
export const logChunksPrefix = keyed<[projectId: string]>("log_chunks");

/** Key of slice `n` (from 1) of a chunk too large for one value. */
export const logChunkSliceKey = keyed<
  [projectId: string, lastId: string, n: number]
>("log_chunk_slices");

/** Prefix of the further slices of a project's large chunks. */
export const logChunkSlicesPrefix = keyed<[projectId: string]>(
  "log_chunk_slices",
);

/** Key of a chunk's summary, named like the chunk. */
export const logSummaryKey = keyed<[projectId: string, lastId: string]>(
  "log_summaries",
);

/** Prefix of a project's chunk summaries, ordered by last entry. */
export const logSummariesPrefix = keyed<[projectId: string]>("log_summaries");

/** Key of a chunk's summary with its Bloom filter, named like the chunk. */
export const logBloomKey = keyed<[projectId: string, lastId: string]>(
  "log_blooms",
);

/** Prefix of a project's chunk Bloom filters, ordered by last entry. */
export const logBloomsPrefix = keyed<[projectId: string]>("log_blooms");

/** Key of a chunk's columns (db/storage/columns.ts), named like the chunk. */
export const logColumnsKey = keyed<[projectId: string, lastId: string]>(
  "log_columns",
);

/** Prefix of a project's chunk columns, ordered by last entry. */
export const logColumnsPrefix = keyed<[projectId: string]>("log_columns");

/** Key of slice `n` (from 1) of a chunk's columns too large for one value. */
export const logColumnSliceKey = keyed<
  [projectId: string, lastId: string, n: number]
>("log_column_slices");

/** Prefix of the further slices of a project's large columns. */
export const logColumnSlicesPrefix = keyed<[projectId: string]>(
  "log_column_slices",
);

/** Resolution of an entry counter: a minute or an hour. */
export type CountResolution = "m" | "h";

/** Counter of a project's entries of `level` received in one minute or hour. */
export const logCountKey = keyed<
  [projectId: string, resolution: CountResolution, start: number, level: string]
>("log_counts");

/** Prefix of a project's entry counters (of one resolution, when given). */
export function logCountsPrefix(
  projectId: string,
  resolution?: CountResolution,
): Deno.KvKey {
  return resolution === undefined
    ? ["log_counts", projectId]
    : ["log_counts", projectId, resolution];
}

/** Reads the start time and level back from a {@linkcode logCountKey}. */
export function decodeLogCountKey(
  key: Deno.KvKey,
): { start: number; level: string } {
  return { start: Number(key[3]), level: String(key[4]) };
}

/** Counter bumped by every merge of a project's chunks: readers detect a move. */
export const logMergesKey = keyed<[projectId: string]>("log_merges");

/** Key of a coarse group, named by the last id of its newest chunk. */
export const logCoarseGroupKey = keyed<[projectId: string, lastId: string]>(
  "log_coarse_groups",
);

/** Prefix of a project's coarse groups. */
export const logCoarseGroupsPrefix = keyed<[projectId: string]>(
  "log_coarse_groups",
);

/** Key of one segment of a coarse group's filter. */
export const logCoarseBitsKey = keyed<
  [projectId: string, segment: number, lastId: string]
>("log_coarse_bits");

/** Prefix of a project's coarse filter segments (of one segment number). */
export function logCoarseBitsPrefix(
  projectId: string,
  segment?: number,
): Deno.KvKey {
  return segment === undefined
    ? ["log_coarse_bits", projectId]
    : ["log_coarse_bits", projectId, segment];
}

/** Key of a merged chunk's token hashes (their number: {@linkcode logCoarsePendingKey}). */
export const logCoarseHashesKey = keyed<[projectId: string, lastId: string]>(
  "log_coarse_hashes",
);

/** Prefix of a project's waiting token hashes. */
export const logCoarseHashesPrefix = keyed<[projectId: string]>(
  "log_coarse_hashes",
);

/** The group's last id a coarse filter segment's key names. */
export function logCoarseBitsGroupId(key: Deno.KvKey): string {
  return String(key[3]);
}

/** Key of the number of a merged chunk's token hashes waiting for a coarse group. */
export const logCoarsePendingKey = keyed<[projectId: string, lastId: string]>(
  "log_coarse_pending",
);

/** Prefix of a project's token hashes waiting for a coarse group. */
export const logCoarsePendingPrefix = keyed<[projectId: string]>(
  "log_coarse_pending",
);

/**
 * Key marking a chunk written since a coarse group last named it: every
 * write of a chunk sets it, a group deletes those of its chunks.
 */
export const logUngroupedKey = keyed<[projectId: string, lastId: string]>(
  "log_ungrouped",
);

/** Prefix of a project's chunks in no coarse group. */
export const logUngroupedPrefix = keyed<[projectId: string]>("log_ungrouped");

/**
 * A project's coarse state: present once every chunk in no group is
 * marked ungrouped; bumped when a group is made or a merge moves a chunk
 * a group names, so that a word search that skipped by the groups reads
 * again (db/query/listing.ts).
 */
export const logCoarseStateKey = keyed<[projectId: string]>("log_coarse_state");

/**
 * The entry id a key of a chunk, summary or Bloom filter is named by
 * (`log_chunks/<projectId>/<id>`, `log_summaries/<projectId>/<id>`, ...).
 */
export function logUnitId(key: Deno.KvKey): string {
  return String(key[2]);
}

/** Key remembering a signature until it can no longer be replayed. */
export const seenSignatureKey = keyed<[projectId: string, signature: string]>(
  "seen_signatures",
);

/** Prefix of a project's remembered signatures. */
export const seenSignaturesPrefix = keyed<[projectId: string]>(
  "seen_signatures",
);

/** Counter of a project's accepted entries. */
export function acceptedCountKey(projectId: string): Deno.KvKey {
  return ["stats", projectId, "accepted"];
}

/** Counter of a project's entries rejected for `reason`. */
export function rejectedCountKey(
  projectId: string,
  reason: string,
): Deno.KvKey {
  return ["stats", projectId, "rejected", reason];
}

/** Prefix of a project's counters of rejections by reason. */
export function rejectedCountsPrefix(projectId: string): Deno.KvKey {
  return ["stats", projectId, "rejected"];
}

/** Counter of all of a project's rejections; picks the slot of the next one. */
export function rejectedTotalKey(projectId: string): Deno.KvKey {
  return ["stats", projectId, "rejected_total"];
}

/** Counter of a project's rejected entries later stored by a replay. */
export function replayedCountKey(projectId: string): Deno.KvKey {
  return ["stats", projectId, "replayed"];
}

/** Prefix of a project's counters. */
export const statsPrefix = keyed<[projectId: string]>("stats");

/** Counter of rejections that belong to no existing project. */
export function globalRejectedCountKey(reason: string): Deno.KvKey {
  return ["global_stats", "rejected", reason];
}

/** Prefix of the global counters of rejections by reason. */
export function globalRejectedCountsPrefix(): Deno.KvKey {
  return ["global_stats", "rejected"];
}

/** Counter of all rejections naming no project; picks the next global slot. */
export function globalRejectedTotalKey(): Deno.KvKey {
  return ["global_stats", "rejected_total"];
}

/** Key of one slot of a project's ring of recent rejections. */
export const rejectionKey = keyed<[projectId: string, slot: number]>(
  "rejections",
);

/** Prefix of a project's recent rejections. */
export const rejectionsPrefix = keyed<[projectId: string]>("rejections");

/** Key of the content of a rejected entry, in the slot of its rejection. */
export const rejectedEntryKey = keyed<[projectId: string, slot: number]>(
  "rejected_entries",
);

/** Prefix of the content of a project's recent rejected entries. */
export const rejectedEntriesPrefix = keyed<[projectId: string]>(
  "rejected_entries",
);

/** Key of one slot of the global ring of entries naming no project. */
export const globalRejectedEntryKey = keyed<[slot: number]>(
  "global_rejected_entries",
);

/** Prefix of the global ring of entries naming no project. */
export const globalRejectedEntriesPrefix = keyed<[]>("global_rejected_entries");

/** Counter of the POSTs from one client address in one epoch. */
export const rateLimitKey = keyed<[epoch: number, ip: string]>("rate_limits");

/** Prefix of every rate counter. */
export const rateLimitsPrefix = keyed<[]>("rate_limits");

/** Prefix of one epoch's rate counters. */
export const rateLimitEpochPrefix = keyed<[epoch: number]>("rate_limits");

/** Key of the dashboard's random secret, mixed into its session signing key. */
export const dashboardSecretKey = keyed<[]>("dashboard_secret");

/** Key of a project's quota and spike state. */
export const quotaStateKey = keyed<[projectId: string]>("quota_state");

/** Key of what a batch may store under a project's quota. */
export const quotaGrantKey = keyed<[batchId: string, projectId: string]>(
  "quota_grants",
);

/** Prefix of the quota grants of a batch, one per project. */
export const quotaGrantsPrefix = keyed<[batchId: string]>("quota_grants");

/** Key of one usage counter of a project on the UTC day starting at `day`. */
export const usageKey = keyed<[projectId: string, day: number, name: string]>(
  "usage",
);

/** Prefix of a project's usage counters, by day. */
export const usagePrefix = keyed<[projectId: string]>("usage");

/** The day and the counter name of a usage key. */
export function decodeUsageKey(key: Deno.KvKey): { day: number; name: string } {
  return {
    day: Number(part(key, "usage", 2)),
    name: String(part(key, "usage", 3)),
  };
}

/** Key of the random key queued batches are sealed with. */
export const batchSealKey = keyed<[]>("batch_key");

/** Key of one signed-in dashboard session; deleting it ends the session. */
export const dashboardSessionKey = keyed<[sessionId: string]>(
  "dashboard_sessions",
);

/** Prefix of every dashboard session. */
export const dashboardSessionsPrefix = keyed<[]>("dashboard_sessions");

/** Key of what a dashboard session's next page shows once. */
export const dashboardFlashKey = keyed<[sessionId: string]>("dashboard_flash");

/** Key of an alert rule; fewer ids give the prefix of a project's or of all rules. */
export function alertRuleKey(
  ...ids: [] | [string] | [string, string]
): Deno.KvKey {
  return ["alert_rules", ...ids];
}

/** Key of an alert rule's evaluation state. */
export const alertStateKey = keyed<[projectId: string, ruleId: string]>(
  "alert_state",
);

/** Key of a delivery due at `due` (Unix ms); no arguments give the outbox's prefix. */
export function alertOutboxKey(...at: [] | [number, string]): Deno.KvKey {
  return ["alert_outbox", ...at];
}

/**
 * Key of a rule's delivery in the outbox (its value: the due time of its
 * outbox key); fewer ids give the prefix of a rule's or a project's.
 */
export function alertWaitingKey(
  ...ids: [string] | [string, string] | [string, string, string]
): Deno.KvKey {
  return ["alert_waiting", ...ids];
}

/** Key of one delivery attempt of a rule; without the attempt, its history's prefix. */
export function alertHistoryKey(
  ...ids: [string, string] | [string, string, string]
): Deno.KvKey {
  return ["alert_history", ...ids];
}

/** Key the health check reads (never written) to see that KV answers. */
export const healthProbeKey = keyed<[]>("health_probe");

/** Key of a dashboard account by email; without one, the prefix of all. */
export function userKey(email?: string): Deno.KvKey {
  return email === undefined ? ["users"] : ["users", email];
}

/** Key of a project's read token (its name and hash). */
export const readTokenKey = keyed<[projectId: string, tokenId: string]>(
  "read_tokens",
);

/** Prefix of a project's read tokens. */
export const readTokensPrefix = keyed<[projectId: string]>("read_tokens");

/** Key that finds a read token by the SHA-256 (hex) of the token. */
export const readTokenHashKey = keyed<[hash: string]>("read_token_hashes");

/** Key that holds a read token's name within its project (its id). */
export const readTokenNameKey = keyed<[projectId: string, name: string]>(
  "read_token_names",
);

/** Prefix of a project's read token names. */
export const readTokenNamesPrefix = keyed<[projectId: string]>(
  "read_token_names",
);

/**
 * Key of an audit event of `scope` (a project id, or `""` for the service);
 * without an event id, the prefix of the scope's events.
 */
export function auditKey(scope: string, eventId?: string): Deno.KvKey {
  return eventId === undefined ? ["audit", scope] : ["audit", scope, eventId];
}

/**
 * Key of a day's audit budget of `account` in `scope` (`day`: Unix ms / one
 * day, floored): the actor's, or for a token's actions its creator's.
 */
export const auditBudgetKey = keyed<
  [scope: string, account: string, day: number]
>("audit_budgets");

/** Prefix of a scope's audit budgets. */
export const auditBudgetsPrefix = keyed<[scope: string]>("audit_budgets");

/** Key of a project's key of error group ids (db/error_groups.ts). */
export const fingerprintKeyKey = keyed<[projectId: string]>("fingerprint_keys");

/** Key of an error group; without an id, the prefix of the project's groups. */
export function errorGroupKey(projectId: string, groupId?: string): Deno.KvKey {
  return groupId === undefined
    ? ["error_groups", projectId]
    : ["error_groups", projectId, groupId];
}

/**
 * Key of an error group's count (a `KvU64`); without an id, the prefix of the
 * project's counts.
 */
export function errorGroupCountKey(
  projectId: string,
  groupId?: string,
): Deno.KvKey {
  return groupId === undefined
    ? ["error_group_counts", projectId]
    : ["error_group_counts", projectId, groupId];
}

/**
 * Key of an error group in the index by last seen; without a time, the
 * prefix of the project's index.
 */
export function errorGroupSeenKey(
  projectId: string,
  at?: { lastSeen: number; groupId: string },
): Deno.KvKey {
  return at === undefined
    ? ["error_groups_by_seen", projectId]
    : ["error_groups_by_seen", projectId, at.lastSeen, at.groupId];
}

/** The last seen time and group id of an {@linkcode errorGroupSeenKey}. */
export function decodeErrorGroupSeenKey(
  key: Deno.KvKey,
): { lastSeen: number; groupId: string } {
  return {
    lastSeen: Number(part(key, "error_groups_by_seen", 2)),
    groupId: String(part(key, "error_groups_by_seen", 3)),
  };
}

/** Key of the id of the group of a public fingerprint, or their prefix. */
export function errorGroupIdKey(
  projectId: string,
  fingerprint?: string,
): Deno.KvKey {
  return fingerprint === undefined
    ? ["error_group_ids", projectId]
    : ["error_group_ids", projectId, fingerprint];
}

/**
 * Key of a group's count of entries of a release (a `KvU64`); without a
 * release, the prefix of the group's; without a group, of the project's.
 */
export function errorGroupReleaseKey(
  projectId: string,
  groupId?: string,
  release?: string,
): Deno.KvKey {
  return [
    "error_group_releases",
    projectId,
    ...(groupId === undefined ? [] : [groupId]),
    ...(release === undefined ? [] : [release]),
  ];
}

/** The release of an {@linkcode errorGroupReleaseKey}. */
export function decodeErrorGroupReleaseKey(key: Deno.KvKey): string {
  return String(part(key, "error_group_releases", 3));
}

/** Key of a group's triage, or (without an id) the project's. */
export function errorGroupTriageKey(
  projectId: string,
  groupId?: string,
): Deno.KvKey {
  return [
    "error_group_triage",
    projectId,
    ...(groupId === undefined ? [] : [groupId]),
  ];
}

/**
 * The prefixes of every row of a project's error groups: the groups, their
 * counts, index, ids by fingerprint, counts per release and triage (the
 * project's key of group ids, {@linkcode fingerprintKeyKey}, is one key, not
 * a prefix).
 */
export function errorGroupPrefixes(projectId: string): Deno.KvKey[] {
  return [
    errorGroupKey(projectId),
    errorGroupCountKey(projectId),
    errorGroupSeenKey(projectId),
    errorGroupIdKey(projectId),
    errorGroupReleaseKey(projectId),
    errorGroupTriageKey(projectId),
  ];
}

/** Prefix of a project's alert rule states. */
const alertStatesPrefix = keyed<[projectId: string]>("alert_state");

/** Prefix of a project's alert histories. */
const alertHistoriesPrefix = keyed<[projectId: string]>("alert_history");

/**
 * The prefixes of a project's alert rules, their states, histories and
 * waiting deliveries.
 */
export function alertPrefixes(projectId: string): Deno.KvKey[] {
  return [
    alertRuleKey(projectId),
    alertStatesPrefix(projectId),
    alertHistoriesPrefix(projectId),
    alertWaitingKey(projectId),
  ];
}

/** The counters of a release (`KvU64` each). */
export type ReleaseField = "first" | "last" | "entries" | "errors" | "groups";

/**
 * Key of one counter of a release; without a field, the prefix of the
 * release's; without a release, of the project's.
 */
export function releaseCountKey(
  projectId: string,
  release?: string,
  field?: ReleaseField,
): Deno.KvKey {
  return [
    "release_counts",
    projectId,
    ...(release === undefined ? [] : [release]),
    ...(field === undefined ? [] : [field]),
  ];
}

/**
 * Key of a release a group was resolved in before it was seen (a `KvU64`,
 * its first seen once its counters are deleted, else 0); without a
 * release, the prefix of the project's.
 */
export function releaseAwaitedKey(
  projectId: string,
  release?: string,
): Deno.KvKey {
  return [
    "release_awaited",
    projectId,
    ...(release === undefined ? [] : [release]),
  ];
}

/** The release and field of a {@linkcode releaseCountKey}. */
export function decodeReleaseCountKey(
  key: Deno.KvKey,
): { release: string; field: ReleaseField } {
  return {
    release: String(part(key, "release_counts", 2)),
    field: String(part(key, "release_counts", 3)) as ReleaseField,
  };
}

/**
 * Key of a source map's record; without a map id, the prefix of a release's
 * maps; without a release, of the project's.
 */
export function sourceMapKey(
  projectId: string,
  release?: string,
  mapId?: string,
): Deno.KvKey {
  return [
    "source_maps",
    projectId,
    ...(release === undefined ? [] : [release]),
    ...(mapId === undefined ? [] : [mapId]),
  ];
}

/** Key of slice `n` of a source map; without `n`, of its slices; without a map, of the project's. */
export function sourceMapSliceKey(
  projectId: string,
  mapId?: string,
  n?: number,
): Deno.KvKey {
  return [
    "source_map_slices",
    projectId,
    ...(mapId === undefined ? [] : [mapId]),
    ...(n === undefined ? [] : [n]),
  ];
}

/**
 * Key of a note that the slices of map `mapId` go unless its record names
 * them; without a map, the prefix of the project's.
 */
export const sourceMapLooseKey = keyed<
  [projectId: string] | [projectId: string, mapId: string]
>("source_map_loose");

/** Key of a project's index of source maps (releases, count, bytes). */
export const sourceMapIndexKey = keyed<[projectId: string]>("source_map_index");

/** Key of a saved view of a project's explorer, or (without id) their prefix. */
export function savedViewKey(projectId: string, viewId?: string): Deno.KvKey {
  return ["saved_views", projectId, ...(viewId === undefined ? [] : [viewId])];
}

/** Thrown when a key does not have the layout its decoder expects. */
export class KeyLayoutError extends Error {
  override name = "KeyLayoutError";
}

function part(key: Deno.KvKey, prefix: string, at: number): Deno.KvKeyPart {
  const value = key[at];
  if (key[0] !== prefix || value === undefined) {
    throw new KeyLayoutError(
      `Cannot read key "${key.join("/")}": expected "${prefix}/..."`,
    );
  }
  return value;
}

/** The batch id of a `pending_batches/<id>` or `dead_letters/<id>` key. */
export function batchIdOf(key: Deno.KvKey): string {
  return String(
    part(
      key,
      key[0] === "dead_letters" ? "dead_letters" : "pending_batches",
      1,
    ),
  );
}

/** The batch id of a {@linkcode batchSliceKey}. */
export function batchIdOfSlice(key: Deno.KvKey): string {
  return String(part(key, "batch_slices", 1));
}

/** The project id of a {@linkcode deletingProjectKey}. */
export function deletingProjectIdOf(key: Deno.KvKey): string {
  return String(part(key, "deleting_projects", 1));
}

/**
 * The last part of a counter key: the reason of a `rejected/<reason>`
 * counter, project's or global.
 */
export function counterNameOf(key: Deno.KvKey): string {
  return String(part(key, String(key[0]), key.length - 1));
}

/** Key the server writes and deletes at start-up to prove the database writable. */
export const writeProbeKey = keyed<[]>("write_probe");

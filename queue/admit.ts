/**
 * The consumer's step between scrubbing a project's accepted entries and
 * storing them: its quota and spike protection decide which are stored
 * (db/quota.ts), its error groups count them all, and its usage counts
 * what happened to each (db/usage.ts). Adds to the result commit; the
 * quota's own small commit is made by `admitEntries`.
 *
 * @module
 */
import type { AtomicWriter } from "../db/atomic.ts";
import { prepareErrorGroups } from "../db/error_groups.ts";
import type { GroupShare } from "../db/group_budget.ts";
import { rejectedCountKey } from "../db/keys.ts";
import type { Project } from "../db/projects.ts";
import { admitEntries, type GrantedBatch } from "../db/quota.ts";
import { addUsage } from "../db/usage.ts";
import { DAY_MS, type LogRecord } from "../domain/entry.ts";
import { acceptEntries } from "./accept.ts";

/** Options of {@linkcode admitAndAccept}. */
export interface AdmitAndAcceptOptions {
  /**
   * The batches of the records, each with the key its result commit checks
   * (its pending key): one, or a group committed together.
   */
  batches: GrantedBatch[];
  project: Project;
  /** The project record's versionstamp the batch was judged with. */
  versionstamp: string | null;
  /** The project's accepted entries, scrubbed. */
  records: LogRecord[];
  /** Each record's line for storing (from `scrubRecords`). */
  lineOf: (record: LogRecord) => string;
  /** Unix ms. */
  now: number;
  /**
   * The project's share of what the result commit leaves to error groups
   * and releases (db/group_budget.ts). @default the whole of it
   */
  share?: GroupShare;
}

/**
 * Adds to `op` what accepting a project's entries of one batch writes:
 * the entries its quota admits, the error groups of them all, the counts
 * of those over the quota or sampled, and the day's usage. Returns how
 * many of `records` are stored and why the others are not.
 *
 * @example
 * ```ts
 * await admitAndAccept(kv, op, { batches, project, versionstamp, records, lineOf, now });
 * ```
 */
export async function admitAndAccept(
  kv: Deno.Kv,
  op: AtomicWriter,
  options: AdmitAndAcceptOptions,
): Promise<{ stored: number; overQuota: number; sampled: number }> {
  const { project, records, now } = options;
  // Each line once: storing reads it again.
  const lines = new Map<LogRecord, string>();
  const lineOf = (record: LogRecord) => {
    let line = lines.get(record);
    if (line === undefined) lines.set(record, line = options.lineOf(record));
    return line;
  };
  records.sort((a, b) => a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
  const groups = await prepareErrorGroups(kv, project.id, records, {
    now,
    retentionMs: project.retentionDays * DAY_MS,
    ...(options.share ? { share: options.share } : {}),
  });
  // A new group's first entry (the one its `new` alert names), not its
  // latest; a group stored before the batch has none here.
  const free = new Set(
    groups.groups.flatMap((g) =>
      g.before === null && g.after.firstId !== undefined
        ? [g.after.firstId]
        : []
    ),
  );
  const admitted = await admitEntries(kv, {
    batches: options.batches,
    project,
    versionstamp: options.versionstamp,
    records,
    free,
    now,
  });
  acceptEntries(op, project, admitted.stored, { now, lineOf, groups });
  for (const grant of admitted.grants ?? []) op.delete(grant);
  const { overQuota, sampled } = admitted;
  if (overQuota > 0) {
    op.sum(rejectedCountKey(project.id, "over_quota"), BigInt(overQuota));
  }
  if (sampled > 0) {
    op.sum(rejectedCountKey(project.id, "sampled"), BigInt(sampled));
  }
  let bytes = 0;
  for (const record of admitted.stored) bytes += lineOf(record).length;
  addUsage(op, project.id, now, {
    accepted: records.length,
    stored: admitted.stored.length,
    over_quota: overQuota,
    sampled,
    bytes,
  });
  return { stored: admitted.stored.length, overQuota, sampled };
}

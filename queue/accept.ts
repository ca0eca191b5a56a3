/**
 * Accepting entries: what storing authenticated entries writes, in one
 * place for the two ways an entry is accepted, the consumer's result commit
 * (queue/consumer.ts) and the replay of a kept rejected entry
 * (queue/replay.ts). It adds mutations to an atomic operation its caller
 * guards and commits; it reads and commits nothing itself (the error groups
 * are read before, by `prepareErrorGroups`).
 *
 * @module
 */
import type { AtomicWriter } from "../db/atomic.ts";
import { addErrorGroups, type GroupPlan } from "../db/error_groups.ts";
import { acceptedCountKey } from "../db/keys.ts";
import { storeLogs } from "../db/storage/write.ts";
import type { Project } from "../db/projects.ts";
import { scrubAccepted } from "../db/scrub.ts";
import { encodeRecordLine } from "../db/storage/lines.ts";
import { longestRetentionMs } from "../db/retention_rules.ts";
import type { LogRecord } from "../domain/entry.ts";

/** Options of {@linkcode acceptEntries}. */
export interface AcceptOptions {
  /** Time of the commit, Unix milliseconds. */
  now: number;
  /** A record's line, when known already. @default {encodeRecordLine} */
  lineOf?: (record: LogRecord) => string;
  /** The records' error groups, from `prepareErrorGroups`. */
  groups: GroupPlan;
}

/**
 * Adds to `op` what accepting `records` of `project` writes: the records,
 * stored in id order and expiring with the project's retention, their error
 * groups, and the project's accepted count. `records` is sorted in place.
 * They are scrubbed already ({@linkcode scrubRecords}), before their error
 * groups were prepared, so that nothing stored holds what scrubbing removes.
 *
 * @example
 * ```ts
 * const lineOf = scrubRecords(project, records);
 * const groups = await prepareErrorGroups(kv, project.id, records, { now, retentionMs });
 * acceptEntries(op, project, records, { now, lineOf, groups });
 * ```
 */
export function acceptEntries(
  op: AtomicWriter,
  project: Project,
  records: LogRecord[],
  options: AcceptOptions,
): void {
  records.sort((a, b) => a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
  storeLogs(op, project.id, records, {
    now: options.now,
    retentionMs: longestRetentionMs(project),
    ...(options.lineOf ? { lineOf: options.lineOf } : {}),
  });
  addErrorGroups(op, options.groups);
  op.sum(acceptedCountKey(project.id), BigInt(records.length));
}

/**
 * Scrubs `records` by `project`'s rules (docs/privacy.md), each replaced in
 * place by its scrubbed form when that changes it; returns each record's
 * line for storing: the known one (`lineOf`, a line cut from the committed
 * text) when scrubbing left the record as it was, else encoded again.
 *
 * @example
 * ```ts
 * const lineOf = scrubRecords(project, records, (r) => cut.get(r));
 * ```
 */
export function scrubRecords(
  project: Project,
  records: LogRecord[],
  lineOf?: (record: LogRecord) => string | undefined,
): (record: LogRecord) => string {
  const lines = new Map<LogRecord, string>();
  records.forEach((record, i) => {
    const scrubbed = scrubAccepted(project, record, lineOf?.(record));
    records[i] = scrubbed.record;
    if (scrubbed.line !== undefined) lines.set(scrubbed.record, scrubbed.line);
  });
  return (record) => lines.get(record) ?? encodeRecordLine(record);
}

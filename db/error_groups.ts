/**
 * Error groups (docs/explorer.md#error-groups): a project's `error` and
 * `critical` entries grouped by their fingerprint (domain/fingerprint.ts),
 * each with its count, first and last receipt time, hourly counts for a
 * sparkline, and a small record (title, top frame, a sample entry id).
 *
 * Written at write time: the consumer adds {@linkcode addErrorGroups}'s
 * mutations to the result commit that stores the entries, so a group counts
 * each entry exactly once, as the entries are stored exactly once; pages
 * read a few prefixes instead of scanning entries. The counters are
 * `Deno.KvU64` (`sum`, `min`, `max`), which cannot expire: the hourly ones
 * older than the sparkline are deleted by {@linkcode pruneErrorGroupHours}.
 *
 * @module
 */
import type { LogRecord } from "../domain/entry.ts";
import { fingerprintOf } from "../domain/fingerprint.ts";
import type { AtomicWriter } from "./atomic.ts";
import {
  decodeErrorGroupKey,
  errorGroupKey,
  type ErrorGroupPart,
} from "./keys.ts";
import { decodeJson, encodeJson } from "./kv.ts";

/** Levels whose entries are grouped. */
export const GROUPED_LEVELS: readonly string[] = ["error", "critical"];
/**
 * Groups one batch adds to at most: with 4 mutations per group and one per
 * hour its entries span, one batch's groups take about a hundred of the
 * 1,000 mutations of KV's commit. Entries of further groups in the same
 * batch (a storm of distinct errors) are stored but not grouped; the
 * largest groups of the batch are the ones kept.
 */
export const MAX_GROUPS_PER_BATCH = 20;
/** Hours of the sparkline, the newest one included. */
export const SPARK_HOURS = 24;
/**
 * Groups one listing reads at most (in key order, not by last seen): a
 * sender can make any number of fingerprints, and a listing's work stays
 * bounded.
 */
export const MAX_GROUPS_READ = 10_000;
/** A group first seen this recently is new. */
export const NEW_GROUP_MS = 24 * 3_600_000;

const HOUR_MS = 3_600_000;
/** Longest sample title stored, in characters. */
const MAX_SAMPLE_TITLE = 300;

/** The small record of a group. */
export interface ErrorGroupRecord {
  /** The normalised title the fingerprint covers. */
  title: string;
  /** `file:function` of the top stack frame, `null` without a stack. */
  topFrame: string | null;
  /** The newest entry grouped so far (of the last batch that added one). */
  sampleId: string;
  /** Its level. */
  level: string;
  /** Its title before normalisation, cut to 300 characters. */
  sampleTitle: string;
}

/** A group as the pages and the CLI show it. */
export interface ErrorGroup extends ErrorGroupRecord {
  fingerprint: string;
  count: number;
  /** Receipt time of its first entry, Unix ms. */
  firstSeen: number;
  /** Receipt time of its last entry, Unix ms. */
  lastSeen: number;
  /** Entries per hour over the last {@linkcode SPARK_HOURS} hours, oldest first. */
  hourly: number[];
  /** First seen in the last {@linkcode NEW_GROUP_MS}. */
  isNew: boolean;
}

function hourOf(ms: number): number {
  return Math.floor(ms / HOUR_MS) * HOUR_MS;
}

interface Pending {
  fingerprint: string;
  record: ErrorGroupRecord;
  count: number;
  first: number;
  last: number;
  hours: Map<number, number>;
}

/**
 * Adds to `op` the mutations that count `records`' `error` and `critical`
 * entries into their groups (at most {@linkcode MAX_GROUPS_PER_BATCH}
 * groups); returns the number of mutations added.
 *
 * @example
 * ```ts
 * const op = kv.atomic();
 * addErrorGroups(op, projectId, records); // beside the stored entries
 * await op.commit();
 * ```
 */
export function addErrorGroups(
  op: AtomicWriter,
  projectId: string,
  records: LogRecord[],
): number {
  const groups = new Map<string, Pending>();
  for (const record of records) {
    if (!GROUPED_LEVELS.includes(record.level)) continue;
    const { fingerprint, title, topFrame } = fingerprintOf(record);
    let group = groups.get(fingerprint);
    if (group === undefined) {
      group = {
        fingerprint,
        record: {
          title,
          topFrame,
          sampleId: record.id,
          level: record.level,
          sampleTitle: "",
        },
        count: 0,
        first: record.receivedAt,
        last: record.receivedAt,
        hours: new Map(),
      };
      groups.set(fingerprint, group);
    }
    group.count++;
    group.first = Math.min(group.first, record.receivedAt);
    if (record.receivedAt >= group.last) {
      group.last = record.receivedAt;
      group.record.sampleId = record.id;
      group.record.level = record.level;
    }
    const hour = hourOf(record.receivedAt);
    group.hours.set(hour, (group.hours.get(hour) ?? 0) + 1);
  }
  const kept = [...groups.values()]
    .sort((a, b) => b.count - a.count)
    .slice(0, MAX_GROUPS_PER_BATCH);
  let mutations = 0;
  for (const group of kept) {
    const sample = records.find((r) => r.id === group.record.sampleId);
    const text = sample ? sampleTitle(sample) : "";
    group.record.sampleTitle = text.slice(0, MAX_SAMPLE_TITLE);
    const key = (part: ErrorGroupPart) =>
      errorGroupKey(part, projectId, group.fingerprint);
    op.set(key("record"), encodeJson(group.record));
    op.sum(key("count"), BigInt(group.count));
    op.min(key("first"), BigInt(Math.max(0, Math.floor(group.first))));
    op.max(key("last"), BigInt(Math.max(0, Math.floor(group.last))));
    mutations += 4;
    for (const [hour, count] of group.hours) {
      op.sum(
        errorGroupKey("hours", projectId, group.fingerprint, hour),
        BigInt(count),
      );
      mutations++;
    }
  }
  return mutations;
}

function sampleTitle(record: LogRecord): string {
  const { title, message } = record.data;
  if (typeof title === "string" && title !== "") return title;
  if (typeof message === "string" && message !== "") return message;
  return "";
}

async function listCounters(
  kv: Deno.Kv,
  prefix: Deno.KvKey,
): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  for await (const entry of kv.list({ prefix }, { limit: MAX_GROUPS_READ })) {
    if (entry.value instanceof Deno.KvU64) {
      out.set(
        decodeErrorGroupKey(entry.key).fingerprint,
        Number(entry.value.value),
      );
    }
  }
  return out;
}

/** Options of {@linkcode listGroups}. */
export interface ListGroupsOptions {
  /** Groups returned at most, the most recently seen first. @default all */
  limit?: number;
}

/**
 * A project's error groups, the most recently seen first, with their
 * hourly counts over the last {@linkcode SPARK_HOURS} hours up to `now`.
 *
 * @example
 * ```ts
 * for (const group of await listGroups(kv, projectId, Date.now())) {
 *   console.log(group.count, group.title);
 * }
 * ```
 */
export async function listGroups(
  kv: Deno.Kv,
  projectId: string,
  now: number,
  options: ListGroupsOptions = {},
): Promise<ErrorGroup[]> {
  const records = new Map<string, ErrorGroupRecord>();
  const [count, first, last] = await Promise.all([
    listCounters(kv, errorGroupKey("count", projectId)),
    listCounters(kv, errorGroupKey("first", projectId)),
    listCounters(kv, errorGroupKey("last", projectId)),
    (async () => {
      const prefix = errorGroupKey("record", projectId);
      const list = kv.list({ prefix }, { limit: MAX_GROUPS_READ });
      for await (const entry of list) {
        const record = decodeJson<ErrorGroupRecord>(entry.value);
        if (record) {
          records.set(decodeErrorGroupKey(entry.key).fingerprint, record);
        }
      }
    })(),
  ]);
  const newest = hourOf(now);
  const oldest = newest - (SPARK_HOURS - 1) * HOUR_MS;
  const hourly = new Map<string, number[]>();
  const prefix = errorGroupKey("hours", projectId);
  for await (
    const entry of kv.list({
      start: [...prefix, oldest],
      end: [...prefix, newest + HOUR_MS],
    }, { limit: SPARK_HOURS * MAX_GROUPS_READ })
  ) {
    if (!(entry.value instanceof Deno.KvU64)) continue;
    const fingerprint = decodeErrorGroupKey(entry.key).fingerprint;
    let bars = hourly.get(fingerprint);
    if (bars === undefined) {
      bars = new Array(SPARK_HOURS).fill(0);
      hourly.set(fingerprint, bars);
    }
    const at = (decodeErrorGroupKey(entry.key).hour - oldest) / HOUR_MS;
    bars[at] = (bars[at] ?? 0) + Number(entry.value.value);
  }
  const groups: ErrorGroup[] = [];
  for (const [fingerprint, record] of records) {
    const firstSeen = first.get(fingerprint) ?? 0;
    groups.push({
      ...record,
      fingerprint,
      count: count.get(fingerprint) ?? 0,
      firstSeen,
      lastSeen: last.get(fingerprint) ?? firstSeen,
      hourly: hourly.get(fingerprint) ?? new Array(SPARK_HOURS).fill(0),
      isNew: now - firstSeen < NEW_GROUP_MS,
    });
  }
  groups.sort((a, b) =>
    b.lastSeen - a.lastSeen ||
    (a.fingerprint < b.fingerprint ? -1 : a.fingerprint > b.fingerprint ? 1 : 0)
  );
  return groups.slice(0, options.limit ?? Infinity);
}

/**
 * Deletes a project's hourly group counters older than the sparkline, at
 * most `limit` of them per call; returns how many it deleted. The errors
 * page calls it after reading, so old hours go as they are looked at.
 *
 * @example
 * ```ts
 * await pruneErrorGroupHours(kv, projectId, Date.now());
 * ```
 */
export async function pruneErrorGroupHours(
  kv: Deno.Kv,
  projectId: string,
  now: number,
  limit = 500,
): Promise<number> {
  const prefix = errorGroupKey("hours", projectId);
  const oldest = hourOf(now) - (SPARK_HOURS - 1) * HOUR_MS;
  const keys: Deno.KvKey[] = [];
  for await (
    const entry of kv.list({ prefix, end: [...prefix, oldest] }, { limit })
  ) {
    keys.push(entry.key);
  }
  for (let i = 0; i < keys.length; i += 100) {
    const op = kv.atomic();
    for (const key of keys.slice(i, i + 100)) op.delete(key);
    await op.commit();
  }
  return keys.length;
}

/**
 * Fixtures of the query suites: records at given times, stored as the
 * consumer stores them (chunks and counters), in a project the merger
 * can find, and one merging round.
 *
 * @module
 */
import { fixtureTest } from "./fixture.ts";
import type { LogRecord } from "../../domain/entry.ts";
import { storeLogs } from "../../db/storage/write.ts";
import { createProject } from "../../db/projects.ts";
import { mergeProject } from "../../db/storage/merge.ts";
import { createId } from "../../domain/ids.ts";
import { READ_NAMES, type Reads } from "../../db/query/reads.ts";

import { kvTest, ORIGIN, withKv } from "./harness.ts";

export { kvTest, withKv };

/** 2026-01-01T00:00:00Z. */
export const T0 = Date.UTC(2026, 0, 1);
/** An hour and a day, in milliseconds. */
export const HOUR = 3_600_000;
export const DAY = 86_400_000;
/** 30 days, the default retention. */
export const RETENTION_MS = 30 * DAY;

/** A record received at `ms`; `overrides` replace members. */
export function recordAt(
  ms: number,
  overrides: Partial<LogRecord> = {},
): LogRecord {
  return {
    id: createId(ms),
    receivedAt: ms,
    level: "info",
    data: { title: "Entry", message: `at ${ms - T0}` },
    device: { os: "Linux" },
    context: {},
    origin: ORIGIN,
    auth: "origin",
    ...overrides,
  };
}

/**
 * Stores records as one consumer batch would (sorted, in chunks, with the
 * counters), committed at `now` (the last record's time by default).
 */
export async function storeBatch(
  kv: Deno.Kv,
  projectId: string,
  records: LogRecord[],
  now = Math.max(...records.map((r) => r.receivedAt)),
): Promise<void> {
  const sorted = [...records].sort((a, b) => a.id < b.id ? -1 : 1);
  const op = kv.atomic();
  storeLogs(op, projectId, sorted, {
    now,
    retentionMs: RETENTION_MS,
    columns: true,
  });
  const result = await op.commit();
  if (!result.ok) throw new Error("Cannot store the batch");
}

/** Creates a project (the merger reads its retention). */
export async function queryProject(kv: Deno.Kv): Promise<string> {
  return (await createProject(kv, { name: "query", now: () => T0 })).id;
}

/** Runs `fn` with an in-memory KV holding one {@linkcode queryProject}. */
export async function withQueryProject(
  fn: (kv: Deno.Kv, projectId: string) => Promise<void>,
) {
  await withKv(async (kv) => await fn(kv, await queryProject(kv)));
}

/**
 * One merging round at `now` ({@linkcode mergeProject}): deletes what is past
 * the project's retention and merges the chunks it picks.
 */
export function mergeAt(kv: Deno.Kv, projectId: string, now: number) {
  return mergeProject(kv, projectId, { now });
}

/** Ids in time order. */
export function sortedIds(records: LogRecord[]): string[] {
  return records.map((r) => r.id).sort();
}

/** Text that compresses poorly, so that chunks hold few entries. */
export function noise(seed: number, length = 240): string {
  let x = (seed + 1) * 2654435761 >>> 0;
  let out = "";
  while (out.length < length) {
    x = Math.imul(x ^ (x >>> 15), 0x2c1b3c6d) >>> 0;
    x ^= x + Math.imul(x ^ (x >>> 7), 0x297a2d39);
    out += (x >>> 0).toString(36);
  }
  return out.slice(0, length);
}

/** A test run inside {@linkcode withQueryProject}. */
export const queryProjectTest = fixtureTest(withQueryProject);

/**
 * Reads that note each call's name in `calls`, then read with `reads()`
 * (asked at each call: a harness's KV may come later), to tell which reads
 * ran and in which thread.
 */
export function notedReads(reads: () => Reads, calls: string[]): Reads {
  return Object.fromEntries(
    READ_NAMES.map((name) => [name, (...args: unknown[]) => {
      calls.push(name);
      return (reads()[name] as (...args: unknown[]) => Promise<unknown>)(
        ...args,
      );
    }]),
  ) as unknown as Reads;
}

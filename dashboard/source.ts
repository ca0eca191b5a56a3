/**
 * Where the dashboard reads stored entries: the functions of the query
 * module's interface that the dashboard calls (`queryLogs`,
 * `aroundEntry`, `getEntry`, `histogram`, `tailLogs`, `parseQuery`,
 * `QuerySyntaxError`), with the same names, arguments and results.
 *
 * PROVISIONAL: this is a stand-in until the query module (`db/query/`)
 * exists. It reads through `listLogs` of db/logs.ts and filters in memory —
 * simple and exact, but it scans every entry of the time range, with no
 * index and no page summaries, so it is slow on large stores. When the query
 * module arrives, this whole file becomes
 * `export * from "../db/query/mod.ts";` and nothing else in the dashboard
 * changes.
 *
 * @module
 */
import { listLogs, type LogRecord } from "../db/logs.ts";
import { idTime } from "../queue/ids.ts";
import { type Filter, matches } from "./source_syntax.ts";

export {
  type FieldTerm,
  type Filter,
  parseQuery,
  QuerySyntaxError,
} from "./source_syntax.ts";

/** Options of {@linkcode queryLogs}. */
export interface QueryOptions {
  filter?: Filter;
  /** @default {"newest"} */
  order?: "newest" | "oldest";
  /** @default {100}, at most 1000 */
  limit?: number;
  /** Opaque, from a previous {@linkcode QueryPage}. */
  cursor?: string;
}

/** One page of {@linkcode queryLogs}. */
export interface QueryPage {
  records: LogRecord[];
  /** `null` when nothing more. */
  cursor: string | null;
  stats: { pagesRead: number; pagesSkipped: number; entriesScanned: number };
}

const ID = /^[0-9a-f]{28}$/;

/** The smallest id of time `ms`. */
function timeBound(ms: number): string {
  return Math.max(0, Math.floor(ms)).toString(16).padStart(12, "0");
}

/**
 * A project's entries matching `filter`, newest (or oldest) first, a page
 * at a time. The cursor is the last id returned, so it stays valid while
 * new entries arrive.
 *
 * @example
 * ```ts
 * const page = await queryLogs(kv, projectId, { filter: parseQuery("level:error"), limit: 50 });
 * ```
 */
export async function queryLogs(
  kv: Deno.Kv,
  projectId: string,
  options: QueryOptions = {},
): Promise<QueryPage> {
  const filter = options.filter ?? {};
  const newest = (options.order ?? "newest") === "newest";
  const limit = Math.min(Math.max(1, options.limit ?? 100), 1000);
  const cursor = options.cursor !== undefined && ID.test(options.cursor)
    ? options.cursor
    : undefined;
  let startId = filter.since !== undefined
    ? timeBound(filter.since)
    : undefined;
  let endId = filter.until !== undefined ? timeBound(filter.until) : undefined;
  if (cursor !== undefined) {
    if (newest) endId = endId === undefined || cursor < endId ? cursor : endId;
    // Oldest first: ids after the cursor ("\0" sorts right after it).
    else {startId = startId === undefined || cursor > startId
        ? `${cursor}\0`
        : startId;}
  }
  const records: LogRecord[] = [];
  let scanned = 0;
  for await (
    const record of listLogs(kv, projectId, {
      reverse: newest,
      ...(startId === undefined ? {} : { startId }),
      ...(endId === undefined ? {} : { endId }),
    })
  ) {
    scanned++;
    if (!matches(record, filter)) continue;
    if (records.length === limit) {
      return {
        records,
        cursor: records.at(-1)!.id,
        stats: { pagesRead: 0, pagesSkipped: 0, entriesScanned: scanned },
      };
    }
    records.push(record);
  }
  return {
    records,
    cursor: null,
    stats: { pagesRead: 0, pagesSkipped: 0, entriesScanned: scanned },
  };
}

/**
 * One stored entry by id, or `null`.
 *
 * @example
 * ```ts
 * const entry = await getEntry(kv, projectId, "019bc0feac44000000396a613652");
 * ```
 */
export async function getEntry(
  kv: Deno.Kv,
  projectId: string,
  id: string,
): Promise<LogRecord | null> {
  if (!ID.test(id)) return null;
  for await (
    const record of listLogs(kv, projectId, { startId: id, limit: 1 })
  ) {
    return record.id === id ? record : null;
  }
  return null;
}

/**
 * "Show in context": up to `n` entries before and after `id`, unfiltered,
 * in time order.
 *
 * @example
 * ```ts
 * const { before, entry, after } = await aroundEntry(kv, projectId, id, 20);
 * ```
 */
export async function aroundEntry(
  kv: Deno.Kv,
  projectId: string,
  id: string,
  n: number,
): Promise<
  { before: LogRecord[]; entry: LogRecord | null; after: LogRecord[] }
> {
  const entry = await getEntry(kv, projectId, id);
  if (entry === null) return { before: [], entry: null, after: [] };
  const before: LogRecord[] = [];
  for await (
    const record of listLogs(kv, projectId, {
      endId: id,
      reverse: true,
      limit: n,
    })
  ) {
    before.unshift(record);
  }
  const after: LogRecord[] = [];
  for await (
    const record of listLogs(kv, projectId, { startId: `${id}\0`, limit: n })
  ) {
    after.push(record);
  }
  return { before, entry, after };
}

/** Bar widths a histogram may use, shortest first. */
const INTERVALS = [
  1000,
  5000,
  15_000,
  60_000,
  300_000,
  900_000,
  3_600_000,
  3 * 3_600_000,
  6 * 3_600_000,
  12 * 3_600_000,
  86_400_000,
];

/** Options of {@linkcode histogram}. */
export interface HistogramOptions {
  since: number;
  until: number;
  filter?: Filter;
  /** About how many bars. @default {60} */
  buckets?: number;
}

/** Counts per interval and level over `[since, until)`. */
export interface Histogram {
  intervalMs: number;
  buckets: { start: number; counts: Record<string, number> }[];
}

/**
 * Counts of matching entries per interval by level over `[since, until)`,
 * the interval chosen from 1 s to 1 d so that about `buckets` bars fit.
 *
 * @example
 * ```ts
 * const { intervalMs, buckets } = await histogram(kv, projectId, { since, until });
 * ```
 */
export async function histogram(
  kv: Deno.Kv,
  projectId: string,
  options: HistogramOptions,
): Promise<Histogram> {
  const { since, until } = options;
  const wanted = options.buckets ?? 60;
  const span = Math.max(1, until - since);
  const intervalMs = INTERVALS.find((ms) => span / ms <= wanted) ??
    INTERVALS.at(-1)!;
  const first = Math.floor(since / intervalMs) * intervalMs;
  const buckets: Histogram["buckets"] = [];
  for (let start = first; start < until; start += intervalMs) {
    buckets.push({ start, counts: {} });
  }
  const filter: Filter = { ...options.filter };
  filter.since = Math.max(since, filter.since ?? since);
  filter.until = Math.min(until, filter.until ?? until);
  for await (
    const record of listLogs(kv, projectId, {
      startId: timeBound(filter.since),
      endId: timeBound(filter.until),
    })
  ) {
    if (!matches(record, filter)) continue;
    const bucket =
      buckets[Math.floor((record.receivedAt - first) / intervalMs)];
    if (bucket) {
      bucket.counts[record.level] = (bucket.counts[record.level] ?? 0) + 1;
    }
  }
  return { intervalMs, buckets };
}

/** Options of {@linkcode tailLogs}. */
export interface TailOptions {
  /** Only entries after this id; `null` from the first stored entry. */
  afterId: string | null;
  filter?: Filter;
  /** @default {200} */
  limit?: number;
  /** Clock reading. @default {Date.now()} */
  now?: number;
  /** Entries younger than this are left for the next call. @default {1000} */
  settleMs?: number;
}

/**
 * Entries with an id after `afterId`, oldest first, for live tail. Only
 * entries received at least `settleMs` ago are returned: an entry is stored a
 * little after it is received, possibly by another process, so a younger one
 * could still be joined by one with a smaller id, which a caller moving its
 * `afterId` forward would then miss.
 *
 * @example
 * ```ts
 * const { records, lastId } = await tailLogs(kv, projectId, { afterId });
 * ```
 */
export async function tailLogs(
  kv: Deno.Kv,
  projectId: string,
  options: TailOptions,
): Promise<{ records: LogRecord[]; lastId: string | null }> {
  const now = options.now ?? Date.now();
  const settled = now - (options.settleMs ?? 1000);
  const limit = options.limit ?? 200;
  const afterId = options.afterId;
  const records: LogRecord[] = [];
  let lastId = afterId;
  for await (
    const record of listLogs(kv, projectId, {
      ...(afterId === null ? {} : { startId: `${afterId}\0` }),
      endId: timeBound(settled + 1),
    })
  ) {
    if (idTime(record.id) > settled) break;
    lastId = record.id;
    if (options.filter === undefined || matches(record, options.filter)) {
      records.push(record);
      if (records.length >= limit) break;
    }
  }
  return { records, lastId };
}

/**
 * The query functions the operator commands and the dashboard call:
 * filtered pages of entries with a cursor, one entry, an entry in its
 * context, and a live tail. Each read stays exact while merges move entries
 * (db/query/scan.ts says how).
 *
 * @module
 */
import type { LogRecord } from "../../domain/entry.ts";
import { idJustBefore, idTime, isIdForm, timeBound } from "../../domain/ids.ts";
import { compileFilter, type Filter, InvalidQueryError } from "./filter.ts";
import {
  MAX_ID,
  type Order,
  scan,
  type ScanBudget,
  type ScanStats,
} from "./scan.ts";

/** Default number of records of a page. */
export const DEFAULT_QUERY_LIMIT = 100;
/** Most records of one page. */
export const MAX_QUERY_LIMIT = 1000;
/**
 * Time one page of a query may spend reading before it answers with what it
 * found and a cursor to go on (docs/limits.md).
 */
export const QUERY_BUDGET_MS = 2000;

/** Options of {@linkcode queryLogs}. */
export interface QueryOptions {
  /** @default {{}} (every entry) */
  filter?: Filter;
  /** @default {"newest"} */
  order?: Order;
  /** Records per page, 1 to {@linkcode MAX_QUERY_LIMIT}. @default {100} */
  limit?: number;
  /** From a previous page: continue after its last record. */
  cursor?: string;
  /** Work the page may do. @default {{ ms: QUERY_BUDGET_MS }} */
  budget?: ScanBudget;
}

/** One page of a query. */
export interface QueryPage {
  records: LogRecord[];
  /** Pass it back for the next page; `null` when nothing more matches. */
  cursor: string | null;
  stats: ScanStats;
  /**
   * Set when the page ran out of its budget before it was full: entries
   * were searched up to this receipt time (Unix ms, back to it newest
   * first, from it oldest first); the cursor goes on from there.
   */
  searchedTo?: number;
}

/**
 * A cursor: `n`/`o` and the id of the last record handed out (continue
 * after it), or `N`/`O` and the id where a page that ran out of budget
 * stopped (continue from it, included).
 */
function readCursor(
  cursor: string,
  order: Order,
): { id: string; included: boolean } {
  const match = /^([noNO])([0-9a-f]{1,28})$/.exec(cursor);
  const included = match !== null && match[1] === match[1]!.toUpperCase();
  // A record's id is whole; where a page stopped may be a time's prefix.
  if (
    !match || match[1]!.toLowerCase() !== order[0] ||
    (!included && match[2]!.length !== 28)
  ) {
    throw new InvalidQueryError(
      `Cannot read cursor "${cursor}": expected a cursor of a previous page with order "${order}"`,
    );
  }
  return { id: match[2]!, included };
}

/** Narrows [lo, hi) to what follows `cursor` in scan order. */
function afterCursor(
  range: { lo: string; hi: string },
  cursor: string,
  order: Order,
): { lo: string; hi: string } {
  let { lo, hi } = range;
  const { id, included } = readCursor(cursor, order);
  if (order === "newest") {
    const end = included ? id + "\0" : id;
    if (end < hi) hi = end;
  } else {
    const start = included ? id : id + "\0";
    if (start > lo) lo = start;
  }
  return { lo, hi };
}

/** Records of a page: `limit` made a whole number from 1 to the most. */
export function pageLimit(limit = DEFAULT_QUERY_LIMIT): number {
  return Math.min(MAX_QUERY_LIMIT, Math.max(1, Math.floor(limit)));
}

/** The id range of a filter's time range. */
function timeRange(filter: Filter): { lo: string; hi: string } {
  return {
    lo: filter.since === undefined ? "" : timeBound(filter.since),
    hi: filter.until === undefined ? MAX_ID : timeBound(filter.until),
  };
}

/**
 * One page of a project's entries matching `filter`, newest (or oldest)
 * first. A cursor names the last record handed out, so following pages
 * stay exact while new entries arrive.
 *
 * @example
 * ```ts
 * const page = await queryLogs(kv, projectId, { filter: parseQuery("level:error") });
 * const next = page.cursor && await queryLogs(kv, projectId, { filter, cursor: page.cursor });
 * ```
 */
export async function queryLogs(
  kv: Deno.Kv,
  projectId: string,
  options: QueryOptions = {},
): Promise<QueryPage> {
  const filter = options.filter ?? {};
  const order = options.order ?? "newest";
  const limit = pageLimit(options.limit);
  const compiled = compileFilter(filter);
  const range = options.cursor === undefined
    ? timeRange(filter)
    : afterCursor(timeRange(filter), options.cursor, order);
  const { lo, hi } = range;
  const result = await scan(kv, projectId, {
    order,
    lo,
    hi,
    filter: compiled,
    limit,
    budget: options.budget ?? { ms: QUERY_BUDGET_MS },
  });
  const last = result.records.at(-1);
  const page: QueryPage = {
    records: result.records,
    cursor: result.more && last ? order[0] + last.id : null,
    stats: result.stats,
  };
  if (result.resume !== undefined) {
    // Out of budget: go on from where it stopped, not after the last match.
    // A chunk that straddles the range's end (chunks of two writers
    // overlap) is named by an id outside it: then nothing in the range was
    // handed out, and the next page starts where this one did, never before
    // the previous cursor.
    let resume = result.resume.slice(0, 28);
    const outside = order === "newest" ? resume + "\0" > hi : resume < lo;
    if (outside) resume = order === "newest" ? hi : lo;
    page.cursor = outside && options.cursor !== undefined
      ? options.cursor
      : order[0]!.toUpperCase() + resume;
    page.searchedTo = idTime(resume.padEnd(12, "0"));
  }
  return page;
}

/**
 * One stored entry by id, or `null`.
 *
 * @example
 * ```ts
 * await getEntry(kv, projectId, "019b76daa80000000001a1b2c3d4");
 * ```
 */
export async function getEntry(
  kv: Deno.Kv,
  projectId: string,
  id: string,
): Promise<LogRecord | null> {
  if (!isIdForm(id)) return null;
  const filter = compileFilter({
    fields: [{ path: "id", op: "eq", value: id }],
  });
  const { records } = await scan(kv, projectId, {
    order: "oldest",
    filter,
    limit: 1,
  });
  return records[0] ?? null;
}

/**
 * "Show in context": up to `n` entries before and after `id` (unfiltered),
 * in time order. The neighbours are found even when the entry itself is
 * gone.
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
  const limit = Math.min(MAX_QUERY_LIMIT, Math.max(0, Math.floor(n)));
  if (!isIdForm(id)) {
    throw new InvalidQueryError(
      `Cannot show entry "${id}" in context: expected an id of 28 hexadecimal digits`,
    );
  }
  const all = compileFilter({});
  const [entry, before, after] = await Promise.all([
    getEntry(kv, projectId, id),
    limit === 0 ? null : scan(kv, projectId, {
      order: "newest",
      hi: id,
      filter: all,
      limit,
    }),
    limit === 0 ? null : scan(kv, projectId, {
      order: "oldest",
      lo: id + "\0",
      filter: all,
      limit,
    }),
  ]);
  return {
    before: (before?.records ?? []).reverse(),
    entry,
    after: after?.records ?? [],
  };
}

/** Options of {@linkcode tailLogs}. */
export interface TailOptions {
  /** Return entries after this id (a `lastId` of the previous call). */
  afterId: string | null;
  filter?: Filter;
  /** @default {100} */
  limit?: number;
  /** Clock reading, Unix ms. @default {Date.now()} */
  now?: number;
  /**
   * Entries received less than this long ago wait for the next call, so
   * that entries other processes are still committing are not skipped.
   * @default {1000}
   */
  settleMs?: number;
  /**
   * Work one call may do: past it, it returns what it found with a
   * `lastId` where the next call goes on. @default {QUERY_BUDGET_MS}
   */
  budget?: ScanBudget;
}

/**
 * Entries with an id after `afterId`, oldest first, for a live tail. The
 * returned `lastId` goes into the next call; it may be past the last record
 * returned (entries examined that did not match, or the settled horizon).
 *
 * @example
 * ```ts
 * let afterId = null;
 * const { records, lastId } = await tailLogs(kv, projectId, { afterId });
 * afterId = lastId;
 * ```
 */
export async function tailLogs(
  kv: Deno.Kv,
  projectId: string,
  options: TailOptions,
): Promise<{ records: LogRecord[]; lastId: string | null }> {
  const { afterId } = options;
  const filter = options.filter ?? {};
  const limit = pageLimit(options.limit);
  const horizon = (options.now ?? Date.now()) - (options.settleMs ?? 1000);
  const range = timeRange(filter);
  const hi = range.hi < timeBound(horizon) ? range.hi : timeBound(horizon);
  const lo = afterId === null || afterId + "\0" < range.lo
    ? range.lo
    : afterId + "\0";
  if (lo >= hi) return { records: [], lastId: afterId };
  const result = await scan(kv, projectId, {
    order: "oldest",
    lo,
    hi,
    filter: compileFilter(filter),
    limit,
    budget: options.budget ?? { ms: QUERY_BUDGET_MS },
  });
  if (result.resume !== undefined) {
    // Out of budget: the next call goes on from where this one stopped.
    const before = idJustBefore(result.resume);
    return {
      records: result.records,
      lastId: before === null || (afterId !== null && afterId > before)
        ? afterId
        : before,
    };
  }
  if (result.more) {
    return { records: result.records, lastId: result.records.at(-1)!.id };
  }
  // Everything before `hi` was examined: the next call starts there.
  const position = timeBound(idTime(hi) - 1) + "f".repeat(16);
  return {
    records: result.records,
    lastId: afterId !== null && afterId > position ? afterId : position,
  };
}

/** Options of {@linkcode listLogs}. */
export interface ListLogsOptions {
  /** Newest first. @default {false} */
  reverse?: boolean;
  /** Only entries with an id at or after this one. */
  startId?: string;
  /** Only entries with an id before this one. */
  endId?: string;
  /** Entries to yield at most. */
  limit?: number;
  filter?: Filter;
}

/**
 * Every entry of a project in time order (oldest first, or newest first
 * with `reverse`), read page by page.
 *
 * @example
 * ```ts
 * for await (const log of listLogs(kv, projectId, { reverse: true, limit: 50 })) {}
 * ```
 */
export async function* listLogs(
  kv: Deno.Kv,
  projectId: string,
  options: ListLogsOptions = {},
): AsyncGenerator<LogRecord> {
  let left = options.limit ?? Infinity;
  const order: Order = options.reverse ? "newest" : "oldest";
  const filter = compileFilter(options.filter ?? {});
  let lo = options.startId ?? "";
  let hi = options.endId ?? MAX_ID;
  while (left > 0) {
    const limit = Math.min(MAX_QUERY_LIMIT, left);
    const page = await scan(kv, projectId, { order, lo, hi, filter, limit });
    for (const record of page.records) yield record;
    left -= page.records.length;
    const last = page.records.at(-1);
    if (!page.more || !last) return;
    if (order === "newest") hi = last.id;
    else lo = last.id + "\0";
  }
}

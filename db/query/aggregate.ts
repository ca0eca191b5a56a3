/**
 * Aggregations: the answer of a query that ends with a pipe (`| count`,
 * `| count by (…)`, `| top N F`, `| uniq F`; db/query/pipe.ts) as rows, for
 * the CLI, the read API and the explorer alike. Read-only: counted from the
 * level counters, else from chunk columns where they answer
 * (db/query/columnar.ts), else by streaming the matching entries of one scan
 * (newest first, exact while merges move entries, db/query/scan.ts) into
 * counters; it never holds the entries.
 *
 * Bounds (docs/limits.md): at most {@linkcode MAX_GROUPS} groups are
 * counted (past that the query is refused: narrow it), at most
 * {@linkcode MAX_ROWS} rows are answered (the largest), `uniq` is exact up
 * to {@linkcode MAX_EXACT_UNIQ} distinct values and a HyperLogLog estimate
 * past that (`estimate: true`). Like a page of entries, an aggregation has
 * {@linkcode QUERY_BUDGET_MS} of reading: when it runs out it answers what it
 * counted, with `searchedTo`, the receipt time it searched back to.
 *
 * @module
 */
import type { LogRecord } from "../../domain/entry.ts";
import { boundTime, timeBound } from "../../domain/ids.ts";
import { COUNT_BUCKET_MS, readLogCounts } from "../log_counts.ts";
import { compileFilter, type Filter } from "./filter.ts";
import { countedByCounters, countersFrom } from "./histogram.ts";
import type { GroupBy, Pipe } from "./pipe.ts";
import { QUERY_BUDGET_MS } from "./query.ts";
import { MAX_ID, scan, type ScanStats } from "./scan.ts";
import { type Cell, Tally } from "./tally.ts";
import { resolvePath } from "../storage/text.ts";
import { collect, columnsMayAnswer, countCollected } from "./columnar.ts";

/** Most groups one `count by` or `top` counts before it is refused. */
export const MAX_GROUPS = 100_000;
/** Most rows one aggregation answers (the largest groups). */
export const MAX_ROWS = 10_000;
/** Distinct values `uniq` counts exactly; past that it estimates. */
export const MAX_EXACT_UNIQ = 100_000;
/** The end of an open range: the largest time a `Date` holds (Unix ms). */
const END_OF_TIME = 8.64e15;

export type { Cell };

/** The answer of an aggregation. */
export interface Aggregation {
  /** The columns of each row, in order (`count` last, then `share`). */
  columns: string[];
  /** Largest first; at most {@linkcode MAX_ROWS}. */
  rows: Record<string, Cell>[];
  /** Groups counted (rows past {@linkcode MAX_ROWS} are not answered). */
  groups: number;
  /** Matching entries counted. */
  total: number;
  /** Set when `count by` counted more groups than {@linkcode MAX_ROWS}. */
  more?: true;
  /** Set when `uniq` went past its exact bound. */
  estimate?: true;
  /**
   * Set when the budget ran out first: every entry received at or after
   * this time (Unix ms) was counted, none received before its previous
   * millisecond.
   */
  searchedTo?: number;
  stats: ScanStats;
}

/** Options of {@linkcode aggregate}. */
export interface AggregateOptions {
  /** @default {{}} (every entry) */
  filter?: Filter;
  pipe: Pipe;
  /** Time it may spend reading. @default {{ ms: QUERY_BUDGET_MS }} */
  budget?: { ms?: number; clock?: () => number };
  /** Groups counted at most. @default {MAX_GROUPS} */
  maxGroups?: number;
  /** Distinct values `uniq` counts exactly. @default {MAX_EXACT_UNIQ} */
  exactUniq?: number;
  /**
   * The time retention is judged by (Unix ms): counters answer only the
   * minutes no retention may have thinned yet (`countersFrom` in
   * db/query/histogram.ts). @default {Date.now()}
   */
  now?: number;
}

/** A field's value as a cell: objects and arrays as their JSON. */
function cellOf(value: unknown): Cell {
  if (value === undefined || value === null) return null;
  if (typeof value === "object") return JSON.stringify(value);
  return value as string | number | boolean;
}

/** The cell of one grouping for a record. */
function groupCell(record: LogRecord, by: GroupBy): Cell {
  if (by.kind === "time") {
    const start = Math.floor(record.receivedAt / by.ms) * by.ms;
    return new Date(start).toISOString();
  }
  return cellOf(resolvePath(record, by.path));
}

/** Adds what one read read to `stats`. */
function addStats(stats: ScanStats, read: ScanStats) {
  stats.chunksRead += read.chunksRead;
  stats.chunksSkipped += read.chunksSkipped;
  stats.entriesScanned += read.entriesScanned;
}

/** The header of a grouping: the field's path, or `time`. */
function columnOf(by: GroupBy): string {
  return by.kind === "time" ? "time" : by.path;
}

/**
 * Whether the minute and hour counters of levels (db/log_counts.ts) answer
 * exactly: the filter is about time and levels only, and the groupings are
 * `level` and time buckets (all of them whole minutes).
 */
function countersAnswer(filter: Filter, by: GroupBy[]): boolean {
  return countedByCounters(filter) &&
    by.every((b) => b.kind === "time" || b.path === "level");
}

/**
 * Runs an aggregation over a project's matching entries. A filter on time
 * and levels grouped by time and level is counted from the counters of
 * levels per hour and per minute (the entries of the partial minutes at
 * the ends are read), for the minutes no retention may have thinned
 * ({@linkcode countersFrom}; older ones from the columns); one the chunk
 * columns can answer is counted from them (db/query/columnar.ts); anything
 * else reads the matching entries.
 *
 * @example
 * ```ts
 * const { filter, pipe } = parseSearch("level>=error | count by (time 1h, context.service)");
 * const { rows } = await aggregate(kv, projectId, { filter, pipe: pipe! });
 * ```
 */
export async function aggregate(
  kv: Deno.Kv,
  projectId: string,
  options: AggregateOptions,
): Promise<Aggregation> {
  const { pipe } = options;
  const filter = options.filter ?? {};
  const by: GroupBy[] = pipe.op === "count"
    ? pipe.by
    : [{ kind: "field", path: pipe.field }];
  const bounds = {
    groups: options.maxGroups ?? MAX_GROUPS,
    exactUniq: options.exactUniq ?? MAX_EXACT_UNIQ,
  };
  let tally = new Tally(pipe.op === "uniq", bounds);
  const compiled = compileFilter(filter);
  const budget = options.budget ?? {};
  const stats: ScanStats = {
    chunksRead: 0,
    chunksSkipped: 0,
    entriesScanned: 0,
  };
  /**
   * Counts the matching entries of [lo, hi) into `tally`, afresh when
   * `fresh`, within `ms` of reading; where it stopped for want of time.
   */
  const read = async (lo: string, hi: string, fresh: boolean, ms: number) => {
    let found: Cell[][] = [];
    const result = await scan(kv, projectId, {
      order: "newest",
      lo,
      hi,
      filter: compiled,
      limit: Infinity,
      // Every attempt counts afresh (scan.ts may read again).
      visit: () => {
        if (fresh) {
          tally = new Tally(pipe.op === "uniq", bounds);
          const into = tally;
          return (record) => into.add(by.map((b) => groupCell(record, b)));
        }
        found = [];
        return (record) => found.push(by.map((b) => groupCell(record, b)));
      },
      budget: { ms, ...(budget.clock ? { clock: budget.clock } : {}) },
    });
    for (const cells of found) tally.add(cells);
    addStats(stats, result.stats);
    return result.resume;
  };
  const lo = filter.since === undefined ? "" : timeBound(filter.since);
  const hi = filter.until === undefined ? MAX_ID : timeBound(filter.until);
  const counted = countersAnswer(filter, by)
    ? await countersFrom(kv, projectId, filter, options.now ?? Date.now())
    : Infinity;
  let resume: string | undefined;
  if (counted < (filter.until ?? END_OF_TIME)) {
    resume = await countWithCounters(kv, projectId, {
      filter,
      from: counted,
      compiled,
      by,
      budget,
      tally,
      stats,
      read: (from, to, ms) => read(timeBound(from), timeBound(to), false, ms),
    });
  } else if (columnsMayAnswer(filter, by)) {
    resume = await countFromColumns(kv, projectId, {
      compiled,
      by,
      budget,
      tally,
      stats,
    });
  } else {
    resume = await read(lo, hi, true, budget.ms ?? QUERY_BUDGET_MS);
  }
  return answerOf(pipe, by, tally, { stats, resume });
}

/**
 * Counts from the counters from `from` on, and before it from the columns,
 * into `tally`, under one deadline; where it stopped, as a resume id.
 */
async function countWithCounters(
  kv: Deno.Kv,
  projectId: string,
  counting: {
    filter: Filter;
    from: number;
    compiled: ReturnType<typeof compileFilter>;
    by: GroupBy[];
    budget: NonNullable<AggregateOptions["budget"]>;
    tally: Tally;
    stats: ScanStats;
    /** Counts the entries received in [from, to) within `ms`. */
    read: (from: number, to: number, ms: number) => Promise<string | undefined>;
  },
): Promise<string | undefined> {
  const { filter, by, budget, tally } = counting;
  const clock = budget.clock ?? (() => performance.now());
  const deadline = clock() + (budget.ms ?? QUERY_BUDGET_MS);
  const left = () => Math.max(0, deadline - clock());
  return await countFromCounters(kv, projectId, {
    filter,
    from: counting.from,
    by,
    levelOk: counting.compiled.levelOk,
    add: (cells, n) => tally.add(cells, n),
    read: (from, to) => counting.read(from, to, left()),
    older: (to) =>
      countFromColumns(kv, projectId, {
        compiled: compileFilter({ ...filter, until: to }),
        by,
        budget: { ms: left(), ...(budget.clock ? { clock } : {}) },
        tally,
        stats: counting.stats,
      }),
  });
}

/**
 * Counts from chunk columns (db/query/columnar.ts) into `tally`; where the
 * budget made it stop, as a resume id.
 */
async function countFromColumns(
  kv: Deno.Kv,
  projectId: string,
  counting: {
    compiled: ReturnType<typeof compileFilter>;
    by: GroupBy[];
    budget: NonNullable<AggregateOptions["budget"]>;
    tally: Tally;
    stats: ScanStats;
  },
): Promise<string | undefined> {
  const { by, budget, tally, stats } = counting;
  const collected = await collect(kv, projectId, {
    filter: counting.compiled,
    paths: by.flatMap((b) => b.kind === "field" ? [b.path] : []),
    budget: {
      ms: budget.ms ?? QUERY_BUDGET_MS,
      ...(budget.clock ? { clock: budget.clock } : {}),
    },
  });
  countCollected(collected, by, (cells, n) => tally.add(cells, n));
  addStats(stats, collected.stats);
  const { searchedTo } = collected;
  return searchedTo === undefined ? undefined : timeBound(searchedTo - 1);
}

/** What {@linkcode countFromCounters} needs. */
interface CounterRead {
  filter: Filter;
  /** Counters answer from this time on (Unix ms, a whole minute). */
  from: number;
  by: GroupBy[];
  levelOk: ((level: string) => boolean) | null;
  add: (cells: Cell[], n: number) => void;
  /**
   * Counts the entries received in [from, to) from the entries, within
   * what is left of the budget; where it stopped, as a resume id.
   */
  read: (from: number, to: number) => Promise<string | undefined>;
  /**
   * Counts the matching entries received before `to` from the columns,
   * within what is left of the budget; where it stopped, as a resume id.
   */
  older: (to: number) => Promise<string | undefined>;
}

/**
 * Counts from the counters of levels: whole hours from the hour counters
 * when every time bucket is whole hours, the other whole minutes from the
 * minute counters, the partial minutes at the ends from the entries, and
 * what lies before `from` from the columns. Reads newest first under one
 * budget: where one stopped, nothing older is counted, and its resume id
 * is answered.
 */
async function countFromCounters(
  kv: Deno.Kv,
  projectId: string,
  counting: CounterRead,
): Promise<string | undefined> {
  const { filter, by, levelOk, add } = counting;
  const minute = COUNT_BUCKET_MS.m;
  const hour = COUNT_BUCKET_MS.h;
  const since = Math.max(filter.since ?? 0, counting.from);
  const until = filter.until ?? END_OF_TIME;
  const m1 = Math.min(until, Math.ceil(since / minute) * minute);
  const m2 = Math.max(m1, Math.floor(until / minute) * minute);
  const hourly = by.every((b) => b.kind !== "time" || b.ms % hour === 0);
  const h1 = Math.min(m2, Math.ceil(m1 / hour) * hour);
  const h2 = hourly ? Math.max(h1, Math.floor(m2 / hour) * hour) : h1;
  if (m2 < until) {
    const resume = await counting.read(m2, until);
    if (resume !== undefined) return resume;
  }
  const counters = [
    ...await readLogCounts(kv, projectId, "m", m1, h1),
    ...await readLogCounts(kv, projectId, "h", h1, h2),
    ...await readLogCounts(kv, projectId, "m", h2, m2),
  ];
  for (const { start, level, count } of counters) {
    if (levelOk && !levelOk(level)) continue;
    add(
      by.map((b) =>
        b.kind === "time"
          ? new Date(Math.floor(start / b.ms) * b.ms).toISOString()
          : level
      ),
      count,
    );
  }
  if (since < m1) {
    const resume = await counting.read(since, m1);
    if (resume !== undefined) return resume;
  }
  const older = counting.from > (filter.since ?? -Infinity);
  return older ? await counting.older(since) : undefined;
}

/** The rows of what `tally` counted. */
function answerOf(
  pipe: Pipe,
  by: GroupBy[],
  tally: Tally,
  read: { stats: ScanStats; resume: string | undefined },
): Aggregation {
  const { total, groups, distinct } = tally;
  const answer: Aggregation = {
    columns: [],
    rows: [],
    groups: 0,
    total,
    stats: read.stats,
  };
  if (read.resume !== undefined) {
    // Entries after the resume id were counted: from the next millisecond
    // on, all of them (of its own millisecond, those with a larger id).
    answer.searchedTo = boundTime(read.resume) + 1;
  }
  if (distinct) {
    answer.columns = ["count"];
    answer.rows = [{ count: distinct.count }];
    answer.groups = 1;
    if (distinct.estimated) {
      answer.columns.push("estimate");
      answer.estimate = true;
      answer.rows[0]!.estimate = true;
    }
  } else if (by.length === 0) {
    answer.columns = ["count"];
    answer.rows = [{ count: total }];
    answer.groups = 1;
  } else {
    const names = by.map(columnOf);
    const top = pipe.op === "top";
    answer.columns = [...names, "count", ...(top ? ["share"] : [])];
    answer.groups = groups.map.size;
    answer.rows = groups.largest(top ? pipe.n : MAX_ROWS).map((group) => {
      const row: Record<string, Cell> = {};
      names.forEach((name, i) => row[name] = group.cells[i]!);
      row.count = group.count;
      if (top) row.share = Math.round(group.count / total * 1e6) / 1e6;
      return row;
    });
    if (!top && answer.groups > MAX_ROWS) answer.more = true;
  }
  return answer;
}

/**
 * Aggregations: the answer of a query that ends with a pipe (`| count`,
 * `| count by (…)`, `| top N F`, `| uniq F`; db/query/pipe.ts) as rows, for
 * the CLI, the read API and the explorer alike. Read-only: it streams the
 * matching entries of one scan (newest first, exact while merges move
 * entries, db/query/scan.ts) into counters and never holds the entries.
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
import { idTime, timeBound } from "../../domain/ids.ts";
import { compileFilter, type Filter, InvalidQueryError } from "./filter.ts";
import type { GroupBy, Pipe } from "./pipe.ts";
import { QUERY_BUDGET_MS } from "./query.ts";
import { MAX_ID, scan, type ScanStats } from "./scan.ts";
import { resolvePath } from "./text.ts";

/** Most groups one `count by` or `top` counts before it is refused. */
export const MAX_GROUPS = 100_000;
/** Most rows one aggregation answers (the largest groups). */
export const MAX_ROWS = 10_000;
/** Distinct values `uniq` counts exactly; past that it estimates. */
export const MAX_EXACT_UNIQ = 100_000;

/** A value in a row: a field's value (`null` when absent), a time, a count. */
export type Cell = string | number | boolean | null;

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

/** A cell as a map key: its type kept, so 502 and "502" stay apart. */
function keyOf(cell: Cell): string {
  return typeof cell === "string" ? "s" + cell : String(cell);
}

/** Orders cells ascending; `null` last. */
function compareCells(a: Cell, b: Cell): number {
  if (a === b) return 0;
  if (a === null) return 1;
  if (b === null) return -1;
  if (typeof a === "number" && typeof b === "number") return a - b;
  return String(a) < String(b) ? -1 : 1;
}

/** Counts per group, refused past {@linkcode MAX_GROUPS}. */
class Groups {
  readonly max: number;
  constructor(max: number) {
    this.max = max;
  }
  readonly map = new Map<string, { cells: Cell[]; count: number }>();
  add(cells: Cell[]): void {
    const key = cells.length === 1
      ? keyOf(cells[0]!)
      : cells.map(keyOf).join("\u0000");
    const group = this.map.get(key);
    if (group) {
      group.count++;
      return;
    }
    if (this.map.size >= this.max) {
      throw new InvalidQueryError(
        `Cannot count more than ${this.max} groups: narrow the query or the time range, or group by fewer fields`,
      );
    }
    this.map.set(key, { cells, count: 1 });
  }
  /** The largest `n` groups, ties in ascending order of their cells. */
  largest(n: number): { cells: Cell[]; count: number }[] {
    return [...this.map.values()].sort((a, b) => {
      if (a.count !== b.count) return b.count - a.count;
      for (let i = 0; i < a.cells.length; i++) {
        const c = compareCells(a.cells[i]!, b.cells[i]!);
        if (c !== 0) return c;
      }
      return 0;
    }).slice(0, n);
  }
}

/** 32-bit FNV-1a of a string, then murmur3's finalizer for its high bits. */
function hash32(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/** HyperLogLog with 2^14 registers: about 0.8 % standard error, 16 KB. */
class HyperLogLog {
  static readonly P = 14;
  readonly registers = new Uint8Array(1 << HyperLogLog.P);
  add(text: string): void {
    const h = hash32(text);
    const index = h >>> (32 - HyperLogLog.P);
    const rest = (h << HyperLogLog.P) >>> 0;
    const rank = rest === 0 ? 32 - HyperLogLog.P + 1 : Math.clz32(rest) + 1;
    if (rank > this.registers[index]!) this.registers[index] = rank;
  }
  estimate(): number {
    const m = this.registers.length;
    let sum = 0;
    let zeros = 0;
    for (const r of this.registers) {
      sum += 2 ** -r;
      if (r === 0) zeros++;
    }
    const raw = (0.7213 / (1 + 1.079 / m)) * m * m / sum;
    // Linear counting is closer while registers are still empty.
    return Math.round(
      raw <= 2.5 * m && zeros > 0 ? m * Math.log(m / zeros) : raw,
    );
  }
}

/** Distinct values: exact up to {@linkcode MAX_EXACT_UNIQ}, then estimated. */
class Distinct {
  readonly max: number;
  constructor(max: number) {
    this.max = max;
  }
  #exact: Set<string> | null = new Set();
  #sketch: HyperLogLog | null = null;
  add(key: string): void {
    if (this.#exact) {
      this.#exact.add(key);
      if (this.#exact.size <= this.max) return;
      this.#sketch = new HyperLogLog();
      for (const k of this.#exact) this.#sketch.add(k);
      this.#exact = null;
      return;
    }
    this.#sketch!.add(key);
  }
  get estimated(): boolean {
    return this.#exact === null;
  }
  get count(): number {
    return this.#exact ? this.#exact.size : this.#sketch!.estimate();
  }
}

/** The header of a grouping: the field's path, or `time`. */
function columnOf(by: GroupBy): string {
  return by.kind === "time" ? "time" : by.path;
}

/**
 * Runs an aggregation over a project's matching entries.
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
  let total = 0;
  const maxGroups = options.maxGroups ?? MAX_GROUPS;
  const exactUniq = options.exactUniq ?? MAX_EXACT_UNIQ;
  let groups = new Groups(maxGroups);
  let distinct = new Distinct(exactUniq);
  const count = pipe.op === "count" && by.length === 0;
  const visit = () => {
    total = 0;
    groups = new Groups(maxGroups);
    distinct = new Distinct(exactUniq);
    if (count) return () => total++;
    if (pipe.op === "uniq") {
      return (record: LogRecord) => {
        total++;
        distinct.add(keyOf(groupCell(record, by[0]!)));
      };
    }
    return (record: LogRecord) => {
      total++;
      groups.add(by.map((b) => groupCell(record, b)));
    };
  };
  const budget = options.budget ?? {};
  const result = await scan(kv, projectId, {
    order: "newest",
    lo: filter.since === undefined ? "" : timeBound(filter.since),
    hi: filter.until === undefined ? MAX_ID : timeBound(filter.until),
    filter: compileFilter(filter),
    limit: 0,
    visit,
    budget: {
      ms: budget.ms ?? QUERY_BUDGET_MS,
      ...(budget.clock ? { clock: budget.clock } : {}),
    },
  });
  const answer: Aggregation = {
    columns: [],
    rows: [],
    groups: 0,
    total,
    stats: result.stats,
  };
  if (result.resume !== undefined) {
    // Entries after the resume id were counted: from the next millisecond
    // on, all of them (of its own millisecond, those with a larger id).
    answer.searchedTo = idTime(result.resume.slice(0, 12).padEnd(12, "0")) + 1;
  }
  if (count) {
    answer.columns = ["count"];
    answer.rows = [{ count: total }];
    answer.groups = 1;
  } else if (pipe.op === "uniq") {
    answer.columns = ["count"];
    answer.rows = [{ count: distinct.count }];
    answer.groups = 1;
    if (distinct.estimated) {
      answer.estimate = true;
      answer.rows[0]!.estimate = true;
    }
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

/**
 * The counters of an aggregation (db/query/aggregate.ts): entries per group
 * of values, bounded, and distinct values, exact up to a bound and then a
 * HyperLogLog estimate.
 *
 * @module
 */
import { InvalidQueryError } from "./filter.ts";

/** A value in a row: a field's value (`null` when absent), a time, a count. */
export type Cell = string | number | boolean | null;

/** A cell as a map key: its type kept, so 502 and "502" stay apart. */
export function keyOf(cell: Cell): string {
  return typeof cell === "string" ? "s" + cell : String(cell);
}

/** Orders cells ascending; `null` last. */
export function compareCells(a: Cell, b: Cell): number {
  if (a === b) return 0;
  if (a === null) return 1;
  if (b === null) return -1;
  if (typeof a === "number" && typeof b === "number") return a - b;
  return String(a) < String(b) ? -1 : 1;
}

/**
 * Characters of a text cell a group is kept by at most: longer values are
 * grouped, and answered, by their start, so that an aggregation's memory and
 * answer are bounded by its groups, not by what senders sent.
 */
export const MAX_CELL_CHARS = 1000;

/** `cell`, a text cut to {@linkcode MAX_CELL_CHARS} with "…". */
function boundedCell(cell: Cell): Cell {
  return typeof cell === "string" && cell.length > MAX_CELL_CHARS
    ? cell.slice(0, MAX_CELL_CHARS) + "…"
    : cell;
}

/** Counts per group, refused past {@linkcode MAX_GROUPS}. */
export class Groups {
  readonly max: number;
  constructor(max: number) {
    this.max = max;
  }
  /** Keyed by the cell itself when there is one (a Map tells 502 from "502"). */
  readonly map = new Map<Cell, { cells: Cell[]; count: number }>();
  add(given: Cell[], n = 1): void {
    const cells = given.map(boundedCell);
    // Each cell's key after its length: a text holding the separator
    // cannot make two groups one.
    const key = cells.length === 1 ? cells[0]! : cells.map((cell) => {
      const k = keyOf(cell);
      return `${k.length}:${k}`;
    }).join("");
    const group = this.map.get(key);
    if (group) {
      group.count += n;
      return;
    }
    if (this.map.size >= this.max) {
      throw new InvalidQueryError(
        `Cannot count more than ${this.max} groups: narrow the query or the time range, or group by fewer fields`,
      );
    }
    this.map.set(key, { cells, count: n });
  }
  /**
   * The largest `n` groups, ties in ascending order of their cells: the
   * `n` best kept in order as the groups go by (`top 10` of 10,000 users
   * sorts 10, not 10,000), or all sorted when `n` is most of them.
   */
  largest(n: number): { cells: Cell[]; count: number }[] {
    const all = [...this.map.values()];
    if (n * 4 >= all.length) return all.sort(compareGroups).slice(0, n);
    const best: { cells: Cell[]; count: number }[] = [];
    for (const group of all) {
      if (best.length === n && compareGroups(group, best[n - 1]!) >= 0) {
        continue;
      }
      let at = best.length === n ? n - 1 : best.length;
      while (at > 0 && compareGroups(group, best[at - 1]!) < 0) at--;
      best.splice(at, 0, group);
      if (best.length > n) best.pop();
    }
    return best;
  }
}

/** Larger count first, then the cells in ascending order. */
function compareGroups(
  a: { cells: Cell[]; count: number },
  b: { cells: Cell[]; count: number },
): number {
  if (a.count !== b.count) return b.count - a.count;
  for (let i = 0; i < a.cells.length; i++) {
    const c = compareCells(a.cells[i]!, b.cells[i]!);
    if (c !== 0) return c;
  }
  return 0;
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

/** A 53-bit digest of `text` (cyrb53): two texts share one about never. */
function digest(text: string): number {
  let h1 = 0xdeadbeef;
  let h2 = 0x41c6ce57;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    h1 = Math.imul(h1 ^ c, 2654435761);
    h2 = Math.imul(h2 ^ c, 1597334677);
  }
  h1 = Math.imul(h1 ^ (h1 >>> 16), 2246822507) ^
    Math.imul(h2 ^ (h2 >>> 13), 3266489909);
  h2 = Math.imul(h2 ^ (h2 >>> 16), 2246822507) ^
    Math.imul(h1 ^ (h1 >>> 13), 3266489909);
  return 4294967296 * (2097151 & h2) + (h1 >>> 0);
}

/** Distinct values: exact up to {@linkcode MAX_EXACT_UNIQ}, then estimated. */
export class Distinct {
  readonly max: number;
  constructor(max: number) {
    this.max = max;
  }
  #exact: Set<Cell> | null = new Set();
  #sketch: HyperLogLog | null = null;
  add(given: Cell): void {
    // A long text is kept as its digest: the set's memory is bounded by its
    // values' count, not by what senders sent.
    const cell = typeof given === "string" && given.length > MAX_CELL_CHARS
      ? `\u0000${digest(given)}:${given.length}`
      : given;
    if (this.#exact) {
      this.#exact.add(cell);
      if (this.#exact.size <= this.max) return;
      this.#sketch = new HyperLogLog();
      for (const c of this.#exact) this.#sketch.add(keyOf(c));
      this.#exact = null;
      return;
    }
    this.#sketch!.add(keyOf(cell));
  }
  get estimated(): boolean {
    return this.#exact === null;
  }
  get count(): number {
    return this.#exact ? this.#exact.size : this.#sketch!.estimate();
  }
}

/** What an aggregation counts: matching entries, and groups or distinct values. */
export class Tally {
  total = 0;
  readonly groups: Groups;
  readonly distinct: Distinct | null;
  constructor(uniq: boolean, bounds: { groups: number; exactUniq: number }) {
    this.groups = new Groups(bounds.groups);
    this.distinct = uniq ? new Distinct(bounds.exactUniq) : null;
  }
  /** Counts `n` entries whose groupings have the values `cells`. */
  add(cells: Cell[], n = 1): void {
    this.total += n;
    if (this.distinct) this.distinct.add(cells[0]!);
    else if (cells.length > 0) this.groups.add(cells, n);
  }
}

/**
 * Facets for the explorer: per field, the most frequent values of the
 * matching entries with their counts and shares, largest first, and the
 * total. Read from chunk columns where they answer and from lines elsewhere
 * (db/query/columnar.ts), exactly while merges move entries, within a time
 * budget of its own (`searchedTo` when it ran out, as for a page).
 *
 * Work is bounded: at most {@linkcode MAX_FACET_FIELDS} fields, and per
 * field at most {@linkcode MAX_FACET_DISTINCT} distinct values are counted;
 * a field with more is flagged `tooMany` and answers no values, since its
 * counts would not be an exact top.
 *
 * @module
 */
import {
  andFilters,
  compileFilter,
  type Filter,
  InvalidQueryError,
} from "./filter.ts";
import { collect, countCollected } from "./columnar.ts";
import type { ScanStats } from "./scan.ts";
import { type Cell, compareCells } from "./tally.ts";

/** The fields the explorer shows by default. */
export const FACET_FIELDS: readonly string[] = [
  "level",
  "context.service",
  "context.environment",
  "context.release",
  "device.os",
  "device.browser",
  "origin",
  "appid",
];
/** Fields one call counts at most. */
export const MAX_FACET_FIELDS = 16;
/** Distinct values a facet counts before it gives up and says so. */
export const MAX_FACET_DISTINCT = 1000;
/** Values a facet answers by default, the most frequent first. */
export const FACET_VALUES = 5;
/** Values a facet answers at most. */
export const MAX_FACET_LIMIT = 100;
/** Time the facets of one page may spend reading. */
export const FACETS_BUDGET_MS = 300;

/** One value of a facet. */
export interface FacetValue {
  /** `null` when the field is absent. */
  value: Cell;
  count: number;
  /** Of the entries counted, a fraction. */
  share: number;
}

/** The top values of one field. */
export interface Facet {
  field: string;
  /** The most frequent first (ties in value order); empty when `tooMany`. */
  values: FacetValue[];
  /** Distinct values counted (at most the bound). */
  distinct: number;
  /** More distinct values than the bound: not counted. */
  tooMany: boolean;
}

/** The answer of {@linkcode facets}. */
export interface Facets {
  facets: Facet[];
  /** Matching entries counted. */
  total: number;
  /**
   * Set when the budget ran out first: every entry received at or after
   * this time (Unix ms) was counted.
   */
  searchedTo?: number;
  stats: ScanStats;
}

/** Options of {@linkcode facets}. */
export interface FacetsOptions {
  /** @default {{}} (every entry) */
  filter?: Filter;
  /** Unix ms, inclusive, beside the filter's own range. */
  since?: number;
  /** Unix ms, exclusive, beside the filter's own range. */
  until?: number;
  /** Paths, as in a pipe. @default {FACET_FIELDS} */
  fields?: readonly string[];
  /** Values answered per field. @default {FACET_VALUES} */
  top?: number;
  /** Distinct values counted per field. @default {MAX_FACET_DISTINCT} */
  maxDistinct?: number;
  /** Time it may spend reading. @default {{ ms: FACETS_BUDGET_MS }} */
  budget?: { ms?: number; clock?: () => number };
}

/** Refuses a call past the bounds, naming them. */
function checkBounds(fields: readonly string[], top: number): void {
  if (fields.length === 0 || fields.length > MAX_FACET_FIELDS) {
    throw new InvalidQueryError(
      `Cannot count facets of ${fields.length} fields: expected 1 to ${MAX_FACET_FIELDS}`,
    );
  }
  if (!Number.isInteger(top) || top < 1 || top > MAX_FACET_LIMIT) {
    throw new InvalidQueryError(
      `Cannot answer ${top} values per facet: expected 1 to ${MAX_FACET_LIMIT}`,
    );
  }
}

/**
 * Counts the top values of each of `fields` over a project's entries
 * matching `filter`, in one read.
 *
 * @example
 * ```ts
 * const { facets: [level] } = await facets(kv, projectId, { fields: ["level"] });
 * level.values[0]; // { value: "info", count: 812, share: 0.81 }
 * ```
 */
export async function facets(
  kv: Deno.Kv,
  projectId: string,
  options: FacetsOptions = {},
): Promise<Facets> {
  const fields = [...options.fields ?? FACET_FIELDS];
  const top = options.top ?? FACET_VALUES;
  const maxDistinct = options.maxDistinct ?? MAX_FACET_DISTINCT;
  checkBounds(fields, top);
  const range: Filter = {};
  if (options.since !== undefined) range.since = options.since;
  if (options.until !== undefined) range.until = options.until;
  const collected = await collect(kv, projectId, {
    filter: compileFilter(andFilters(options.filter ?? {}, range)),
    paths: fields,
    budget: {
      ms: options.budget?.ms ?? FACETS_BUDGET_MS,
      ...(options.budget?.clock ? { clock: options.budget.clock } : {}),
    },
  });
  let total = 0;
  const answer: Facets = { total: 0, facets: [], stats: collected.stats };
  fields.forEach((field, f) => {
    const counts = new Map<Cell, number>();
    let tooMany = false;
    let sum = 0;
    countCollected(collected, [{ kind: "field", path: field }], (cells, n) => {
      sum += n;
      const value = cells[0]!;
      const count = counts.get(value);
      if (count !== undefined) counts.set(value, count + n);
      else if (counts.size < maxDistinct) counts.set(value, n);
      else tooMany = true;
    });
    if (f === 0) total = sum;
    answer.facets.push(
      tooMany ? { field, values: [], distinct: maxDistinct, tooMany: true } : {
        field,
        values: topValues(counts, top, sum),
        distinct: counts.size,
        tooMany: false,
      },
    );
  });
  answer.total = total;
  if (collected.searchedTo !== undefined) {
    answer.searchedTo = collected.searchedTo;
  }
  return answer;
}

/** The largest `top` values of one field, with their shares of `total`. */
function topValues(
  counts: Map<Cell, number>,
  top: number,
  total: number,
): FacetValue[] {
  return [...counts].sort((a, b) => b[1] - a[1] || compareCells(a[0], b[0]))
    .slice(0, top).map(([value, count]) => ({
      value,
      count,
      share: total === 0 ? 0 : count / total,
    }));
}

/**
 * Facets for the explorer: per field, the values of the matching entries
 * with their counts and shares, largest first, and the total. Read from
 * chunk columns where they answer and from lines elsewhere
 * (db/query/columnar.ts), exactly while merges move entries, within the
 * query's time budget (`searchedTo` when it ran out, as for a page).
 *
 * Work is bounded: at most {@linkcode MAX_FACET_FIELDS} fields, and per
 * field at most {@linkcode MAX_FACET_VALUES} distinct values are counted;
 * a field with more is flagged `tooMany` (its counts are then of the
 * values first met only, so not an exact top).
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
import { QUERY_BUDGET_MS } from "./query.ts";
import type { ScanStats } from "./scan.ts";
import type { Cell } from "./tally.ts";

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
/** Distinct values counted per field at most. */
export const MAX_FACET_VALUES = 10_000;
/** Values answered per field at most. */
export const MAX_FACET_LIMIT = 100;

/** Options of {@linkcode facets}. */
export interface FacetsOptions {
  /** @default {{}} (every entry) */
  filter?: Filter;
  /** Unix ms, inclusive. */
  since?: number;
  /** Unix ms, exclusive. */
  until?: number;
  /** @default {FACET_FIELDS} */
  fields?: readonly string[];
  /** Values per field. @default {10} */
  limit?: number;
  /** Time it may spend reading. @default {{ ms: QUERY_BUDGET_MS }} */
  budget?: { ms?: number; clock?: () => number };
  /** Distinct values counted per field. @default {MAX_FACET_VALUES} */
  maxValues?: number;
}

/** One field's facet. */
export interface Facet {
  field: string;
  /** Largest first, ties by value; `null`: the field is missing. */
  values: { value: Cell; count: number; share: number }[];
  /** Distinct values counted. */
  distinct: number;
  /** Set when the field had more than {@linkcode MAX_FACET_VALUES} values. */
  tooMany?: true;
}

/** The answer of {@linkcode facets}. */
export interface Facets {
  /** Matching entries counted. */
  total: number;
  fields: Facet[];
  /** As `Aggregation.searchedTo`: set when the budget ran out. */
  searchedTo?: number;
  stats: ScanStats;
}

/**
 * Counts the values of `fields` over a project's matching entries.
 *
 * @example
 * ```ts
 * const { total, fields } = await facets(kv, projectId, { since, until });
 * ```
 */
export async function facets(
  kv: Deno.Kv,
  projectId: string,
  options: FacetsOptions = {},
): Promise<Facets> {
  const fields = [...options.fields ?? FACET_FIELDS];
  const limit = options.limit ?? 10;
  const maxValues = options.maxValues ?? MAX_FACET_VALUES;
  if (fields.length === 0 || fields.length > MAX_FACET_FIELDS) {
    throw new InvalidQueryError(
      `Cannot count facets of ${fields.length} fields: expected 1 to ${MAX_FACET_FIELDS}`,
    );
  }
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_FACET_LIMIT) {
    throw new InvalidQueryError(
      `Cannot answer ${limit} values per facet: expected 1 to ${MAX_FACET_LIMIT}`,
    );
  }
  const range: Filter = {};
  if (options.since !== undefined) range.since = options.since;
  if (options.until !== undefined) range.until = options.until;
  const budget = options.budget ?? {};
  const collected = await collect(kv, projectId, {
    filter: compileFilter(andFilters(options.filter ?? {}, range)),
    paths: fields,
    budget: {
      ms: budget.ms ?? QUERY_BUDGET_MS,
      ...(budget.clock ? { clock: budget.clock } : {}),
    },
  });
  let total = 0;
  const answer: Facets = { total: 0, fields: [], stats: collected.stats };
  fields.forEach((field, f) => {
    const counts = new Map<Cell, number>();
    let tooMany = false;
    let sum = 0;
    countCollected(collected, [{ kind: "field", path: field }], (cells, n) => {
      sum += n;
      const value = cells[0]!;
      const count = counts.get(value);
      if (count !== undefined) counts.set(value, count + n);
      else if (counts.size < maxValues) counts.set(value, n);
      else tooMany = true;
    });
    if (f === 0) total = sum;
    answer.fields.push(facetOf(field, counts, { total: sum, limit, tooMany }));
  });
  answer.total = total;
  if (collected.searchedTo !== undefined) {
    answer.searchedTo = collected.searchedTo;
  }
  return answer;
}

/** The largest `limit` values of one field. */
function facetOf(
  field: string,
  counts: Map<Cell, number>,
  of: { total: number; limit: number; tooMany: boolean },
): Facet {
  const values = [...counts].sort((a, b) =>
    b[1] - a[1] ||
    (a[0] === null
      ? 1
      : b[0] === null
      ? -1
      : String(a[0]) < String(b[0])
      ? -1
      : 1)
  ).slice(0, of.limit).map(([value, count]) => ({
    value,
    count,
    share: of.total === 0 ? 0 : Math.round(count / of.total * 1e6) / 1e6,
  }));
  return {
    field,
    values,
    distinct: counts.size,
    ...(of.tooMany ? { tooMany: true as const } : {}),
  };
}

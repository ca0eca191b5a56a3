/**
 * Facets: the most frequent values of several fields over one query's
 * matches, counted in one read (the explorer's side panel). Read-only, like
 * db/query/aggregate.ts, whose `top N F` it answers for many fields at once:
 * one scan, newest first, within a time budget, so that eight fields cost
 * about what one does.
 *
 * Bounded (docs/limits.md): a field with more than
 * {@linkcode MAX_FACET_DISTINCT} distinct values stops being counted and
 * says so (`tooMany`), so a field of ids costs no more than a field of
 * levels; when the budget runs out, the counts are those of the entries
 * received from `searchedTo` on.
 *
 * @module
 */
import type { LogRecord } from "../../domain/entry.ts";
import { idTime, timeBound } from "../../domain/ids.ts";
import { resolvePath } from "../storage/text.ts";
import { compileFilter, type Filter } from "./filter.ts";
import { MAX_ID, scan } from "./scan.ts";
import type { Cell } from "./tally.ts";

/** Distinct values a facet counts before it gives up and says so. */
export const MAX_FACET_DISTINCT = 1000;
/** Time the facets of one page may spend reading. */
export const FACETS_BUDGET_MS = 300;
/** Values a facet answers, the most frequent first. */
export const FACET_VALUES = 5;

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
  /** Distinct values counted (at most {@linkcode MAX_FACET_DISTINCT}). */
  distinct: number;
  /** More than {@linkcode MAX_FACET_DISTINCT} distinct values: not counted. */
  tooMany: boolean;
}

/** The answer of {@linkcode facets}. */
export interface Facets {
  facets: Facet[];
  /** Entries counted. */
  total: number;
  /**
   * Set when the budget ran out first: every entry received at or after
   * this time (Unix ms) was counted, none received before its previous
   * millisecond.
   */
  searchedTo?: number;
}

/** Options of {@linkcode facets}. */
export interface FacetsOptions {
  /** @default {{}} (every entry) */
  filter?: Filter;
  /** Paths, as in a pipe: `level`, `origin`, `context.service`… */
  fields: readonly string[];
  /** Values answered per field. @default {FACET_VALUES} */
  top?: number;
  /** Distinct values counted per field. @default {MAX_FACET_DISTINCT} */
  maxDistinct?: number;
  /** Time it may spend reading. @default {{ ms: FACETS_BUDGET_MS }} */
  budget?: { ms?: number; clock?: () => number };
}

/** A field's value as a cell: objects and arrays as their JSON. */
function cellOf(value: unknown): Cell {
  if (value === undefined || value === null) return null;
  if (typeof value === "object") return JSON.stringify(value);
  return value as string | number | boolean;
}

/** Orders cells ascending; `null` last. */
function compareCells(a: Cell, b: Cell): number {
  if (a === b) return 0;
  if (a === null) return 1;
  if (b === null) return -1;
  if (typeof a === "number" && typeof b === "number") return a - b;
  return String(a) < String(b) ? -1 : 1;
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
  options: FacetsOptions,
): Promise<Facets> {
  const filter = options.filter ?? {};
  const { fields } = options;
  const maxDistinct = options.maxDistinct ?? MAX_FACET_DISTINCT;
  let counts: (Map<Cell, number> | null)[] = [];
  let total = 0;
  const result = await scan(kv, projectId, {
    order: "newest",
    lo: filter.since === undefined ? "" : timeBound(filter.since),
    hi: filter.until === undefined ? MAX_ID : timeBound(filter.until),
    filter: compileFilter(filter),
    limit: Infinity,
    // Every attempt counts afresh (scan.ts may read again).
    visit: () => {
      counts = fields.map(() => new Map());
      total = 0;
      return (record: LogRecord) => {
        total++;
        for (let i = 0; i < fields.length; i++) {
          const map = counts[i];
          if (!map) continue;
          const cell = cellOf(resolvePath(record, fields[i]!));
          map.set(cell, (map.get(cell) ?? 0) + 1);
          // Past the bound the field is dropped: its counts are no answer.
          if (map.size > maxDistinct) counts[i] = null;
        }
      };
    },
    budget: {
      ms: options.budget?.ms ?? FACETS_BUDGET_MS,
      ...(options.budget?.clock ? { clock: options.budget.clock } : {}),
    },
  });
  const top = options.top ?? FACET_VALUES;
  const answer: Facets = {
    total,
    facets: fields.map((field, i) => {
      const map = counts[i] ?? null;
      if (map === null) {
        return { field, values: [], distinct: maxDistinct, tooMany: true };
      }
      const values = [...map].sort((a, b) =>
        b[1] - a[1] || compareCells(a[0], b[0])
      ).slice(0, top).map(([value, count]) => ({
        value,
        count,
        share: total === 0 ? 0 : count / total,
      }));
      return { field, values, distinct: map.size, tooMany: false };
    }),
  };
  if (result.resume !== undefined) {
    answer.searchedTo = idTime(result.resume.slice(0, 12).padEnd(12, "0")) + 1;
  }
  return answer;
}

/**
 * The reads a reader's request runs: a page of entries, an aggregation,
 * facets, a histogram and a live tail's poll, over one KV handle in this thread
 * ({@linkcode localReads}) or in a thread of their own (db/query/thread.ts),
 * so that a heavy search never holds the thread that answers the endpoint.
 *
 * @module
 */
import {
  aggregate,
  type AggregateOptions,
  type Aggregation,
} from "./aggregate.ts";
import { type Facets, facets, type FacetsOptions } from "./facets.ts";
import {
  type Histogram,
  histogram,
  type HistogramOptions,
} from "./histogram.ts";
import {
  queryLogs,
  type QueryOptions,
  type QueryPage,
  tailLogs,
  type TailOptions,
} from "./query.ts";

/** The query module's heavy reads, of one database. */
export interface Reads {
  queryLogs(projectId: string, options?: QueryOptions): Promise<QueryPage>;
  aggregate(projectId: string, options: AggregateOptions): Promise<Aggregation>;
  facets(projectId: string, options?: FacetsOptions): Promise<Facets>;
  histogram(projectId: string, options: HistogramOptions): Promise<Histogram>;
  tailLogs(
    projectId: string,
    options: TailOptions,
  ): ReturnType<typeof tailLogs>;
}

/** The name of one of the {@linkcode Reads}. */
export type ReadName = keyof Reads;

/**
 * The reads of `kv`, run in this thread.
 *
 * @example
 * ```ts
 * const page = await localReads(kv).queryLogs(projectId, { limit: 10 });
 * ```
 */
export function localReads(kv: Deno.Kv): Reads {
  return {
    queryLogs: (projectId, options) => queryLogs(kv, projectId, options),
    aggregate: (projectId, options) => aggregate(kv, projectId, options),
    facets: (projectId, options) => facets(kv, projectId, options),
    histogram: (projectId, options) => histogram(kv, projectId, options),
    tailLogs: (projectId, options) => tailLogs(kv, projectId, options),
  };
}

/**
 * The reads a reader's request runs: a page of entries, an aggregation,
 * facets, a histogram, a live tail's poll, an export's page, an error
 * group's breakdowns and a stack resolved through its source maps, over one KV handle in this thread
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
import {
  type DetailOptions,
  type GroupDetail,
  type GroupUsers,
  readGroupDetail,
  readGroupUsers,
} from "../error_group_detail.ts";
import type { ErrorGroup } from "../error_group_reads.ts";
import { shownStack, SourceMapResolver } from "../symbolicate.ts";
import type { LogRecord, ResolvedStack } from "../../domain/entry.ts";
import { type ExportOptions, type ExportPage, exportPage } from "./export.ts";
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

/** The heavy reads of one database: the query module's and an error group's. */
export interface Reads {
  queryLogs(projectId: string, options?: QueryOptions): Promise<QueryPage>;
  aggregate(projectId: string, options: AggregateOptions): Promise<Aggregation>;
  facets(projectId: string, options?: FacetsOptions): Promise<Facets>;
  histogram(projectId: string, options: HistogramOptions): Promise<Histogram>;
  tailLogs(
    projectId: string,
    options: TailOptions,
  ): ReturnType<typeof tailLogs>;
  exportPage(projectId: string, options: ExportOptions): Promise<ExportPage>;
  readGroupDetail(
    projectId: string,
    fingerprint: string,
    options: DetailOptions,
  ): Promise<GroupDetail>;
  readGroupUsers(
    projectId: string,
    groups: ErrorGroup[],
    options: { budgetMs?: number; clock?: () => number },
  ): Promise<GroupUsers>;
  /**
   * The stacks of records resolved through their releases' maps, as the
   * consumer stores them (one resolver of parsed maps kept per reads).
   */
  resolveStacks(
    projectId: string,
    records: LogRecord[],
    options?: Record<never, never>,
  ): Promise<(ResolvedStack | null)[]>;
  /** An entry's stack as shown, resolved through its release's maps now. */
  shownStack(
    projectId: string,
    record: LogRecord,
    options?: Record<never, never>,
  ): Promise<ResolvedStack | null>;
}

/** The name of one of the {@linkcode Reads}. */
export type ReadName = keyof Reads;

/**
 * Where each of the {@linkcode Reads} takes its options: the index of its
 * last argument (the type checks that none is missing).
 */
export const OPTIONS_AT = {
  queryLogs: 1,
  aggregate: 1,
  facets: 1,
  histogram: 1,
  tailLogs: 1,
  exportPage: 1,
  readGroupDetail: 2,
  readGroupUsers: 2,
  shownStack: 2,
  resolveStacks: 2,
} as const satisfies Record<ReadName, number>;

/** Every name of the {@linkcode Reads}. */
export const READ_NAMES = Object.keys(OPTIONS_AT) as ReadName[];

/**
 * The reads of `kv`, run in this thread.
 *
 * @example
 * ```ts
 * const page = await localReads(kv).queryLogs(projectId, { limit: 10 });
 * ```
 */
export function localReads(kv: Deno.Kv): Reads {
  let resolver: SourceMapResolver | undefined;
  return {
    queryLogs: (projectId, options) => queryLogs(kv, projectId, options),
    aggregate: (projectId, options) => aggregate(kv, projectId, options),
    facets: (projectId, options) => facets(kv, projectId, options),
    histogram: (projectId, options) => histogram(kv, projectId, options),
    tailLogs: (projectId, options) => tailLogs(kv, projectId, options),
    exportPage: (projectId, options) => exportPage(kv, projectId, options),
    readGroupDetail: (projectId, fingerprint, options) =>
      readGroupDetail(kv, projectId, fingerprint, options),
    readGroupUsers: (projectId, groups, options) =>
      readGroupUsers(kv, projectId, groups, options),
    shownStack: (projectId, record) => shownStack(kv, projectId, record),
    resolveStacks: (projectId, records) =>
      (resolver ??= new SourceMapResolver(kv)).resolveMany(projectId, records),
  };
}

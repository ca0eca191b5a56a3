/**
 * The query module: the one way the operator commands and the dashboard read
 * stored entries. Filters and the query syntax, pages of entries with a
 * cursor, aggregations (`| count`, `| top`, `| uniq`), one entry, an entry
 * in context, a live tail, histograms and counts (the storage backlog is
 * db/backlog.ts's). It only reads: what writes and merges stored entries
 * lives in db/storage/ (docs/storage.md). See docs/query.md.
 *
 * @module
 */
export type { LogRecord } from "../../domain/entry.ts";
export {
  andFilters,
  type CompiledFilter,
  compileFilter,
  type FieldTerm,
  type Filter,
  InvalidQueryError,
  levelRank,
  matches,
} from "./filter.ts";
export { parseQuery, parseSearch, QuerySyntaxError } from "./parse.ts";
export {
  type GroupBy,
  isPipeField,
  MAX_GROUP_BY,
  MAX_TOP,
  type Pipe,
  TIME_BUCKETS_MS,
} from "./pipe.ts";
export {
  type Facet,
  FACET_FIELDS,
  FACET_VALUES,
  type Facets,
  facets,
  FACETS_BUDGET_MS,
  type FacetsOptions,
  type FacetValue,
  MAX_FACET_DISTINCT,
  MAX_FACET_FIELDS,
  MAX_FACET_LIMIT,
} from "./facets.ts";
export {
  aggregate,
  type AggregateOptions,
  type Aggregation,
  type Cell,
  MAX_EXACT_UNIQ,
  MAX_GROUPS,
  MAX_ROWS,
} from "./aggregate.ts";
export {
  aroundEntry,
  DEFAULT_QUERY_LIMIT,
  getEntry,
  listLogs,
  type ListLogsOptions,
  MAX_QUERY_LIMIT,
  QUERY_BUDGET_MS,
  queryLogs,
  type QueryOptions,
  type QueryPage,
  tailLogs,
  type TailOptions,
} from "./query.ts";
export {
  chooseInterval,
  countedByCounters,
  type Histogram,
  histogram,
  HistogramCutError,
  type HistogramOptions,
} from "./histogram.ts";
export { countStoredEntries, listSummaries } from "./summaries.ts";
export { localReads, type ReadName, type Reads } from "./reads.ts";
export { InexactReadError, MAX_READ_ATTEMPTS } from "./consistent.ts";
export type { Order, ScanStats } from "./scan.ts";

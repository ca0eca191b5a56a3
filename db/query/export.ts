/**
 * A page of the read API's export: entries as CSV or NDJSON rows, cut to
 * {@linkcode MAX_PAGE_CHARS}, read and written where the reads run (the query
 * thread over a database file), so that only the rows cross to the thread
 * that answers requests, never the entries they were made from.
 *
 * @module
 */
import { csvRow } from "../../domain/csv.ts";
import { type LogRecord, recordJson } from "../../domain/entry.ts";
import {
  pageLimit,
  QUERY_BUDGET_MS,
  queryLogs,
  type QueryOptions,
} from "./query.ts";

/**
 * Characters of one page's rows at most: past them the page ends early
 * (with at least one entry) and its cursor goes on from its last entry, so
 * that a page of large entries is never hundreds of megabytes.
 */
export const MAX_PAGE_CHARS = 8_000_000;

/** Options of {@linkcode exportPage}: a page's, and its format. */
export interface ExportOptions extends QueryOptions {
  /** CSV rows when `true`, NDJSON lines when `false`. */
  csv: boolean;
}

/** One page of rows, and where the next goes on. */
export interface ExportPage {
  rows: string[];
  /** `null` when nothing more matches. */
  cursor: string | null;
}

/** The row of one entry: a CSV row, or an NDJSON line. */
function entryRow(record: LogRecord, csv: boolean): string {
  return csv ? csvRow(record) : JSON.stringify(recordJson(record)) + "\n";
}

/** Entries the first read of a page asks for at most. */
const FIRST_READ = 100;

/**
 * A page of a project's entries as rows, cut before they pass
 * {@linkcode MAX_PAGE_CHARS} (never to none), its cursor then after the
 * last row written. The entries are read in parts sized by the rows so far
 * ({@linkcode partSize}), so a page of large entries reads about what it
 * writes, not its whole `limit`; the parts share the page's budget.
 *
 * @example
 * ```ts
 * const { rows, cursor } = await exportPage(kv, projectId, { limit: 1000, csv: true });
 * ```
 */
export async function exportPage(
  kv: Deno.Kv,
  projectId: string,
  options: ExportOptions,
): Promise<ExportPage> {
  const { csv, budget = {}, ...query } = options;
  const limit = pageLimit(options.limit);
  const after = (query.order ?? "newest")[0];
  const clock = budget.clock ?? (() => performance.now());
  const deadline = clock() + (budget.ms ?? QUERY_BUDGET_MS);
  let chunks = budget.chunks ?? Infinity;
  const rows: string[] = [];
  let size = 0;
  let cursor = query.cursor;
  while (rows.length < limit) {
    const part = await queryLogs(kv, projectId, {
      ...query,
      limit: partSize(limit - rows.length, rows.length, size),
      ...(cursor === undefined ? {} : { cursor }),
      budget: {
        ...budget,
        ms: Math.max(1, deadline - clock()),
        ...(chunks === Infinity ? {} : { chunks }),
      },
    });
    for (const record of part.records) {
      const row = entryRow(record, csv);
      if (size + row.length > MAX_PAGE_CHARS && rows.length > 0) {
        return { rows, cursor: cursor! };
      }
      size += row.length;
      rows.push(row);
      cursor = `${after}${record.id}`;
    }
    if (part.cursor === null) return { rows, cursor: null };
    cursor = part.cursor;
    chunks -= part.stats.chunksRead;
    if (part.searchedTo !== undefined || chunks <= 0) break;
  }
  return { rows, cursor: cursor ?? null };
}

/**
 * Entries the next part reads: the first {@linkcode FIRST_READ}, then as many
 * as the rows so far say fit in what is left of the page (at least
 * {@linkcode FIRST_READ}, so that a few large entries first do not make
 * every later part small).
 */
function partSize(left: number, written: number, size: number): number {
  if (written === 0) return Math.min(left, FIRST_READ);
  const fit = Math.ceil((MAX_PAGE_CHARS - size) * written / size) + 1;
  return Math.min(left, Math.max(fit, FIRST_READ));
}

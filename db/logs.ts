/**
 * Stored entries: how authorized entries are written under their project and
 * read back in time order.
 *
 * Entries are stored in pages: the entries of one project from one batch,
 * sorted by id and spanning at most {@linkcode PAGE_SPAN_MS} of receipt time,
 * under `logs/<projectId>/<id of the page's first entry>`. One KV value per
 * page instead of one per entry makes storing about twice as cheap; the
 * bounded span keeps listing exact: a page can hold entries received at most
 * `PAGE_SPAN_MS` after its key, so a reader knows how far to look around a
 * range and when no page still to be read can hold an earlier (or later)
 * entry. Values are JSON bytes cut into parts, so a page of large entries
 * still fits under KV's 64 KiB value limit.
 *
 * @module
 */
import type { LogRecord } from "../domain/entry.ts";
import { idTime, timeBound } from "../domain/ids.ts";
import { logKey, logPartKey, logsPrefix } from "./keys.ts";
import { joinParts, splitParts } from "./parts.ts";

/** Receipt time one page spans at most. */
export const PAGE_SPAN_MS = 1000;
/** Entries one page holds at most. */
export const PAGE_ENTRIES = 200;

/** The value under `logs/<projectId>/<first id>`. */
export interface LogPage {
  /** First part of the JSON array of records. */
  head: Uint8Array;
  /** Number of parts, head included. */
  parts: number;
  /** Number of records. */
  count: number;
  /** Id of the last record. */
  last: string;
}

/**
 * Cuts records (sorted by id) into pages of at most {@linkcode PAGE_ENTRIES}
 * entries spanning at most {@linkcode PAGE_SPAN_MS}.
 */
export function paginate(records: LogRecord[]): LogRecord[][] {
  const pages: LogRecord[][] = [];
  let page: LogRecord[] = [];
  for (const record of records) {
    const first = page[0];
    if (
      first &&
      (page.length >= PAGE_ENTRIES ||
        record.receivedAt - first.receivedAt >= PAGE_SPAN_MS)
    ) {
      pages.push(page);
      page = [];
    }
    page.push(record);
  }
  if (page.length > 0) pages.push(page);
  return pages;
}

/**
 * Adds the mutations that store one page of records, sorted by id (see
 * {@linkcode paginate}), to `op`; returns how many.
 */
export function setLogPage(
  op: Deno.AtomicOperation,
  projectId: string,
  records: LogRecord[],
  expireIn: number,
): number {
  const first = records[0]!.id;
  const { head, rest } = splitParts(JSON.stringify(records));
  const value: LogPage = {
    head,
    parts: 1 + rest.length,
    count: records.length,
    last: records.at(-1)!.id,
  };
  op.set(logKey(projectId, first), value, { expireIn });
  rest.forEach((part, i) =>
    op.set(logPartKey(projectId, first, i + 1), part, { expireIn })
  );
  return 1 + rest.length;
}

/** Decodes a stored page back into its records. */
export function readLogPage(
  kv: Deno.Kv,
  projectId: string,
  firstId: string,
  value: LogPage,
): Promise<LogRecord[]> {
  return joinParts<LogRecord[]>(
    kv,
    value.head,
    value.parts,
    (n) => logPartKey(projectId, firstId, n),
  );
}

/** Options of {@linkcode listLogs}. */
export interface ListLogsOptions {
  /** Newest first. @default {false} */
  reverse?: boolean;
  /** Only entries with an id at or after this one. */
  startId?: string;
  /** Only entries with an id before this one. */
  endId?: string;
  /** Entries to yield at most. */
  limit?: number;
}

const byId = (a: LogRecord, b: LogRecord) =>
  a.id < b.id ? -1 : a.id > b.id ? 1 : 0;

/**
 * Lists a project's stored entries in time order (oldest first, or newest
 * first with `reverse`), exactly, even when pages written by several
 * processes overlap in time.
 *
 * @example
 * ```ts
 * for await (const log of listLogs(kv, projectId, { reverse: true, limit: 50 })) {}
 * ```
 */
export async function* listLogs(
  kv: Deno.Kv,
  projectId: string,
  options: ListLogsOptions = {},
): AsyncGenerator<LogRecord> {
  const { startId, endId, reverse = false } = options;
  const limit = options.limit ?? Infinity;
  if (limit <= 0) return;
  const prefix = logsPrefix(projectId);
  // A page keyed before `startId` may still hold entries at or after it.
  const from = startId ? timeBound(idTime(startId) - PAGE_SPAN_MS) : undefined;
  const iter = kv.list<LogPage>({
    start: from ? logKey(projectId, from) : prefix,
    end: endId ? logKey(projectId, endId) : [...prefix, "\uffff"],
  }, { reverse, batchSize: 100 });
  const buffer: LogRecord[] = [];
  let yielded = 0;
  for await (const page of iter) {
    const firstId = String(page.key[2]);
    // Forward: pages still to read start at `firstId` or later, so every
    // buffered entry before it comes first. Newest first: pages still to
    // read start at `firstId` or earlier and end within the span after it.
    const bound = reverse
      ? timeBound(idTime(firstId) + PAGE_SPAN_MS + 1)
      : firstId;
    while (
      buffer.length > 0 &&
      (reverse ? buffer.at(-1)!.id >= bound : buffer[0]!.id < bound)
    ) {
      yield reverse ? buffer.pop()! : buffer.shift()!;
      if (++yielded >= limit) return;
    }
    for (
      const record of await readLogPage(kv, projectId, firstId, page.value)
    ) {
      if ((startId && record.id < startId) || (endId && record.id >= endId)) {
        continue;
      }
      buffer.push(record);
    }
    buffer.sort(byId);
  }
  while (buffer.length > 0) {
    yield reverse ? buffer.pop()! : buffer.shift()!;
    if (++yielded >= limit) return;
  }
}

/**
 * Stored entries as the consumer writes them: pages. A page holds the
 * entries of one project from one batch, sorted by id and spanning at most
 * {@linkcode PAGE_SPAN_MS} of receipt time, under
 * `logs/<projectId>/<id of the page's first entry>`. One KV value per page
 * instead of one per entry makes storing about twice as cheap; the bounded
 * span keeps listing exact: a page holds entries received at most
 * `PAGE_SPAN_MS` after its key, so a reader knows how far to look around a
 * range. The compactor (db/query/compact.ts) later merges settled pages into
 * compressed chunks; this module owns the page format and the line format
 * both use.
 *
 * A page value is bytes (a Deno version reads them whatever version wrote
 * them): a 4-byte header — format 1, the number of parts, the number of
 * entries (16 bits) — then one JSON line per entry; beyond
 * {@linkcode PART_BYTES} the rest goes to `log_parts/<projectId>/<id>/<n>`.
 * Pages written before this format are V8-serialized objects
 * ({@linkcode LegacyLogPage}) and are still read.
 *
 * @module
 */
import type { AtomicWriter } from "./atomic.ts";
import {
  type AuthMethod,
  type LogRecord,
  type QueuedEntry,
  toLogRecord,
} from "../domain/entry.ts";
import { idTime } from "../domain/ids.ts";
import { concatBytes, joinBytes, splitBytes } from "./blob.ts";
import { logKey, logPartKey } from "./keys.ts";
import { decodeJson, encodeJson } from "./kv.ts";
import { addLogCounts } from "./log_counts.ts";
import { joinParts, PART_BYTES, readBatchApart } from "./parts.ts";

/** Receipt time one page spans at most. */
export const PAGE_SPAN_MS = 1000;
/** Entries one page holds at most. */
export const PAGE_ENTRIES = 200;
/** First byte of a page in the current format. */
const PAGE_FORMAT = 1;
/** A page whose entries are the bytes of the batch they were queued in. */
const PAGE_REF_FORMAT = 2;
/** Bytes before the lines of a page. */
const PAGE_HEADER_BYTES = 4;

/** A page as written before pages were bytes: a V8-serialized object. */
export interface LegacyLogPage {
  /** First part of the JSON array of records. */
  head: Uint8Array;
  /** Number of parts, head included. */
  parts: number;
  /** Number of records. */
  count: number;
  /** Id of the last record. */
  last: string;
}

/** A stored page value, in either format. */
export type StoredPage = Uint8Array | LegacyLogPage;

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/**
 * One entry as a line of JSON: `id` first, then `level`, so that both can be
 * read without parsing; `receivedAt` is left out when the id says it.
 *
 * @example
 * ```ts
 * encodeRecordLine(record); // '{"id":"0193…","level":"info","data":{…},…}'
 * ```
 */
export function encodeRecordLine(record: LogRecord): string {
  const line: Record<string, unknown> = { id: record.id, level: record.level };
  if (record.receivedAt !== idTime(record.id)) {
    line.receivedAt = record.receivedAt;
  }
  line.data = record.data;
  line.device = record.device;
  line.context = record.context;
  if (record.appid !== undefined) line.appid = record.appid;
  if (record.origin !== undefined) line.origin = record.origin;
  line.auth = record.auth;
  return JSON.stringify(line);
}

/**
 * The line of an accepted entry cut from its queued JSON, the text the
 * producer committed, instead of building the record and serializing it
 * again. The route gives a queued entry its members in the line's order
 * (`id`, `level`, `data`, `device`, `context`, `appid`, `origin`, then
 * `receivedAt`, `projectId` and the signature's members), so the line is
 * that text up to `receivedAt` with `auth` added: byte for byte what
 * {@linkcode encodeRecordLine} makes of the record. `undefined` when the
 * text is not in that form (an entry without `device` or `context`, whose
 * line has them as `{}`; one read back from an older batch), and the
 * caller encodes the record instead.
 *
 * @example
 * ```ts
 * const line = lineFromQueued(text, entry, "origin") ??
 *   encodeRecordLine(toLogRecord(entry, "origin"));
 * ```
 */
export function lineFromQueued(
  text: string,
  entry: QueuedEntry,
  auth: AuthMethod,
): string | undefined {
  const { id } = entry;
  if (
    entry.device === undefined || entry.context === undefined ||
    !text.startsWith('{"id":"') || !text.startsWith(id, 7) ||
    !text.startsWith('","level":', 7 + id.length) ||
    entry.receivedAt !== idTime(id)
  ) return undefined;
  // Every later member is a string or an object of strings, whose quotes
  // are escaped: the last match is the top-level member.
  const tail = `,"receivedAt":${entry.receivedAt},"projectId":`;
  const at = text.lastIndexOf(tail);
  if (at < 0) return undefined;
  return `${text.slice(0, at)},"auth":${JSON.stringify(auth)}}`;
}

/** Parses a line of {@linkcode encodeRecordLine} back into the record. */
export function decodeRecordLine(line: string): LogRecord {
  const raw = JSON.parse(line);
  const record: LogRecord = {
    id: raw.id,
    receivedAt: raw.receivedAt ?? idTime(raw.id),
    level: raw.level,
    data: raw.data,
    device: raw.device,
    context: raw.context,
    auth: raw.auth,
  };
  if (raw.appid !== undefined) record.appid = raw.appid;
  if (raw.origin !== undefined) record.origin = raw.origin;
  return record;
}

/** The id of a line of {@linkcode encodeRecordLine}, read without parsing. */
export function lineId(line: string, from = 0): string {
  return line.slice(from + 7, line.indexOf('"', from + 7));
}

/** The level of a line of {@linkcode encodeRecordLine}, read without parsing. */
export function lineLevel(line: string, from = 0): string {
  const at = line.indexOf('"', from + 7) + 11; // past `","level":"`
  return line.slice(at, line.indexOf('"', at));
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
  op: AtomicWriter,
  projectId: string,
  records: LogRecord[],
  expireIn: number,
  lineOf: (record: LogRecord) => string = encodeRecordLine,
): number {
  const first = records[0]!.id;
  const lines = encoder.encode(records.map(lineOf).join("\n"));
  const { head, rest } = splitBytes(lines, PART_BYTES - PAGE_HEADER_BYTES);
  const count = records.length;
  const header = [PAGE_FORMAT, 1 + rest.length, count & 0xff, count >> 8];
  op.set(
    logKey(projectId, first),
    concatBytes([new Uint8Array(header), head]),
    { expireIn },
  );
  rest.forEach((part, i) =>
    op.set(logPartKey(projectId, first, i + 1), part, { expireIn })
  );
  return 1 + rest.length;
}

/** Options of {@linkcode storeLogs}. */
export interface StoreLogsOptions {
  /** Commit time, Unix milliseconds. */
  now: number;
  /** The project's retention. */
  retentionMs: number;
  /** A record's line, when known already. @default {encodeRecordLine} */
  lineOf?: (record: LogRecord) => string;
}

/**
 * Adds to `op` the mutations that store a project's records of one batch
 * (sorted by id): its pages, and the per-minute and per-hour counters by
 * level that histograms read. Returns how many mutations it added: at most
 * 4 per entry — a page, a minute and an hour counter, and none more — so a
 * batch of `MAX_BATCH_ENTRIES` (200) stays far under KV's 1,000.
 *
 * @example
 * ```ts
 * storeLogs(op, project.id, records, { now, retentionMs: 30 * 86_400_000 });
 * ```
 */
export function storeLogs(
  op: AtomicWriter,
  projectId: string,
  records: LogRecord[],
  options: StoreLogsOptions,
): number {
  let mutations = 0;
  for (const page of paginate(records)) {
    const expireAt = page[0]!.receivedAt + options.retentionMs;
    mutations += setLogPage(
      op,
      projectId,
      page,
      Math.max(1000, expireAt - options.now),
      options.lineOf,
    );
  }
  return mutations + addLogCounts(op, projectId, records);
}

/** Whether a stored page is in the format written before pages were bytes. */
export function isLegacyPage(value: StoredPage): value is LegacyLogPage {
  return !(value instanceof Uint8Array);
}

/** How many entries a stored page holds, read from its header. */
export function pageEntryCount(value: StoredPage): number {
  if (isLegacyPage(value)) return value.count;
  return value[2]! | (value[3]! << 8);
}

/** How many parts (head included) a stored page has. */
export function pagePartCount(value: StoredPage): number {
  return isLegacyPage(value) ? value.parts : value[1]!;
}

/**
 * Reads a stored page (either format) as the text of its lines of
 * {@linkcode encodeRecordLine}, sorted by id, joined by "\n".
 */
export async function readPageText(
  kv: Deno.Kv,
  projectId: string,
  firstId: string,
  value: StoredPage,
): Promise<string> {
  const partKey = (n: number) => logPartKey(projectId, firstId, n);
  if (isLegacyPage(value)) {
    const records = await joinParts<LogRecord[]>(
      kv,
      value.head,
      value.parts,
      partKey,
    );
    return records.map(encodeRecordLine).join("\n");
  }
  if (value[0] === PAGE_REF_FORMAT) return readRefText(kv, value);
  const parts = value[1]!;
  const bytes = parts <= 1
    ? value.subarray(PAGE_HEADER_BYTES)
    : await joinBytes(
      kv,
      value.subarray(PAGE_HEADER_BYTES),
      Array.from({ length: parts - 1 }, (_, i) => partKey(i + 1)),
    );
  return decoder.decode(bytes);
}

/** The batch a page by reference reads its entries from. */
export interface BatchRef {
  batchId: string;
  /** Parts of the batch's bytes, under `batch_parts/<batchId>/0` onwards. */
  parts: number;
}

/** The stored form of a page by reference, after its 4-byte header. */
interface StoredRef {
  batch: string;
  parts: number;
  /** Each entry's method, or the one method of all. */
  auth: AuthMethod | AuthMethod[];
}

/**
 * Whether the entries of a batch (in the order queued) can make one page by
 * reference: one project, ids rising, at most {@linkcode PAGE_ENTRIES}
 * entries spanning less than {@linkcode PAGE_SPAN_MS}, as a page holds.
 *
 * @example
 * ```ts
 * canReferTo(batch.entries); // true for a batch of one busy project
 * ```
 */
export function canReferTo(entries: readonly QueuedEntry[]): boolean {
  const first = entries[0];
  if (!first || entries.length > PAGE_ENTRIES) return false;
  for (let i = 1; i < entries.length; i++) {
    const entry = entries[i]!;
    if (
      entry.projectId !== first.projectId || entry.id <= entries[i - 1]!.id ||
      entry.receivedAt - first.receivedAt >= PAGE_SPAN_MS
    ) return false;
  }
  return true;
}

/**
 * Adds the mutations that store `records` (sorted by id, the entries of
 * batch `ref` in its order, see {@linkcode canReferTo}) as one page that
 * refers to the batch's bytes instead of copying them, and their counters;
 * returns how many. No expiry: the compactor makes it a chunk, which
 * expires, and deletes the batch's bytes (docs/design.md#pages-by-reference).
 *
 * @example
 * ```ts
 * storeLogsByRef(op, projectId, records, { batchId, parts: 1 });
 * ```
 */
export function storeLogsByRef(
  op: AtomicWriter,
  projectId: string,
  records: LogRecord[],
  ref: BatchRef,
): number {
  const methods = records.map((r) => r.auth);
  const stored: StoredRef = {
    batch: ref.batchId,
    parts: ref.parts,
    auth: methods.every((m) => m === methods[0]) ? methods[0]! : methods,
  };
  const count = records.length;
  op.set(
    logKey(projectId, records[0]!.id),
    concatBytes([
      new Uint8Array([PAGE_REF_FORMAT, 1, count & 0xff, count >> 8]),
      encodeJson(stored),
    ]),
  );
  return 1 + addLogCounts(op, projectId, records);
}

/** The batch a stored page refers to, or `null` for a page of its own. */
export function pageBatchRef(value: StoredPage): BatchRef | null {
  if (isLegacyPage(value) || value[0] !== PAGE_REF_FORMAT) return null;
  const stored = decodeJson<StoredRef>(value.subarray(PAGE_HEADER_BYTES))!;
  return { batchId: stored.batch, parts: stored.parts };
}

/** The lines of a page by reference, read from its batch's bytes. */
async function readRefText(
  kv: Deno.Kv,
  value: Uint8Array,
): Promise<string> {
  const stored = decodeJson<StoredRef>(value.subarray(PAGE_HEADER_BYTES))!;
  const entries = await readBatchApart(
    kv,
    stored.batch,
    stored.parts,
  ) as QueuedEntry[];
  return entries.map((entry, i) => {
    const auth = typeof stored.auth === "string"
      ? stored.auth
      : stored.auth[i]!;
    return lineFromQueued(JSON.stringify(entry), entry, auth) ??
      encodeRecordLine(toLogRecord(entry, auth));
  }).join("\n");
}

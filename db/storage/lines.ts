/**
 * The line format of a stored entry: one JSON object per line, `id` first,
 * then `level`, so that both are read without parsing. Chunks hold these
 * lines (db/storage/chunk.ts); the consumer makes them, the query engine reads
 * them.
 *
 * @module
 */
import {
  type AuthMethod,
  type LogRecord,
  type QueuedEntry,
} from "../../domain/entry.ts";
import { idTime } from "../../domain/ids.ts";

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
  if (record.resolved !== undefined) line.resolved = record.resolved;
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
 * line has them as `{}`), and the caller encodes the record instead.
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
  if (raw.resolved !== undefined) record.resolved = raw.resolved;
  return record;
}

/** The id of a line of {@linkcode encodeRecordLine}, read without parsing. */
export function lineId(line: string, from = 0): string {
  return line.slice(from + 7, line.indexOf('"', from + 7));
}

/**
 * Whether the id of line `a` sorts before the id of line `b` (lines of
 * {@linkcode encodeRecordLine}), compared in place: `lineId(a) < lineId(b)`
 * without making either id, for a sort of a merge's few thousand lines
 * (twice as fast as slicing the ids).
 *
 * @example
 * ```ts
 * lines.sort((a, b) => (idBefore(a, b) ? -1 : 1));
 * ```
 */
export function idBefore(a: string, b: string): boolean {
  for (let i = 7;; i++) {
    const endA = a.charCodeAt(i) === 34; // the closing quote
    const endB = b.charCodeAt(i) === 34;
    if (endA || endB) return endA && !endB; // a shorter id sorts first
    if (a.charCodeAt(i) !== b.charCodeAt(i)) {
      return a.charCodeAt(i) < b.charCodeAt(i);
    }
  }
}

/** The level of a line of {@linkcode encodeRecordLine}, read without parsing. */
export function lineLevel(line: string, from = 0): string {
  const at = line.indexOf('"', from + 7) + 11; // past `","level":"`
  return line.slice(at, line.indexOf('"', at));
}

/**
 * The end of the JSON value that starts at `at` in `text` (a string, an
 * object, an array or a scalar), found by scanning, nothing parsed.
 */
function valueEnd(text: string, at: number): number {
  let depth = 0;
  let i = at;
  for (; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 34) { // "
      for (i++; i < text.length; i++) {
        const d = text.charCodeAt(i);
        if (d === 92) i++; // backslash: skip the escaped character
        else if (d === 34) break;
      }
      if (depth === 0) return i + 1;
    } else if (c === 123 || c === 91) depth++; // { [
    else if (c === 125 || c === 93) { // } ]
      if (depth === 0) return i; // the end of the enclosing object
      if (--depth === 0) return i + 1;
    } else if (c === 44 && depth === 0) return i; // ,
  }
  return i;
}

/**
 * Parses only the top-level members `roots` of a line of
 * {@linkcode encodeRecordLine} (`id`, `receivedAt` and `level` always): the
 * record with those members, the others left out. A wide entry (thousands
 * of members under `data`) costs a scan of its text instead of a tree of
 * objects when a count needs only a few short members.
 *
 * @example
 * ```ts
 * decodeLineMembers(line, new Set(["context"])).context; // as decodeRecordLine's
 * ```
 */
export function decodeLineMembers(
  line: string,
  roots: ReadonlySet<string>,
): LogRecord {
  const raw: Record<string, unknown> = {};
  let i = 1; // past "{"
  while (i < line.length && line.charCodeAt(i) === 34) {
    const keyEnd = valueEnd(line, i);
    const key = JSON.parse(line.slice(i, keyEnd)) as string;
    const start = keyEnd + 1; // past ":"
    const end = valueEnd(line, start);
    if (
      key === "id" || key === "level" || key === "receivedAt" || roots.has(key)
    ) {
      raw[key] = JSON.parse(line.slice(start, end));
    }
    i = end + 1; // past "," (or "}" at the end)
  }
  const id = raw.id as string;
  const record = {
    id,
    receivedAt: (raw.receivedAt as number | undefined) ?? idTime(id),
    level: raw.level,
  } as LogRecord;
  for (const key of ["data", "device", "context", "auth", "appid", "origin"]) {
    if (raw[key] !== undefined) {
      (record as unknown as Record<string, unknown>)[key] = raw[key];
    }
  }
  return record;
}

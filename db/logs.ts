/**
 * Stored entries: how an authorized entry is written under its project and
 * read back, in time order. Values are JSON bytes cut into parts so that an
 * entry at the body limit still fits under KV's 64 KiB value limit.
 *
 * @module
 */
import type { AuthMethod } from "../auth/authenticate.ts";
import { logKey, logPartKey, logsPrefix } from "./keys.ts";
import { joinParts, splitParts } from "./parts.ts";

/** An authorized entry as stored and as the operator commands print it. */
export interface LogRecord {
  id: string;
  /** Receipt time, Unix milliseconds. */
  receivedAt: number;
  level: string;
  data: Record<string, unknown>;
  device: Record<string, unknown> | string;
  context: Record<string, unknown>;
  appid?: string;
  origin?: string;
  /** The method that authorized it. */
  auth: AuthMethod;
}

/** The value under `logs/<projectId>/<id>`. */
export interface StoredLog {
  head: Uint8Array;
  parts: number;
}

/** Adds the mutations that store `record` to `op`; returns how many. */
export function setLog(
  op: Deno.AtomicOperation,
  projectId: string,
  record: LogRecord,
  expireIn: number,
): number {
  const { head, rest } = splitParts(JSON.stringify(record));
  const value: StoredLog = { head, parts: 1 + rest.length };
  op.set(logKey(projectId, record.id), value, { expireIn });
  rest.forEach((part, i) =>
    op.set(logPartKey(projectId, record.id, i + 1), part, { expireIn })
  );
  return 1 + rest.length;
}

/** Decodes a stored value back into its record. */
export function readLog(
  kv: Deno.Kv,
  projectId: string,
  id: string,
  value: StoredLog,
): Promise<LogRecord> {
  return joinParts<LogRecord>(
    kv,
    value.head,
    value.parts,
    (n) => logPartKey(projectId, id, n),
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
  /** Entries to read at most. */
  limit?: number;
}

/**
 * Lists a project's stored entries in time order.
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
  const prefix = logsPrefix(projectId);
  const selector: Deno.KvListSelector = options.startId || options.endId
    ? {
      start: options.startId ? logKey(projectId, options.startId) : prefix,
      end: options.endId
        ? logKey(projectId, options.endId)
        : [...prefix, "\uffff"],
    }
    : { prefix };
  const iter = kv.list<StoredLog>(selector, {
    reverse: options.reverse ?? false,
    ...(options.limit === undefined ? {} : { limit: options.limit }),
    batchSize: 500,
  });
  for await (const entry of iter) {
    yield await readLog(kv, projectId, String(entry.key[2]), entry.value);
  }
}

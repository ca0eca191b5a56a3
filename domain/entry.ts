/**
 * The domain's types and constants: levels, authentication methods, rejection
 * reasons, the entry as queued and the record as stored. Every layer may
 * import this module; it imports nothing (docs/design.md#layers).
 *
 * @module
 */

/** The four standard levels, in increasing severity. */
export const STANDARD_LEVELS = [
  "info",
  "warning",
  "error",
  "critical",
] as const;

/** One of {@linkcode STANDARD_LEVELS}. */
export type StandardLevel = typeof STANDARD_LEVELS[number];

/**
 * Shape of every level name, standard or custom
 * (docs/design.md#custom-levels).
 */
export const LEVEL_PATTERN = /^[a-z][a-z0-9_-]{0,31}$/;

/** Whether `level` is one of the four standard levels. */
export function isStandardLevel(level: string): level is StandardLevel {
  return (STANDARD_LEVELS as readonly string[]).includes(level);
}

/** How an entry was authorized. */
export type AuthMethod = "origin" | "appid" | "signature";

/** Why an entry was dropped (docs/design.md#rejection-reasons). */
export const REJECT_REASONS = [
  "unknown_project",
  "bad_origin",
  "unknown_appid",
  "bad_signature",
  "stale_timestamp",
  "replayed",
  "no_credentials",
  "unknown_level",
  "over_quota",
  "sampled",
] as const;

/** One of {@linkcode REJECT_REASONS}. */
export type RejectReason = typeof REJECT_REASONS[number];

/** The members a signature covers, in the order they are signed. */
export const SIGNED_MEMBERS = [
  "level",
  "projectId",
  "device",
  "context",
  "data",
] as const;

/** The members of a submitted entry that the endpoint keeps. */
export interface EntryBody {
  level: string;
  projectId: string;
  data: Record<string, unknown>;
  /** Absent when the client sent none (matters for signatures). */
  device?: Record<string, unknown> | string;
  /** Absent when the client sent none (matters for signatures). */
  context?: Record<string, unknown>;
  /** Application id of a mobile client; `null` when sent as `null`. */
  appid?: string | null;
}

/** An entry as accepted by the endpoint, before authentication. */
export interface QueuedEntry extends Omit<EntryBody, "appid"> {
  /** Unique, time-sortable id given at receipt (domain/ids.ts). */
  id: string;
  /** Receipt time, Unix milliseconds. */
  receivedAt: number;
  appid?: string;
  /** The `Origin` header. */
  origin?: string;
  /** The `timestamp` header, as sent. */
  timestamp?: string;
  /** The `signature` header, as sent. */
  signature?: string;
  /** The client's own text of the signed members (only when signed). */
  raw?: Record<string, string>;
}

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
  /**
   * Its `data.stack` resolved through the source maps of its release, when
   * the consumer had them (docs/errors.md#source-maps).
   */
  resolved?: ResolvedStack;
}

/** A stack frame as shown: resolved through a source map, or why not. */
export interface ShownFrame {
  /** The original function's name (or the minified one, unresolved). */
  function: string;
  /** The original file (or the minified URL, unresolved). */
  file: string;
  line: number | null;
  column: number | null;
  /** The original source line, when the map holds the sources. */
  source?: string;
  /** Whether a source map resolved it. */
  resolved: boolean;
  /** Why it is not resolved, or why it has no source line. */
  why?: string;
}

/** A `data.stack` resolved through the source maps of a release. */
export interface ResolvedStack {
  release: string;
  frames: ShownFrame[];
}

/**
 * The record stored for an entry authorized by `auth`: the entry's members
 * (`device` and `context` as `{}` when absent), not its credentials.
 *
 * @example
 * ```ts
 * const record = toLogRecord(entry, "origin");
 * ```
 */
export function toLogRecord(entry: QueuedEntry, auth: AuthMethod): LogRecord {
  const record: LogRecord = {
    id: entry.id,
    receivedAt: entry.receivedAt,
    level: entry.level,
    data: entry.data,
    device: entry.device ?? {},
    context: entry.context ?? {},
    auth,
  };
  if (entry.appid !== undefined) record.appid = entry.appid;
  if (entry.origin !== undefined) record.origin = entry.origin;
  return record;
}

/**
 * The sender's `origin` and `appid` of an entry or a rejection, each only
 * when it has one: what a rejection keeps, and the JSON the operator's
 * views show.
 *
 * @example
 * ```ts
 * senderJson({ origin: "https://shop.example.com" }); // { origin: "https://shop.example.com" }
 * ```
 */
export function senderJson(
  sender: { origin?: string; appid?: string },
): { origin?: string; appid?: string } {
  return {
    ...(sender.origin === undefined ? {} : { origin: sender.origin }),
    ...(sender.appid === undefined ? {} : { appid: sender.appid }),
  };
}

/**
 * A stored entry as the operator's views show it (the commands' `--json`,
 * the dashboard's JSON view): receipt time in ISO 8601, the credential next,
 * then the sender's members.
 *
 * @example
 * ```ts
 * JSON.stringify(recordJson(record)); // '{"id":"…","receivedAt":"2026-…",…}'
 * ```
 */
export function recordJson(record: LogRecord): Record<string, unknown> {
  return {
    id: record.id,
    receivedAt: new Date(record.receivedAt).toISOString(),
    level: record.level,
    auth: record.auth,
    ...senderJson(record),
    data: record.data,
    context: record.context,
    device: record.device,
  };
}

/** One day in milliseconds. */
export const DAY_MS = 86_400_000;

/**
 * Rejected entries kept for diagnosis and recovery
 * (docs/design.md#kept-rejected-entries): the content of a project's recent
 * rejected entries, with the text a `bad_signature` entry should have been
 * signed over, and of the recent entries naming no project in one global
 * ring; listing them. Replaying them once an operator fixed the settings is
 * accepting entries, and lives with the consumer (queue/replay.ts).
 *
 * The consumer writes kept entries in its result commit, in the slots of the
 * ring of recent rejections (db/stats.ts), so they are bounded in count;
 * each is at most {@linkcode KEPT_MAX_BYTES}, so they are bounded in bytes;
 * they expire after {@linkcode KEPT_TTL_MS}.
 *
 * @module
 */
import {
  DAY_MS,
  type QueuedEntry,
  type RejectReason,
  SIGNED_MEMBERS,
} from "../domain/entry.ts";
import { globalRejectedEntriesPrefix, rejectedEntriesPrefix } from "./keys.ts";
import { decodeJson, encodeJson } from "./kv.ts";

/** How long a rejected entry is kept. */
export const KEPT_TTL_MS = 7 * DAY_MS;
/**
 * Bytes of one kept entry at most: with 100 per project, under 1 MiB per
 * project (and for the global ring).
 */
export const KEPT_MAX_BYTES = 10_000;
/** Longest origin, app id or project id kept beside the content. */
const MAX_LABEL_CHARS = 256;

/** A rejected entry as kept. */
export interface KeptEntry {
  entryId: string;
  /** Receipt time, Unix milliseconds. */
  at: number;
  reason: RejectReason;
  /** The project id the entry named, cut to 256 characters. */
  projectId: string;
  level: string;
  /** Cut to 256 characters. */
  origin?: string;
  /** Cut to 256 characters. */
  appid?: string;
  /** The entry as received; absent when it was too large to keep. */
  entry?: QueuedEntry;
  /**
   * For `bad_signature`: `projectId + params + timestamp` as the service
   * expected it signed, with `params` in its canonical form (compact JSON of
   * `level, projectId, device, context, data`, absent members left out).
   */
  expected?: string;
  /** For a signed entry: the signature skew it was judged with. */
  maxSkewMs?: number;
  /** When the content was not kept: the bytes it would have taken. */
  omittedBytes?: number;
  /**
   * The content was scrubbed (docs/privacy.md): the sender's own text of
   * the signed members is not kept, and a signature no longer verifies.
   */
  scrubbed?: true;
}

/**
 * The members of a kept entry as its sender sent them (what a replay
 * submits); `undefined` when the entry was too large to keep.
 *
 * @example
 * ```ts
 * JSON.stringify(sentBody(kept), null, 2);
 * ```
 */
export function sentBody(kept: KeptEntry): Record<string, unknown> | undefined {
  const e = kept.entry;
  if (e === undefined) return undefined;
  return {
    level: e.level,
    projectId: e.projectId,
    ...(e.device === undefined ? {} : { device: e.device }),
    ...(e.context === undefined ? {} : { context: e.context }),
    data: e.data,
    ...(e.appid === undefined ? {} : { appid: e.appid }),
  };
}

/**
 * The text a signed entry's members give in signing order, each member's
 * value exactly as the sender wrote it (separators between members
 * compact), with the project id before and the timestamp after: what the
 * sender signed if it signed the bytes it sent. `undefined` when the
 * sender's own text was not kept.
 *
 * @example
 * ```ts
 * sentSignedText(kept); // 'p1{"level": "info","projectId":"p1","data":{"a": 1}}1767225600000'
 * ```
 */
export function sentSignedText(kept: KeptEntry): string | undefined {
  const e = kept.entry;
  const raw = e?.raw;
  if (!e || !raw?.level || !raw.projectId || !raw.data) return undefined;
  const members = SIGNED_MEMBERS.filter((name) => raw[name] !== undefined)
    .map((name) => `"${name}":${raw[name]}`);
  return `${e.projectId}{${members.join(",")}}${e.timestamp ?? ""}`;
}

/** Options of {@linkcode encodeKeptEntry}. */
export interface KeepOptions {
  /** The text a `bad_signature` entry should have been signed over. */
  expected?: string;
  /** The signature skew the entry was judged with. */
  maxSkewMs?: number;
  /** `entry` is the scrubbed content: its sender's own text is left out. */
  scrubbed?: boolean;
}

function cut(text: string): string {
  return text.length > MAX_LABEL_CHARS ? text.slice(0, MAX_LABEL_CHARS) : text;
}

/**
 * Encodes a rejected entry as kept, within {@linkcode KEPT_MAX_BYTES}: the
 * client's own text of the signed members is left out first when it does not
 * fit, then the expected text, then the content.
 *
 * @example
 * ```ts
 * const value = encodeKeptEntry(entry, "bad_origin");
 * ```
 */
export function encodeKeptEntry(
  entry: QueuedEntry,
  reason: RejectReason,
  options: KeepOptions = {},
): Uint8Array {
  const kept: KeptEntry = {
    entryId: entry.id,
    at: entry.receivedAt,
    reason,
    projectId: cut(entry.projectId),
    level: entry.level,
  };
  if (entry.origin !== undefined) kept.origin = cut(entry.origin);
  if (entry.appid !== undefined) kept.appid = cut(entry.appid);
  if (options.maxSkewMs !== undefined && entry.signature !== undefined) {
    kept.maxSkewMs = options.maxSkewMs;
  }
  if (options.scrubbed) kept.scrubbed = true;
  const { raw: _raw, ...bare } = entry;
  const expected = options.expected === undefined
    ? {}
    : { expected: options.expected };
  let first: number | undefined;
  for (
    const content of [
      { entry: options.scrubbed ? bare : entry, ...expected },
      { entry: bare, ...expected },
      { entry: bare },
    ]
  ) {
    const value = encodeJson({ ...kept, ...content });
    first ??= value.length;
    if (value.length <= KEPT_MAX_BYTES) return value;
  }
  return encodeJson({ ...kept, omittedBytes: first });
}

/** A kept entry with where it is kept. */
export interface KeptSlot {
  key: Deno.KvKey;
  versionstamp: string;
  kept: KeptEntry;
}

/**
 * A project's kept rejected entries with their slots, newest first: what a
 * replay reads.
 *
 * @example
 * ```ts
 * const slots = await listKeptSlots(kv, projectId);
 * ```
 */
export function listKeptSlots(
  kv: Deno.Kv,
  projectId: string,
): Promise<KeptSlot[]> {
  return readSlots(kv, rejectedEntriesPrefix(projectId));
}

async function readSlots(
  kv: Deno.Kv,
  prefix: Deno.KvKey,
): Promise<KeptSlot[]> {
  const slots: KeptSlot[] = [];
  for await (const entry of kv.list({ prefix })) {
    const kept = decodeJson<KeptEntry>(entry.value);
    if (kept) {
      slots.push({ key: entry.key, versionstamp: entry.versionstamp, kept });
    }
  }
  // The ring's slots say nothing of order: sort by time, newest first.
  return slots.sort((a, b) =>
    b.kept.at - a.kept.at ||
    (a.kept.entryId < b.kept.entryId
      ? 1
      : a.kept.entryId > b.kept.entryId
      ? -1
      : 0)
  );
}

/** Options of {@linkcode listRejected}. */
export interface ListRejectedOptions {
  /** Only entries rejected for this reason. */
  reason?: RejectReason;
  /** Entries returned at most. @default {100} */
  limit?: number;
}

function pick(slots: KeptSlot[], options: ListRejectedOptions): KeptEntry[] {
  return slots.map((s) => s.kept)
    .filter((k) => options.reason === undefined || k.reason === options.reason)
    .slice(0, options.limit ?? Infinity);
}

/**
 * Lists a project's kept rejected entries, newest first.
 *
 * @example
 * ```ts
 * const kept = await listRejected(kv, projectId, { reason: "bad_signature" });
 * ```
 */
export async function listRejected(
  kv: Deno.Kv,
  projectId: string,
  options: ListRejectedOptions = {},
): Promise<KeptEntry[]> {
  return pick(await readSlots(kv, rejectedEntriesPrefix(projectId)), options);
}

/**
 * Lists the kept entries that named no existing project, newest first.
 *
 * @example
 * ```ts
 * const kept = await listUnknownProjectRejected(kv, { limit: 10 });
 * ```
 */
export async function listUnknownProjectRejected(
  kv: Deno.Kv,
  options: ListRejectedOptions = {},
): Promise<KeptEntry[]> {
  return pick(await readSlots(kv, globalRejectedEntriesPrefix()), options);
}

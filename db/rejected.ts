/**
 * Rejected entries kept for diagnosis and recovery
 * (docs/design.md#kept-rejected-entries): the content of a project's recent
 * rejected entries, with the text a `bad_signature` entry should have been
 * signed over, and of the recent entries naming no project in one global
 * ring; listing them, and replaying them once an operator fixed the
 * settings.
 *
 * The consumer writes kept entries in its result commit, in the slots of the
 * ring of recent rejections (db/stats.ts), so they are bounded in count;
 * each is at most {@linkcode KEPT_MAX_BYTES}, so they are bounded in bytes;
 * they expire after {@linkcode KEPT_TTL_MS}. A replay stores an entry and
 * deletes it from the ring in one atomic operation, checked on its slot and
 * on the project record: an entry is replayed at most once, and never under
 * a deleted project.
 *
 * @module
 */
import {
  type AuthMethod,
  DAY_MS,
  type QueuedEntry,
  type RejectReason,
  SIGNED_MEMBERS,
  toLogRecord,
} from "../domain/entry.ts";
import {
  acceptedCountKey,
  globalRejectedEntriesPrefix,
  projectKey,
  rejectedEntriesPrefix,
  replayedCountKey,
  seenSignatureKey,
} from "./keys.ts";
import { decodeJson, encodeJson } from "./kv.ts";
import { addErrorGroups } from "./error_groups.ts";
import { storeLogs } from "./storage/write.ts";
import { type Project, ProjectNotFoundError } from "./projects.ts";
import { scrubAccepted } from "./scrub.ts";

/** How long a rejected entry is kept. */
export const KEPT_TTL_MS = 7 * DAY_MS;
/**
 * Bytes of one kept entry at most: with 100 per project, under 1 MiB per
 * project (and for the global ring).
 */
export const KEPT_MAX_BYTES = 10_000;
/** Longest origin, app id or project id kept beside the content. */
const MAX_LABEL_CHARS = 256;
/** Signature skew assumed for a kept entry that does not say its own. */
const DEFAULT_MAX_SKEW_MS = 300_000;
/** Attempts at one replay when its keys keep changing. */
const REPLAY_ATTEMPTS = 5;

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
interface Slot {
  key: Deno.KvKey;
  versionstamp: string;
  kept: KeptEntry;
}

async function readSlots(kv: Deno.Kv, prefix: Deno.KvKey): Promise<Slot[]> {
  const slots: Slot[] = [];
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

function pick(slots: Slot[], options: ListRejectedOptions): KeptEntry[] {
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

/** An authentication verdict, as the auth layer gives it. */
export type Verdict =
  | { ok: true; method: AuthMethod }
  | { ok: false; reason: RejectReason };

/** Options of {@linkcode replayRejected}. */
export interface ReplayOptions {
  /** Judges an entry on its project: the consumer's own authentication. */
  authenticate: (
    entry: QueuedEntry,
    project: Project,
    maxSkewMs: number,
  ) => Verdict;
  /** Clock. @default {Date.now} */
  now?: () => number;
}

/** What became of one replayed entry. */
export type ReplayResult =
  | { entryId: string; outcome: "stored"; auth: AuthMethod }
  | { entryId: string; outcome: "rejected"; reason: RejectReason }
  | { entryId: string; outcome: "skipped"; why: string }
  | { entryId: string; outcome: "missing" };

/**
 * Authenticates a project's kept rejected entries again, on the project's
 * current record (all of them, or those of `entryIds`), oldest first. An
 * entry that passes is stored, counted as accepted and as replayed, and
 * deleted from the kept entries, in one atomic operation checked on its slot,
 * on the project record and on its signature's claim: each entry is stored
 * at most once, whoever replays it at the same time. One that fails stays
 * kept. Rejection counters are history and do not change.
 *
 * Not replayed: entries whose content was too large to keep, `replayed`
 * entries (a signature authorizes one entry), signed entries later than the
 * signature skew after their timestamp (the memory of used signatures no
 * longer covers them), and entries older than the project's retention.
 * Throws {@linkcode ProjectNotFoundError} when the project does not exist.
 *
 * @example
 * ```ts
 * const results = await replayRejected(kv, projectId, undefined, { authenticate });
 * ```
 */
export async function replayRejected(
  kv: Deno.Kv,
  projectId: string,
  entryIds: string[] | undefined,
  options: ReplayOptions,
): Promise<ReplayResult[]> {
  const now = options.now ?? Date.now;
  if ((await kv.get(projectKey(projectId))).versionstamp === null) {
    throw new ProjectNotFoundError(projectId);
  }
  const slots = (await readSlots(kv, rejectedEntriesPrefix(projectId)))
    .reverse();
  const wanted = entryIds ?? slots.map((s) => s.kept.entryId);
  const results: ReplayResult[] = [];
  for (const entryId of new Set(wanted)) {
    const slot = slots.find((s) => s.kept.entryId === entryId);
    results.push(
      slot
        ? await replayOne(kv, projectId, slot.key, entryId, { ...options, now })
        : { entryId, outcome: "missing" },
    );
  }
  return results;
}

async function replayOne(
  kv: Deno.Kv,
  projectId: string,
  slotKey: Deno.KvKey,
  entryId: string,
  options: Required<ReplayOptions>,
): Promise<ReplayResult> {
  for (let attempt = 0; attempt < REPLAY_ATTEMPTS; attempt++) {
    const [record, slot] = await kv.getMany([projectKey(projectId), slotKey]);
    const project = decodeJson<Project>(record!.value);
    if (project === null) throw new ProjectNotFoundError(projectId);
    const kept = decodeJson<KeptEntry>(slot!.value);
    if (kept === null || kept.entryId !== entryId) {
      return { entryId, outcome: "missing" };
    }
    const skip = (why: string): ReplayResult => ({
      entryId,
      outcome: "skipped",
      why,
    });
    const entry = kept.entry;
    if (entry === undefined) {
      return skip(`its content (${kept.omittedBytes} bytes) was not kept`);
    }
    if (kept.reason === "replayed") {
      return skip("its signature was already used by another entry");
    }
    if (kept.scrubbed && entry.signature !== undefined) {
      return skip("its content was scrubbed, so its signature cannot verify");
    }
    const maxSkewMs = kept.maxSkewMs ?? DEFAULT_MAX_SKEW_MS;
    const verdict = options.authenticate(entry, project, maxSkewMs);
    if (!verdict.ok) {
      return { entryId, outcome: "rejected", reason: verdict.reason };
    }
    const now = options.now();
    const expireIn = entry.receivedAt + project.retentionDays * DAY_MS - now;
    if (expireIn <= 0) return skip("it is older than the project's retention");
    const op = kv.atomic().check(record!).check(slot!);
    if (verdict.method === "signature") {
      if (now > Number(entry.timestamp) + maxSkewMs) {
        return skip("its signature is older than the signature skew");
      }
      const key = seenSignatureKey(projectId, entry.signature!);
      const seen = await kv.get(key);
      const holder = decodeJson<string>(seen.value);
      if (holder !== null && holder !== entryId) {
        return { entryId, outcome: "rejected", reason: "replayed" };
      }
      op.check(seen).set(key, encodeJson(entryId), { expireIn: 2 * maxSkewMs });
    }
    // Scrubbed by the project's rules of now (docs/privacy.md).
    const stored =
      scrubAccepted(project, toLogRecord(entry, verdict.method), undefined)
        .record;
    op.delete(slotKey);
    storeLogs(op, projectId, [stored], {
      now,
      retentionMs: project.retentionDays * DAY_MS,
    });
    op.sum(acceptedCountKey(projectId), 1n);
    op.sum(replayedCountKey(projectId), 1n);
    addErrorGroups(op, projectId, [stored]);
    if ((await op.commit()).ok) {
      return { entryId, outcome: "stored", auth: verdict.method };
    }
  }
  throw new Error(`Cannot replay entry "${entryId}": its keys kept changing`);
}

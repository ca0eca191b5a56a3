/**
 * The consumer: turns a pending batch into stored entries. It authenticates
 * each entry, refuses replayed signatures, and commits the stored entries,
 * the counters and the recent rejections together with the deletion of the
 * pending batch, guarded by the batch's versionstamp. Whoever commits first
 * wins; a redelivery, a second process or a retry then finds nothing to do,
 * so every entry is stored and counted exactly once.
 *
 * @module
 */
import {
  authenticate,
  type AuthResult,
  type RejectReason,
} from "../auth/authenticate.ts";
import type { ProjectCache } from "../auth/projects.ts";
import {
  acceptedCountKey,
  batchPartKey,
  deadLetterKey,
  globalRejectedCountKey,
  pendingBatchKey,
  rejectedCountKey,
  rejectedTotalKey,
  rejectionKey,
  seenSignatureKey,
} from "../db/keys.ts";
import { type LogRecord, storeLogs } from "../db/logs.ts";
import { joinParts } from "../db/parts.ts";
import type { Project } from "../db/projects.ts";
import {
  type BatchHeader,
  type HandedBatch,
  isEntryList,
  type QueuedEntry,
} from "./batch.ts";

/** Recent rejections kept per project. */
export const RECENT_REJECTIONS = 100;
/** How long a recent rejection is kept. */
const REJECTION_TTL_MS = 30 * 86_400_000;
/** Failed attempts after which a batch becomes a dead letter. */
export const MAX_ATTEMPTS = 5;
/** Wait before attempt n+1 after n failures. */
const BACKOFF_MS = [1000, 5000, 30_000, 60_000];

/** One entry of a project's recent rejections. */
export interface Rejection {
  entryId: string;
  /** Receipt time, Unix milliseconds. */
  at: number;
  reason: RejectReason;
  level: string;
  origin?: string;
  appid?: string;
}

/** Thrown for a batch whose stored form cannot be read. */
export class BatchFormatError extends Error {
  override name = "BatchFormatError";
}

/** Whether `value` is a plain object, as a stored header is. */
function isRecord(value: unknown): value is BatchHeader {
  return typeof value === "object" && value !== null &&
    Object.getPrototypeOf(value) === Object.prototype;
}

/** A pending batch ready to process. */
interface BatchRead {
  /** Key and versionstamp the result commit is guarded by. */
  pending: { key: Deno.KvKey; versionstamp: string };
  parts: number;
  entries: QueuedEntry[];
}

/** A batch handed over in memory, in the form of one read from KV. */
function handedBatch(batchId: string, handed: HandedBatch): BatchRead {
  return {
    pending: {
      key: pendingBatchKey(batchId),
      versionstamp: handed.versionstamp,
    },
    parts: handed.parts,
    entries: handed.entries,
  };
}

/** Options of {@linkcode Consumer}. */
export interface ConsumerOptions {
  kv: Deno.Kv;
  projects: ProjectCache;
  /** Accepted signature timestamp distance from receipt. */
  maxSkewMs: number;
  /** Clock. @default {Date.now} */
  now?: () => number;
}

/** What {@linkcode Consumer.process} did. */
export type ProcessOutcome = "processed" | "absent" | "conflict";

/** Processes pending batches; safe to run in several processes at once. */
export class Consumer {
  #kv: Deno.Kv;
  #projects: ProjectCache;
  #maxSkewMs: number;
  #now: () => number;

  constructor(options: ConsumerOptions) {
    this.#kv = options.kv;
    this.#projects = options.projects;
    this.#maxSkewMs = options.maxSkewMs;
    this.#now = options.now ?? Date.now;
  }

  /**
   * Processes batch `batchId`: `"absent"` when it was already processed,
   * `"conflict"` when another processor committed it meanwhile.
   */
  async process(
    batchId: string,
    handed?: HandedBatch,
  ): Promise<ProcessOutcome> {
    const kv = this.#kv;
    const read = handed
      ? handedBatch(batchId, handed)
      : await this.#read(batchId);
    if (read === null) return "absent";
    const { pending, parts, entries } = read;
    const projects = await this.#projects.getMany(
      entries.map((e) => e.projectId),
    );
    const results = entries.map((entry) =>
      authenticate(
        entry,
        projects.get(entry.projectId) ?? null,
        this.#maxSkewMs,
      )
    );
    await this.#refuseReplays(entries, results);
    const op = kv.atomic().check(pending).delete(pendingBatchKey(batchId));
    for (let n = 1; n < parts; n++) op.delete(batchPartKey(batchId, n));
    await this.#addResults(op, entries, results, projects);
    return (await op.commit()).ok ? "processed" : "conflict";
  }

  /** Reads a pending batch back from KV: `null` when there is none. */
  async #read(batchId: string): Promise<BatchRead | null> {
    const pending = await this.#kv.get<BatchHeader>(pendingBatchKey(batchId));
    // Absent means no key: a key holding null is a batch that cannot be read.
    if (pending.versionstamp === null) return null;
    const header = pending.value;
    let entries: unknown;
    try {
      entries = await joinParts(
        this.#kv,
        header.head,
        header.parts,
        (n) => batchPartKey(batchId, n),
      );
    } catch (error) {
      throw new BatchFormatError(`Cannot read batch "${batchId}"`, {
        cause: error,
      });
    }
    if (!isEntryList(entries)) {
      throw new BatchFormatError(
        `Cannot read batch "${batchId}": not a list of entries`,
      );
    }
    return { pending, parts: header.parts, entries };
  }

  /**
   * Records a failed attempt: the batch is retried after a backoff, and after
   * {@linkcode MAX_ATTEMPTS} it moves to the dead letters.
   */
  async recordFailure(
    batchId: string,
    error: unknown,
  ): Promise<"retry" | "dead_letter" | "absent"> {
    const pending = await this.#kv.get<BatchHeader>(pendingBatchKey(batchId));
    if (pending.versionstamp === null) return "absent";
    // A value that is not a header (corrupt, or written by another version) is
    // kept whole under `value` and counts its attempts from 0, so that it too
    // reaches the dead letters instead of being retried forever.
    const previous = isRecord(pending.value)
      ? pending.value
      : { value: pending.value } as unknown as BatchHeader;
    const attempts =
      (Number.isInteger(previous.attempts) ? previous.attempts : 0) + 1;
    const message = error instanceof Error ? error.message : String(error);
    const now = this.#now();
    if (attempts >= MAX_ATTEMPTS) {
      const { retryAt: _, ...rest } = previous;
      const result = await this.#kv.atomic().check(pending)
        .delete(pendingBatchKey(batchId))
        .set(deadLetterKey(batchId), { ...rest, attempts, error: message })
        .commit();
      return result.ok ? "dead_letter" : "absent";
    }
    const header: BatchHeader = {
      ...previous,
      attempts,
      error: message,
      retryAt: now + BACKOFF_MS[Math.min(attempts, BACKOFF_MS.length) - 1]!,
    };
    await this.#kv.atomic().check(pending)
      .set(pendingBatchKey(batchId), header).commit();
    return "retry";
  }

  /**
   * Claims the signature of every signature-authorized entry before the
   * results are committed: a claim writes the entry's id under
   * `seen_signatures/<projectId>/<signature>` with a check on the key's
   * versionstamp, so that of two processes accepting the same signature only
   * one wins. An entry whose signature is held by another entry becomes
   * `replayed`; one holding it itself (a redelivery) is no replay.
   */
  async #refuseReplays(
    entries: QueuedEntry[],
    results: AuthResult[],
  ): Promise<void> {
    const todo = entries.flatMap((_entry, i) => {
      const r = results[i]!;
      return r.ok && r.method === "signature" ? [i] : [];
    });
    const holders = new Map<string, string>();
    const keyOf = (entry: QueuedEntry) =>
      seenSignatureKey(entry.projectId, entry.signature!);
    while (todo.length > 0) {
      const chunk = todo.splice(0, 10);
      const seen = await this.#kv.getMany<string[]>(
        chunk.map((i) => keyOf(entries[i]!)),
      );
      const op = this.#kv.atomic();
      const claiming: number[] = [];
      chunk.forEach((i, j) => {
        const entry = entries[i]!;
        const local = `${entry.projectId}\n${entry.signature}`;
        const holder = seen[j]!.value ?? holders.get(local);
        if (holder != null && holder !== entry.id) {
          results[i] = { ok: false, reason: "replayed" };
          return;
        }
        holders.set(local, entry.id);
        if (seen[j]!.value === entry.id) return;
        op.check(seen[j]!).set(keyOf(entry), entry.id, {
          expireIn: 2 * this.#maxSkewMs,
        });
        claiming.push(i);
      });
      if (claiming.length > 0 && !(await op.commit()).ok) {
        // Another process claimed one of them meanwhile: read them again.
        for (const i of claiming) {
          holders.delete(`${entries[i]!.projectId}\n${entries[i]!.signature}`);
        }
        todo.unshift(...claiming);
      }
    }
  }

  async #addResults(
    op: Deno.AtomicOperation,
    entries: QueuedEntry[],
    results: AuthResult[],
    projects: Map<string, Project | null>,
  ): Promise<void> {
    const now = this.#now();
    const accepted = new Map<string, LogRecord[]>();
    const rejected = new Map<string, Map<RejectReason, number>>();
    const unknown = new Map<RejectReason, number>();
    const rejections = new Map<string, Rejection[]>();
    const bump = <K>(map: Map<K, number>, key: K) =>
      map.set(key, (map.get(key) ?? 0) + 1);
    entries.forEach((entry, i) => {
      const result = results[i]!;
      const project = projects.get(entry.projectId) ?? null;
      if (result.ok && project) {
        const record: LogRecord = {
          id: entry.id,
          receivedAt: entry.receivedAt,
          level: entry.level,
          data: entry.data,
          device: entry.device ?? {},
          context: entry.context ?? {},
          auth: result.method,
        };
        if (entry.appid !== undefined) record.appid = entry.appid;
        if (entry.origin !== undefined) record.origin = entry.origin;
        const list = accepted.get(project.id);
        if (list) list.push(record);
        else accepted.set(project.id, [record]);
      } else if (!result.ok && project === null) {
        bump(unknown, result.reason);
      } else if (!result.ok && project) {
        const reasons = rejected.get(project.id) ?? new Map();
        rejected.set(project.id, bump(reasons, result.reason));
        const list = rejections.get(project.id) ?? [];
        list.push({
          entryId: entry.id,
          at: entry.receivedAt,
          reason: result.reason,
          level: entry.level,
          ...(entry.origin === undefined
            ? {}
            : { origin: entry.origin.slice(0, 256) }),
          ...(entry.appid === undefined ? {} : { appid: entry.appid }),
        });
        rejections.set(project.id, list);
      }
    });
    for (const [projectId, records] of accepted) {
      const retentionMs = projects.get(projectId)!.retentionDays * 86_400_000;
      records.sort((a, b) => a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
      storeLogs(op, projectId, records, { now, retentionMs });
      op.sum(acceptedCountKey(projectId), BigInt(records.length));
    }
    for (const [reason, n] of unknown) {
      op.sum(globalRejectedCountKey(reason), BigInt(n));
    }
    for (const [projectId, reasons] of rejected) {
      for (const [reason, n] of reasons) {
        op.sum(rejectedCountKey(projectId, reason), BigInt(n));
      }
    }
    // Recent rejections: a ring of slots per project, indexed by the running
    // total of rejections, so the ring holds the latest ones and never grows.
    const ids = [...rejections.keys()];
    for (let c = 0; c < ids.length; c += 10) {
      const chunk = ids.slice(c, c + 10);
      const totals = await this.#kv.getMany<Deno.KvU64[]>(
        chunk.map((id) => rejectedTotalKey(id)),
      );
      chunk.forEach((projectId, j) => {
        const base = Number(totals[j]?.value?.value ?? 0n);
        const list = rejections.get(projectId)!;
        const first = Math.max(0, list.length - RECENT_REJECTIONS);
        for (let k = first; k < list.length; k++) {
          op.set(
            rejectionKey(projectId, (base + k) % RECENT_REJECTIONS),
            list[k],
            { expireIn: REJECTION_TTL_MS },
          );
        }
        op.sum(rejectedTotalKey(projectId), BigInt(list.length));
      });
    }
  }
}

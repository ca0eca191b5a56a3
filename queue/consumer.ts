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
import { authenticate, type AuthResult } from "../auth/authenticate.ts";
import type { ProjectCache } from "../auth/projects.ts";
import { batchPartKey, pendingBatchKey, seenSignatureKey } from "../db/keys.ts";
import {
  ATOMIC_MAX_CHECKS,
  decodeJson,
  encodeJson,
  getManyChunked,
} from "../db/kv.ts";
import { paginate, setLogPage } from "../db/logs.ts";
import { joinParts } from "../db/parts.ts";
import type { Project } from "../db/projects.ts";
import { addStats, StatsTally } from "../db/stats.ts";
import { DAY_MS, type LogRecord, type QueuedEntry } from "../domain/entry.ts";
import {
  BatchFormatError,
  decodeBatchHeader,
  type HandedBatch,
  isEntryList,
} from "./batch.ts";

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
    const pending = await this.#kv.get(pendingBatchKey(batchId));
    // Absent means no key: a key holding null is a batch that cannot be read.
    if (pending.versionstamp === null) return null;
    const header = decodeBatchHeader(pending.value);
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
      // One atomic operation checks at most ATOMIC_MAX_CHECKS keys.
      const chunk = todo.splice(0, ATOMIC_MAX_CHECKS);
      const seen = await getManyChunked(
        this.#kv,
        chunk.map((i) => keyOf(entries[i]!)),
      );
      const op = this.#kv.atomic();
      const claiming: number[] = [];
      chunk.forEach((i, j) => {
        const entry = entries[i]!;
        const local = `${entry.projectId}\n${entry.signature}`;
        const stored = decodeJson<string>(seen[j]!.value);
        const holder = stored ?? holders.get(local);
        if (holder != null && holder !== entry.id) {
          results[i] = { ok: false, reason: "replayed" };
          return;
        }
        holders.set(local, entry.id);
        if (stored === entry.id) return;
        op.check(seen[j]!).set(keyOf(entry), encodeJson(entry.id), {
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
    const tally = new StatsTally();
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
        tally.rejectUnknownProject(result.reason);
      } else if (!result.ok && project) {
        tally.reject(project.id, {
          entryId: entry.id,
          at: entry.receivedAt,
          reason: result.reason,
          level: entry.level,
          ...(entry.origin === undefined ? {} : { origin: entry.origin }),
          ...(entry.appid === undefined ? {} : { appid: entry.appid }),
        });
      }
    });
    for (const [projectId, records] of accepted) {
      const retentionMs = projects.get(projectId)!.retentionDays * DAY_MS;
      records.sort((a, b) => a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
      for (const page of paginate(records)) {
        const expireAt = page[0]!.receivedAt + retentionMs;
        setLogPage(op, projectId, page, Math.max(1000, expireAt - now));
      }
      tally.accept(projectId, records.length);
    }
    await addStats(this.#kv, op, tally);
  }
}

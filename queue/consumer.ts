/**
 * The consumer: turns a pending batch into stored entries. It authenticates
 * each entry, refuses replayed signatures, and commits the stored entries,
 * the counters and the recent rejections together with the deletion of the
 * pending batch, guarded by the batch's versionstamp and by the versionstamp
 * of every project record it judged with. Whoever commits first wins; a
 * redelivery, a second process or a retry then finds nothing to do, so every
 * entry is stored and counted exactly once; and a project changed or deleted
 * meanwhile makes the commit fail, so the batch is judged again on the fresh
 * records instead of storing under a project that is gone
 * (docs/design.md#processing-exactly-once).
 *
 * Given a write gate (the disk space guard), it leaves batches pending while
 * the disk is full: it starts none while the gate is closed, and a batch
 * whose writes fail for space stays pending without counting as a failed
 * attempt (which would carry it to the dead letters during a long outage);
 * the sweeper finds it again once writes resume (docs/design.md#full-disk).
 *
 * @module
 */
import {
  authenticate,
  type AuthResult,
  expectedSignedText,
} from "../auth/authenticate.ts";
import type { ProjectCache } from "../auth/projects.ts";
import { type AtomicWriter, RecordedAtomic } from "../db/atomic.ts";
import { batchProgressKey, pendingBatchKey, projectKey } from "../db/keys.ts";
import { isDiskFullError } from "../db/disk.ts";
import { GroupBudget } from "../db/group_budget.ts";
import { ATOMIC_MAX_CHECKS, decodeJson, getManyChunked } from "../db/kv.ts";
import { lineFromQueued } from "../db/storage/lines.ts";
import { encodeKeptEntry } from "../db/rejected.ts";
import type { Project } from "../db/projects.ts";
import type { GrantedBatch } from "../db/quota.ts";
import { scrubAccepted } from "../db/scrub.ts";
import { addStats, StatsTally } from "../db/stats.ts";
import {
  type LogRecord,
  type QueuedEntry,
  senderJson,
  toLogRecord,
} from "../domain/entry.ts";
import { scrubRecords } from "./accept.ts";
import { admitAndAccept } from "./admit.ts";
import { addUsage } from "../db/usage.ts";
import { type ResolveStacks, SourceMapResolver } from "../db/symbolicate.ts";
import {
  BatchFormatError,
  decodeBatchHeader,
  type HandedBatch,
  isEntryList,
  readBatchSlices,
} from "./batch.ts";
import { claimSignatures, type Reads } from "./claims.ts";
import { Locks } from "./locks.ts";
import { MAX_BATCH_ENTRIES, type WriteGate } from "./producer.ts";
import {
  type BatchRead,
  grantedBatches,
  type Guard,
  planRound,
  type Progress,
  roundCommit,
} from "./rounds.ts";

/** Project records one result commit checks beside the pending key. */
const PROJECT_CHECKS = ATOMIC_MAX_CHECKS - 1;
/** The lock name of the ring of rejections naming no existing project. */
const GLOBAL_RING = "";

/** Times a batch is judged again on fresh project records before it fails. */
const MAX_REJUDGEMENTS = 5;

/** A batch handed over in memory, in the form of one read from KV. */
function handedBatch(batchId: string, handed: HandedBatch): BatchRead {
  return {
    pending: {
      key: pendingBatchKey(batchId),
      versionstamp: handed.versionstamp,
    },
    slices: handed.slices,
    entries: handed.entries,
    texts: handed.texts,
  };
}

/** Each entry's JSON as committed, by entry, when it was handed over. */
function textsByEntry(read: BatchRead): Map<QueuedEntry, string> | undefined {
  const { texts } = read;
  return texts && new Map(read.entries.map((e, i) => [e, texts[i]!]));
}

/** Batches one result commit takes at most (each adds a check). */
export const MAX_GROUP_BATCHES = 8;
/** UTF-16 units of entries one group of batches holds at most. */
const MAX_GROUP_CHARS = 128_000;

/**
 * Whether `batches`, handed over together, can be processed as one
 * ({@linkcode Consumer.processGroup}): at most
 * {@linkcode MAX_GROUP_BATCHES} batches and `MAX_BATCH_ENTRIES` entries
 * (the result commit's mutations), 128,000 characters of entries (its
 * bytes), and their pending keys and projects within KV's checks of one
 * atomic operation.
 *
 * @example
 * ```ts
 * groupFits([a, b]); // true for two small batches of one project
 * ```
 */
export function groupFits(batches: HandedBatch[]): boolean {
  if (batches.length > MAX_GROUP_BATCHES) return false;
  const projects = new Set<string>();
  let entries = 0;
  let chars = 0;
  for (const b of batches) {
    const size = sizeOf(b);
    entries += b.entries.length;
    chars += size.chars;
    for (const id of size.projects) projects.add(id);
  }
  return entries <= MAX_BATCH_ENTRIES && chars <= MAX_GROUP_CHARS &&
    projects.size + batches.length <= ATOMIC_MAX_CHECKS;
}

/**
 * A handed batch's characters and projects, counted once: the worker asks
 * {@linkcode groupFits} again for every batch that joins the group at its
 * head, and a batch handed over never changes.
 */
const sizes = new WeakMap<HandedBatch, { chars: number; projects: string[] }>();

function sizeOf(batch: HandedBatch): { chars: number; projects: string[] } {
  let size = sizes.get(batch);
  if (size) return size;
  const projects = new Set<string>();
  for (const e of batch.entries) projects.add(e.projectId);
  let chars = 0;
  for (const t of batch.texts) chars += t.length;
  size = { chars, projects: [...projects] };
  sizes.set(batch, size);
  return size;
}

/** Options of {@linkcode Consumer}. */
export interface ConsumerOptions {
  kv: Deno.Kv;
  projects: ProjectCache;
  /** Accepted signature timestamp distance from receipt. */
  maxSkewMs: number;
  /** Clock. @default {Date.now} */
  now?: () => number;
  /**
   * Waits before a commit refused as locked is sent again
   * (docs/design.md#group-commit). @default a `setTimeout`
   */
  sleep?: (ms: number) => Promise<void>;
  /**
   * While closed, no batch is processed; told of the writes that failed for
   * space (the disk space guard, docs/design.md#full-disk).
   */
  gate?: WriteGate;
  /**
   * Resolves stacks through source maps elsewhere (the query thread).
   * @default in this thread
   */
  resolveStacks?: ResolveStacks;
}

/** What {@linkcode Consumer.process} did. */
export type ProcessOutcome = "processed" | "absent" | "conflict";

/** Processes pending batches; safe to run in several processes at once. */
export class Consumer {
  #rings = new Locks();
  #kv: Deno.Kv;
  #projects: ProjectCache;
  #maxSkewMs: number;
  #now: () => number;
  #gate: WriteGate | undefined;
  /** Stacks resolved through source maps at write time (docs/errors.md#source-maps). */
  #maps: SourceMapResolver;
  /** Makes a result commit, sent again while refused as locked. */
  #commit: (
    result: RecordedAtomic,
  ) => Promise<Deno.KvCommitResult | Deno.KvCommitError>;

  constructor(options: ConsumerOptions) {
    const { kv, sleep } = options;
    this.#kv = kv;
    this.#commit = (result) => result.commit(kv, sleep ? { sleep } : {});
    this.#projects = options.projects;
    this.#maxSkewMs = options.maxSkewMs;
    this.#now = options.now ?? Date.now;
    this.#gate = options.gate;
    this.#maps = new SourceMapResolver(kv, {
      now: this.#now,
      ...(options.resolveStacks
        ? { resolveStacks: options.resolveStacks }
        : {}),
    });
  }

  /**
   * Processes batch `batchId`: `"absent"` when it was already processed,
   * `"conflict"` when another processor committed it meanwhile or when the
   * gate holds writes back (the batch stays pending).
   */
  async process(
    batchId: string,
    handed?: HandedBatch,
  ): Promise<ProcessOutcome> {
    const gate = this.#gate;
    if (!gate) return await this.#process(batchId, handed);
    // "conflict": not processed here, and still pending for whoever comes next.
    if (!gate.open()) return "conflict";
    try {
      return await this.#process(batchId, handed);
    } catch (error) {
      if (!isDiskFullError(error)) throw error;
      gate.failed(error);
      return "conflict";
    }
  }

  /**
   * Processes batches handed over together (each {@linkcode groupFits}) as
   * one: one judgement, one result commit that checks and deletes every
   * pending key, one chunk per project. `"conflict"` when any of them was
   * taken by another processor meanwhile, or the gate holds writes back:
   * nothing of the group was committed, and each is processed alone then.
   */
  async processGroup(batches: HandedBatch[]): Promise<ProcessOutcome> {
    const [first, ...rest] = batches;
    if (!first) return "absent";
    if (rest.length === 0) return await this.process(first.id, first);
    const read = handedBatch(first.id, first);
    read.entries = batches.flatMap((b) => b.entries);
    read.texts = batches.flatMap((b) => b.texts);
    read.others = rest.map((b) => ({
      id: b.id,
      pending: { key: pendingBatchKey(b.id), versionstamp: b.versionstamp },
      slices: b.slices,
      ids: new Set(b.entries.map((e) => e.id)),
    }));
    const gate = this.#gate;
    if (!gate) return await this.#process(first.id, undefined, read);
    if (!gate.open()) return "conflict";
    try {
      return await this.#process(first.id, undefined, read);
    } catch (error) {
      if (!isDiskFullError(error)) throw error;
      gate.failed(error);
      return "conflict";
    }
  }

  async #process(
    batchId: string,
    handed: HandedBatch | undefined,
    group?: BatchRead,
  ): Promise<ProcessOutcome> {
    const read = group ??
      (handed ? handedBatch(batchId, handed) : await this.#read(batchId));
    if (read === null) return "absent";
    const texts = textsByEntry(read);
    const ids = new Set<string>();
    for (const entry of read.entries) ids.add(entry.projectId);
    // Decided by the batch's content alone, so every processor decides alike.
    const progress = ids.size > PROJECT_CHECKS
      ? await this.#readProgress(batchId)
      : null;
    const projects = await this.#projects.getMany(ids);
    for (let judged = 1;; judged++) {
      if (judged > MAX_REJUDGEMENTS) {
        throw new Error(
          `Cannot process batch "${batchId}": its projects kept changing`,
        );
      }
      const entries = progress
        ? read.entries.filter((e) => !progress.done.has(e.projectId))
        : read.entries;
      const results = entries.map((entry) =>
        authenticate(
          entry,
          projects.get(entry.projectId)!.project,
          this.#maxSkewMs,
        )
      );
      const current = await claimSignatures({
        kv: this.#kv,
        entries,
        results,
        projects,
        cache: this.#projects,
        maxSkewMs: this.#maxSkewMs,
        commit: this.#commit,
      });
      if (!current) continue;
      const round = planRound(ids, projects, progress);
      const op = roundCommit(batchId, read, round, projects, progress);
      const inRound = (id: string) => round.final || round.projects.has(id);
      const taken = round.final
        ? entries
        : entries.filter((e) => inRound(e.projectId));
      const verdicts = round.final
        ? results
        : results.filter((_r, i) => inRound(entries[i]!.projectId));
      const result = await this.#store(op, taken, verdicts, projects, {
        batches: grantedBatches(batchId, read),
        texts,
      });
      if (result.ok && round.final) return "processed";
      if (result.ok) {
        for (const id of round.projects) progress!.done.add(id);
        progress!.versionstamp = result.versionstamp;
        judged--; // a round committed is progress, not a judgement lost
        continue;
      }
      const checked = [...round.projects];
      const pendings = [
        read.pending,
        ...(read.others ?? []).map((o) => o.pending),
      ];
      if (!await this.#reread(pendings, progress, checked, projects)) {
        return "conflict";
      }
    }
  }

  /**
   * Commits `op` with the results of `taken`; the rings of recent
   * rejections place entries by a running total read before the commit,
   * so one commit at a time per ring in this process.
   */
  async #store(
    op: RecordedAtomic,
    taken: QueuedEntry[],
    verdicts: AuthResult[],
    projects: Reads,
    batch: {
      batches: GrantedBatch[];
      texts: Map<QueuedEntry, string> | undefined;
    },
  ): Promise<Deno.KvCommitResult | Deno.KvCommitError> {
    const rings: string[] = [];
    verdicts.forEach((verdict, i) => {
      if (verdict.ok) return;
      const id = taken[i]!.projectId;
      rings.push(projects.get(id)!.project ? id : GLOBAL_RING);
    });
    return await this.#rings.hold(rings, async () => {
      await this.#addResults(op, taken, verdicts, projects, batch);
      return await this.#commit(op);
    });
  }

  /** Reads what a batch committed in rounds has done so far. */
  async #readProgress(batchId: string): Promise<Progress> {
    const entry = await this.#kv.get(batchProgressKey(batchId));
    return {
      key: entry.key,
      versionstamp: entry.versionstamp,
      done: new Set(decodeJson<string[]>(entry.value) ?? []),
    };
  }

  /**
   * After a failed commit: `false` when the batch (or one of a group) was
   * taken by another processor (its pending key or progress changed); otherwise the project
   * records of `ids` are read again into `projects` and the cache.
   */
  async #reread(
    pendings: Guard[],
    progress: Progress | null,
    ids: string[],
    projects: Reads,
  ): Promise<boolean> {
    const guards = progress ? [...pendings, progress] : pendings;
    const fresh = await getManyChunked(this.#kv, [
      ...guards.map((g) => g.key),
      ...ids.map((id) => projectKey(id)),
    ]);
    if (guards.some((g, j) => fresh[j]!.versionstamp !== g.versionstamp)) {
      return false;
    }
    ids.forEach((id, j) =>
      projects.set(id, this.#projects.remember(id, fresh[guards.length + j]!))
    );
    return true;
  }

  /** Reads a pending batch back from KV: `null` when there is none. */
  async #read(batchId: string): Promise<BatchRead | null> {
    const pending = await this.#kv.get(pendingBatchKey(batchId));
    // Absent means no key: a key holding null is a batch that cannot be read.
    if (pending.versionstamp === null) return null;
    const header = decodeBatchHeader(pending.value);
    if (header.unreadable) {
      // A value kept from a failed attempt: it failed, and fails again.
      throw new BatchFormatError(
        `Cannot read batch "${batchId}": its header was not readable`,
      );
    }
    let entries: unknown;
    try {
      entries = await readBatchSlices(this.#kv, batchId, header.slices);
    } catch (error) {
      // Processed by another process between the two reads: nothing to do.
      const again = await this.#kv.get(pendingBatchKey(batchId));
      if (again.versionstamp !== pending.versionstamp) return null;
      throw new BatchFormatError(`Cannot read batch "${batchId}"`, {
        cause: error,
      });
    }
    if (!isEntryList(entries)) {
      throw new BatchFormatError(
        `Cannot read batch "${batchId}": not a list of entries`,
      );
    }
    return { pending, slices: header.slices, entries };
  }

  /**
   * The kept form of a rejected entry (docs/design.md#kept-rejected-entries),
   * scrubbed as an accepted one would be (docs/privacy.md).
   */
  #keep(
    sent: QueuedEntry,
    result: AuthResult & { ok: false },
    project: Project | null,
  ): Uint8Array {
    const entry = scrubAccepted(project, sent, undefined).record;
    const scrubbed = entry !== sent;
    return encodeKeptEntry(entry, result.reason, {
      maxSkewMs: this.#maxSkewMs,
      ...(result.reason === "bad_signature"
        ? { expected: expectedSignedText(entry) }
        : {}),
      ...(scrubbed ? { scrubbed } : {}),
    });
  }

  async #addResults(
    op: AtomicWriter,
    entries: QueuedEntry[],
    results: AuthResult[],
    reads: Reads,
    { batches, texts }: {
      batches: GrantedBatch[];
      texts?: Map<QueuedEntry, string> | undefined;
    },
  ): Promise<void> {
    const projects = new Map([...reads].map(([id, r]) => [id, r.project]));
    const now = this.#now();
    const accepted = new Map<string, LogRecord[]>();
    // Lines cut from the committed JSON (db/storage/lines.ts, lineFromQueued).
    const lines = new Map<LogRecord, string>();
    const tally = new StatsTally();
    entries.forEach((entry, i) => {
      const result = results[i]!;
      const project = projects.get(entry.projectId) ?? null;
      if (result.ok && project) {
        const record = toLogRecord(entry, result.method);
        const text = texts?.get(entry);
        const line = text === undefined
          ? undefined
          : lineFromQueued(text, entry, result.method);
        if (line !== undefined) lines.set(record, line);
        const list = accepted.get(project.id);
        if (list) list.push(record);
        else accepted.set(project.id, [record]);
      } else if (!result.ok && project === null) {
        tally.rejectUnknownProject(
          result.reason,
          this.#keep(entry, result, null),
        );
      } else if (!result.ok && project) {
        tally.reject(project.id, {
          entryId: entry.id,
          at: entry.receivedAt,
          reason: result.reason,
          level: entry.level,
          ...senderJson(entry),
        }, this.#keep(entry, result, project));
      }
    });
    // The commit's room for error groups and releases, shared by its projects.
    const budget = new GroupBudget(accepted.size);
    for (const [projectId, records] of accepted) {
      const project = projects.get(projectId)!;
      // Scrubbed before anything is read from them (docs/privacy.md).
      const scrubbed = scrubRecords(project, records, (r) => lines.get(r));
      const lineOf = await this.#maps.resolveRecords(
        projectId,
        records,
        scrubbed,
      );
      await admitAndAccept(this.#kv, op, {
        batches,
        project,
        versionstamp: reads.get(projectId)!.versionstamp,
        records,
        lineOf,
        now,
        share: budget.share(),
      });
    }
    for (const [projectId, reasons] of tally.rejected) {
      let rejected = 0;
      for (const n of reasons.values()) rejected += n;
      addUsage(op, projectId, now, { rejected });
    }
    await addStats(this.#kv, op, tally);
  }
}

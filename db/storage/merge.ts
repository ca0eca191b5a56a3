/**
 * The merger: combines a project's small chunks into larger ones and ends
 * the chunks past the project's retention, while traffic goes on.
 *
 * The consumer writes every batch as a chunk of tier 0
 * (db/storage/write.ts): already compressed and searchable, but small when
 * traffic is light, and small chunks compress worse and cost a listing each.
 * A round lists a project's summaries and merges the groups
 * db/storage/tiers.ts picks.
 *
 * A merge is one atomic commit: delete the source chunks, write the merged
 * chunk under the last id of the newest source, bump
 * `log_merges/<projectId>`, checked against that counter and the
 * project record as read when the round started. Two processes merging the
 * same project cannot both commit, a project deleted meanwhile is not
 * written to again, and readers that saw the counter move read again
 * (db/query/consistent.ts).
 *
 * Each round also deletes the chunks whose newest entry is past the
 * project's retention, by the clock it is given (KV's own expiry is the
 * backstop), and the histogram counters past it.
 *
 * @module
 */
import { DAY_MS } from "../../domain/entry.ts";
import { idTime, timeBound } from "../../domain/ids.ts";
import {
  acceptedCountKey,
  logChunkKey,
  logMergesKey,
  logSummariesPrefix,
  logUnitId,
  projectKey,
} from "../keys.ts";
import { ATOMIC_MAX_MUTATIONS, decodeJson, getManyChunked } from "../kv.ts";
import {
  chunkExpireIn,
  chunkKeyCount,
  deleteChunk,
  replaceChunks,
} from "./write.ts";
import {
  bumpCoarseState,
  deletePendingOf,
  groupPending,
  movesGrouped,
  prepareCoarse,
  setPending,
} from "./coarse_groups.ts";
import { idBefore } from "./lines.ts";
import { deleteExpiredCounts } from "../log_counts.ts";
import { deleteOldUsage } from "../usage.ts";
import { sweepErrorGroups } from "../error_groups.ts";
import { sweepReleases } from "../releases.ts";
import { sweepLooseSlices } from "../sourcemaps.ts";
import { chunkRetentionMs, longestRetentionMs } from "../retention_rules.ts";
import { levelsPast, pruneChunk } from "./prune.ts";
import { listProjects, type Project } from "../projects.ts";
import {
  buildChunkPausing,
  CHUNK_MAX_BYTES,
  CHUNK_TARGET_BYTES,
  type ChunkSummary,
  decodeSummary,
  FINAL_TIER,
  readChunkText,
} from "./chunk.ts";
import {
  type Backlog,
  backlogOf,
  chooseGroups,
  DEFAULT_SETTLE_MS,
  emptyBacklog,
  isOpen,
} from "./tiers.ts";

/** Chunks whose end of retention one commit deletes at most. */
const EXPIRE_BATCH = 250;
/** Summaries one round lists at most per project, oldest first. */
const MAX_LISTED = 50_000;
/**
 * Summaries listed newest first, besides, when the oldest-first listing
 * stopped at its bound: the chunks the consumer writes now, which a project
 * of more chunks in retention would otherwise never merge nor count.
 */
const NEWEST_LISTED = 10_000;
/** JSON bytes a merged chunk holds at most, whatever the compression. */
const MAX_RAW_BYTES = 4_000_000;

/** Lets the event loop run: timers, arriving requests, finished commits. */
const nextTurn = () => new Promise<void>((resolve) => setTimeout(resolve, 0));

/** Options of {@linkcode mergeProject}. */
export interface MergeOptions {
  /** Clock reading, Unix ms. */
  now: number;
  /** Age after which a run of open chunks is merged whatever its size. @default {30000} */
  settleMs?: number;
  /**
   * Stop after this many merges in a project ({@linkcode mergeAll} gives
   * each project as many). @default {Infinity}
   */
  maxMerges?: number;
  /** Asked before each merge: stop when it says so. */
  shouldStop?: () => boolean;
  /**
   * Summaries listed oldest first per project (tests make it small).
   * @default {MAX_LISTED}
   */
  maxListed?: number;
  /**
   * Told of a project whose round failed; the round goes on with the next
   * projects. @default none: the failure ends the round
   */
  onProjectError?: (projectId: string, error: unknown) => void;
  /**
   * Awaited between merges and every few milliseconds of a chunk being
   * built (db/storage/chunk.ts `buildChunkPausing`), so that arriving
   * requests are not held. @default one turn of the event
   * loop (`setTimeout` 0)
   */
  pause?: () => Promise<void>;
  /**
   * Settled merged chunks a coarse group takes (db/storage/coarse.ts).
   * @default {COARSE_GROUP_CHUNKS}
   */
  coarseGroupChunks?: number;
  /**
   * Kept by a merger from round to round: the projects whose last round
   * found nothing to do, skipped while nothing is written to them
   * ({@linkcode QuietProjects}). @default none: every project is listed
   */
  quiet?: QuietProjects;
}

/**
 * How long a project whose round found nothing to merge and nothing to
 * expire is skipped while nothing is written to it: a server at rest lists
 * no summaries between, and what falls past the retention meanwhile is
 * deleted by KV's own expiry or at most this much later.
 */
export const QUIET_ROUND_MS = 60_000;

/**
 * Projects a merger skips, by id: the versionstamps of the project record,
 * its merge marker and its accepted counter when its round found nothing to
 * do (every write of entries sums the counter, every merge bumps the
 * marker, a change or deletion rewrites the record), until when (the next
 * settle of a run of open chunks, at most {@linkcode QUIET_ROUND_MS}), and
 * the backlog that round saw.
 */
export type QuietProjects = Map<
  string,
  { stamps: string; until: number; backlog: Backlog }
>;

/** What a round did and saw. */
export interface MergeResult {
  /** Merge commits made. */
  merges: number;
  /** Source chunks they replaced. */
  sources: number;
  /** Entries they rewrote. */
  entries: number;
  /** Compressed bytes of the chunks written. */
  bytes: number;
  /** Chunks deleted past the retention. */
  expired: number;
  /** What was left unmerged after the round. */
  backlog: Backlog;
}

function emptyResult(): MergeResult {
  return {
    merges: 0,
    sources: 0,
    entries: 0,
    bytes: 0,
    expired: 0,
    backlog: emptyBacklog(),
  };
}

/** Thrown inside a round when another writer changed the project. */
class ConflictError extends Error {}

/**
 * One round's hold on a project: every commit checks the project's record
 * and its merge marker, so a deletion or a round of another process makes
 * the round stop ({@linkcode ConflictError}).
 */
interface Round {
  kv: Deno.Kv;
  projectId: string;
  now: number;
  retentionMs: number;
  /** The retention of one chunk, and its levels already past their time. */
  retentionOf: (summary: ChunkSummary) => number;
  pastOf: (summary: ChunkSummary) => Set<string>;
  pause: () => Promise<void>;
  /** Summaries listed oldest first. */
  maxListed: number;
  result: MergeResult;
  /** An atomic operation guarded by the project and the marker. */
  guarded(): Deno.AtomicOperation;
  /** Commits `op`, or throws {@linkcode ConflictError}. */
  commit(op: Deno.AtomicOperation): Promise<void>;
  /**
   * Commits `op` checked as a guarded one but leaving the marker as it
   * is (it moves no entry), or throws {@linkcode ConflictError}.
   */
  commitUnmoved(op: Deno.AtomicOperation): Promise<void>;
}

function openRound(
  kv: Deno.Kv,
  project: Deno.KvEntryMaybe<unknown>,
  marker: Deno.KvEntryMaybe<Deno.KvU64>,
  options: MergeOptions & {
    projectId: string;
    retentionMs: number;
    retentionOf: Round["retentionOf"];
    pastOf: Round["pastOf"];
  },
  result: MergeResult,
): Round {
  const { projectId } = options;
  let versionstamp = marker.versionstamp;
  return {
    kv,
    projectId,
    now: options.now,
    retentionMs: options.retentionMs,
    retentionOf: options.retentionOf,
    pastOf: options.pastOf,
    pause: options.pause ?? nextTurn,
    maxListed: options.maxListed ?? MAX_LISTED,
    result,
    guarded: () =>
      kv.atomic()
        .check(project)
        .check({ key: logMergesKey(projectId), versionstamp })
        .sum(logMergesKey(projectId), 1n),
    async commit(op) {
      const committed = await op.commit();
      if (!committed.ok) throw new ConflictError();
      versionstamp = committed.versionstamp;
    },
    async commitUnmoved(op) {
      const checked = op.check(project)
        .check({ key: logMergesKey(projectId), versionstamp });
      if (!(await checked.commit()).ok) throw new ConflictError();
    },
  };
}

/**
 * One round over a project: deletes what is past its retention, then merges
 * the groups {@linkcode chooseGroups} picks. Safe to run in several
 * processes.
 *
 * @example
 * ```ts
 * const { merges, backlog } = await mergeProject(kv, projectId, { now: Date.now() });
 * ```
 */
export async function mergeProject(
  kv: Deno.Kv,
  projectId: string,
  options: MergeOptions,
): Promise<MergeResult> {
  const result: MergeResult = emptyResult();
  const [projectEntry, marker, accepted] = await kv.getMany<
    [unknown, Deno.KvU64, Deno.KvU64]
  >([
    projectKey(projectId),
    logMergesKey(projectId),
    acceptedCountKey(projectId),
  ]);
  const project = decodeJson<Project>(projectEntry!.value);
  if (project === null) return result;
  const stamps = `${projectEntry!.versionstamp} ${marker!.versionstamp} ${
    accepted!.versionstamp
  }`;
  const quiet = options.quiet?.get(projectId);
  if (quiet && quiet.stamps === stamps && options.now < quiet.until) {
    result.backlog = { ...quiet.backlog };
    return result;
  }
  options.quiet?.delete(projectId);
  // Retention by filter: chunks are kept for the longest, and each goes
  // once every level it holds is past its time (db/retention_rules.ts).
  const retentionMs = longestRetentionMs(project);
  const round = openRound(kv, projectEntry!, marker!, {
    ...options,
    projectId,
    retentionMs,
    retentionOf: (s) => chunkRetentionMs(project, Object.keys(s.levels)),
    pastOf: (s) => levelsPast(project, s, options.now),
  }, result);
  // Summaries, oldest first (as far as listed when a conflict stops it).
  const summaries: ChunkSummary[] = [];
  try {
    const newestFrom = await expireAndList(round, summaries);
    await prepareCoarse(round);
    await sweepProject(kv, project, options.now, retentionMs);
    const done: Merged = { sources: new Set(), written: [] };
    // A group left for a later round: the project is not quiet.
    let cut = false;
    const merged = mergedRatio(summaries);
    outer: for (const run of runsOf(summaries, newestFrom)) {
      const rawLimit = rawLimitOf(run, merged);
      const groups = chooseGroups(run, {
        now: options.now,
        settleMs: options.settleMs ?? DEFAULT_SETTLE_MS,
        rawLimit,
      });
      for (const group of groups) {
        const maxMerges = options.maxMerges ?? Infinity;
        if (result.merges >= maxMerges || options.shouldStop?.()) {
          cut = true;
          break outer;
        }
        await mergeGroup(round, group, rawLimit, done);
        await round.pause();
      }
    }
    await groupPending(round, options.coarseGroupChunks);
    result.backlog = backlogOf([
      ...summaries.filter((s) => !done.sources.has(s)),
      ...done.written,
    ]);
    if (result.merges === 0 && result.expired === 0 && !cut) {
      options.quiet?.set(projectId, {
        stamps,
        until: quietUntil(summaries, options),
        backlog: { ...result.backlog },
      });
    }
  } catch (error) {
    if (!(error instanceof ConflictError)) throw error;
    result.backlog = backlogOf(summaries);
  }
  return result;
}

/**
 * Until when a project whose round merged nothing may be skipped: the
 * first moment a run of two or more open chunks settles, at most
 * {@linkcode QUIET_ROUND_MS} from now.
 */
function quietUntil(summaries: ChunkSummary[], options: MergeOptions): number {
  const settleMs = options.settleMs ?? DEFAULT_SETTLE_MS;
  let until = options.now + QUIET_ROUND_MS;
  for (const run of openRuns(summaries)) {
    if (run.length < 2) continue;
    until = Math.min(until, idTime(run.at(-1)!.lastId) + settleMs);
  }
  return until;
}

/**
 * Lists the project's chunks, oldest first, deleting those past the
 * retention as it goes; adds the summaries of the others to `summaries`.
 * When that listing stops at its bound, the newest chunks are listed too
 * and added after: the index where they start, else -1.
 */
async function expireAndList(
  round: Round,
  summaries: ChunkSummary[],
): Promise<number> {
  const { kv, projectId } = round;
  let expired: ChunkSummary[] = [];
  let op = round.guarded();
  let mutations = 0;
  const flushExpired = async () => {
    await round.commit(op);
    round.result.expired += expired.length;
    expired = [];
    op = round.guarded();
    mutations = 0;
  };
  const maxListed = round.maxListed;
  const iter = kv.list({ prefix: logSummariesPrefix(projectId) }, {
    batchSize: 1000,
    limit: maxListed,
  });
  let listed = 0;
  let lastKey = "";
  for await (const entry of iter) {
    listed++;
    lastKey = logUnitId(entry.key);
    const summary = decodeSummary(entry.value, logUnitId(entry.key));
    if (summary.lastId < timeBound(round.now - round.retentionOf(summary))) {
      // Within KV's mutations, beside the guard's 3.
      if (mutations + chunkKeyCount(summary) > ATOMIC_MAX_MUTATIONS - 3) {
        await flushExpired();
      }
      expired.push(summary);
      mutations += deleteChunk(op, projectId, summary);
      if (expired.length >= EXPIRE_BATCH) await flushExpired();
    } else {
      // Retention by filter: a chunk's levels past their time go first.
      const past = round.pastOf(summary);
      // A prune commits, moving the round's marker: the deletions gathered
      // so far go first, and the next are checked as of after it (else the
      // last commit fails its check and the whole round is lost).
      if (past.size > 0 && expired.length > 0) await flushExpired();
      const kept = await pruneChunk(round, summary, past);
      if (past.size > 0) op = round.guarded();
      if (kept) summaries.push(kept);
    }
  }
  if (expired.length > 0) await flushExpired();
  return listed < maxListed ? -1 : await listNewest(round, lastKey, summaries);
}

/**
 * Adds the newest summaries after `lastKey` (up to
 * {@linkcode NEWEST_LISTED}), oldest first, to `summaries`; the index of
 * the first one added.
 */
async function listNewest(
  round: Round,
  lastKey: string,
  summaries: ChunkSummary[],
): Promise<number> {
  const { kv, projectId } = round;
  const newest: ChunkSummary[] = [];
  const iter = kv.list({ prefix: logSummariesPrefix(projectId) }, {
    batchSize: 1000,
    limit: NEWEST_LISTED,
    reverse: true,
  });
  for await (const entry of iter) {
    const key = logUnitId(entry.key);
    if (key <= lastKey) break;
    newest.push(decodeSummary(entry.value, key));
  }
  const from = summaries.length;
  summaries.push(...newest.reverse());
  return from;
}

/**
 * What a round deletes of a project besides chunks: counters past the
 * longest retention `retentionMs`, old usage, error groups and releases
 * past the project's retention (as the consumer sweeps them, for a project
 * that no longer sends any), and source map slices an upload or a deletion
 * cut short left loose.
 */
async function sweepProject(
  kv: Deno.Kv,
  project: Project,
  now: number,
  retentionMs: number,
): Promise<void> {
  await deleteExpiredCounts(kv, project.id, now - retentionMs);
  await deleteOldUsage(kv, project.id, now);
  const own = { now, retentionMs: project.retentionDays * DAY_MS };
  await sweepErrorGroups(kv, project.id, own);
  await sweepReleases(kv, project.id, own);
  await sweepLooseSlices(kv, project.id, now);
}

/**
 * The runs of open chunks of `summaries`; those from `newestFrom` (listed
 * newest first apart, -1 for none) make runs of their own, since chunks
 * between the two listings were not seen.
 */
function runsOf(
  summaries: ChunkSummary[],
  newestFrom: number,
): ChunkSummary[][] {
  return newestFrom < 0 ? openRuns(summaries) : [
    ...openRuns(summaries.slice(0, newestFrom)),
    ...openRuns(summaries.slice(newestFrom)),
  ];
}

/** The runs of open chunks, split where a final chunk stands between. */
function openRuns(summaries: ChunkSummary[]): ChunkSummary[][] {
  const runs: ChunkSummary[][] = [[]];
  for (const s of summaries) {
    if (isOpen(s)) runs.at(-1)!.push(s);
    else if (runs.at(-1)!.length > 0) runs.push([]);
  }
  return runs;
}

/**
 * Compressed over JSON bytes of the project's merged chunks (tier 1 and
 * up), or null when it has none: a merge's output compresses like them,
 * far better than the small chunks of tier 0 it is made of.
 */
function mergedRatio(summaries: ChunkSummary[]): number | null {
  let bytes = 0;
  let raw = 0;
  for (const s of summaries) {
    if (s.tier === 0) continue;
    bytes += s.bytes;
    raw += s.raw;
  }
  return raw > 0 && bytes > 0 ? bytes / raw : null;
}

/**
 * JSON bytes a merged chunk of `run` may hold, from the compression of the
 * project's merged chunks, else the run's own.
 */
function rawLimitOf(run: ChunkSummary[], merged: number | null): number {
  const bytes = run.reduce((n, s) => n + s.bytes, 0);
  const raw = run.reduce((n, s) => n + s.raw, 0);
  const own = raw > 0 && bytes > 0 ? bytes / raw : 0.12;
  return Math.min(
    MAX_RAW_BYTES,
    CHUNK_TARGET_BYTES / Math.max(0.02, merged ?? own),
  );
}

/** What a round has merged so far: the sources replaced, the chunks written. */
interface Merged {
  sources: Set<ChunkSummary>;
  written: ChunkSummary[];
}

/**
 * Merges `group` into one chunk in one commit, or in halves where the
 * chunk would be over {@linkcode CHUNK_MAX_BYTES}.
 */
async function mergeGroup(
  round: Round,
  group: ChunkSummary[],
  rawLimit: number,
  done: Merged,
): Promise<void> {
  const { projectId, result } = round;
  const texts = await readSources(round.kv, projectId, group);
  const lines = texts.flatMap((t) => (t === "" ? [] : t.split("\n")));
  lines.sort((a, b) => (idBefore(a, b) ? -1 : 1));
  const tier = Math.min(
    FINAL_TIER - 1,
    1 + Math.max(...group.map((s) => s.tier)),
  );
  const raw = lines.reduce((n, line) => n + line.length + 1, -1);
  // Its filters' members wait for a coarse group (db/storage/coarse.ts).
  const members = new Set<number>();
  // Final once it holds half of what a chunk may: no merge takes it again.
  const chunk = await buildChunkPausing(lines, round.pause, {
    tier: raw >= rawLimit / 2 ? FINAL_TIER : tier,
    finalAtBytes: CHUNK_TARGET_BYTES / 2,
    members,
  });
  if (chunk.summary.bytes > CHUNK_MAX_BYTES && group.length > 1) {
    const half = Math.ceil(group.length / 2);
    await mergeGroup(round, group.slice(0, half), rawLimit, done);
    await mergeGroup(round, group.slice(half), rawLimit, done);
    return;
  }
  // The newest source's key names the merged chunk too: written over.
  const op = round.guarded();
  replaceChunks(op, projectId, group, chunk, round);
  const expireIn = chunkExpireIn(
    chunk.summary.firstId,
    round.retentionMs,
    round.now,
  );
  setPending(op, projectId, chunk.summary, members, expireIn);
  // A search that skipped a source by its coarse group reads again.
  if (await movesGrouped(round.kv, projectId, group)) {
    bumpCoarseState(op, projectId);
  }
  // The sources' waiting hashes, where the commit has room (else a round
  // drops them once they would be grouped).
  const sources = group.map((s) => s.lastId)
    .filter((id) => id !== chunk.summary.lastId);
  if (
    mutationsAtMost(group, chunk) + 2 * sources.length <= ATOMIC_MAX_MUTATIONS
  ) {
    deletePendingOf(op, projectId, sources);
  }
  await round.commit(op);
  for (const s of group) done.sources.add(s);
  done.written.push(chunk.summary);
  result.merges++;
  result.sources += group.length;
  result.entries += lines.length;
  result.bytes += chunk.summary.bytes;
}

/**
 * Mutations of a merge's commit at most, before its sources' waiting
 * hashes: its guard and the coarse state, each source's values deleted,
 * the chunk's written, its own waiting hashes.
 */
function mutationsAtMost(
  group: readonly ChunkSummary[],
  chunk: { summary: ChunkSummary },
): number {
  // Its value, summary, filters, ungrouped mark, slices and columns.
  const values = (s: ChunkSummary) => 4 + s.slices + (s.columns ?? 0);
  return 3 + group.reduce((n, s) => n + values(s), 0) + values(chunk.summary) +
    2;
}

/** The lines of each chunk of `group`, read from KV. */
async function readSources(
  kv: Deno.Kv,
  projectId: string,
  group: ChunkSummary[],
): Promise<string[]> {
  const values = await getManyChunked(
    kv,
    group.map((s) => logChunkKey(projectId, s.lastId)),
  );
  // Gone: another process merged it, or it expired; that round won.
  if (values.some((entry) => entry.value === null)) throw new ConflictError();
  const texts: string[] = [];
  for (const [j, entry] of values.entries()) {
    texts.push(
      await readChunkText(kv, projectId, group[j]!.lastId, entry.value),
    );
  }
  return texts;
}

/**
 * One round over every project (see {@linkcode mergeProject}); the backlogs
 * are added up.
 *
 * @example
 * ```ts
 * await mergeAll(kv, { now: Date.now() });
 * ```
 */
export async function mergeAll(
  kv: Deno.Kv,
  options: MergeOptions,
): Promise<MergeResult> {
  const total: MergeResult = emptyResult();
  for (const project of await listProjects(kv)) {
    if (options.shouldStop?.()) break;
    let done: MergeResult;
    try {
      done = await mergeProject(kv, project.id, options);
    } catch (error) {
      // One project's failure (a value it cannot write) must not keep
      // every project after it from being merged.
      if (!options.onProjectError) throw error;
      options.onProjectError(project.id, error);
      continue;
    }
    total.merges += done.merges;
    total.sources += done.sources;
    total.entries += done.entries;
    total.bytes += done.bytes;
    total.expired += done.expired;
    const b = done.backlog;
    total.backlog.chunks += b.chunks;
    total.backlog.fresh += b.fresh;
    total.backlog.freshEntries += b.freshEntries;
    if (
      b.oldestFresh !== null &&
      (total.backlog.oldestFresh === null ||
        b.oldestFresh < total.backlog.oldestFresh)
    ) total.backlog.oldestFresh = b.oldestFresh;
  }
  return total;
}

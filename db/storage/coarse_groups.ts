/**
 * Writing coarse groups (db/storage/coarse.ts): the merger's part. Every
 * merge stores the hashes of its chunk's filter members beside it, in the
 * same commit ({@linkcode setPending}); each round then gathers the waiting
 * hashes of up to `groupChunks` settled chunks — final, or whose hour
 * closed {@linkcode SETTLED_AFTER_MS} ago — into one group, its filter in
 * segments, and deletes what it used, in one commit guarded as the
 * round's merges are ({@linkcode groupPending}), which also deletes the
 * ungrouped marks of the chunks it names: from then on a word search that
 * the group rules out lists none of them, until a write of one marks it
 * again. A merge that moves a chunk a group names bumps the coarse state
 * ({@linkcode movesGrouped}), as making a group does, so that a search
 * that planned before reads again. A store from before the marks is
 * marked once ({@linkcode markUngrouped}).
 * A merge deletes its sources' waiting hashes (where its commit has room;
 * else a round drops them once they would be grouped). Groups and waiting
 * hashes past the retention go with the chunks ({@linkcode prepareCoarse});
 * KV's own expiry is the backstop, and a project's deletion takes their
 * prefixes (db/storage/write.ts).
 *
 * @module
 */
import { idTime, timeBound } from "../../domain/ids.ts";
import {
  logCoarseBitsKey,
  logCoarseGroupKey,
  logCoarseGroupsPrefix,
  logCoarseHashesKey,
  logCoarsePendingKey,
  logCoarsePendingPrefix,
  logCoarseStateKey,
  logSummariesPrefix,
  logSummaryKey,
  logUngroupedKey,
  logUngroupedPrefix,
  logUnitId,
} from "../keys.ts";
import { chunkExpireIn, setUngrouped } from "./write.ts";
import { decodeJson, encodeJson, getManyChunked } from "../kv.ts";
import { CHUNK_SPAN_MS, decodeSummary, FINAL_TIER } from "./chunk.ts";
import {
  buildCoarseSegment,
  COARSE_GROUP_CHUNKS,
  COARSE_SEGMENTS,
  coarseSegment,
  decodeCoarseGroup,
  decodePending,
  encodeCoarseGroup,
  encodePending,
  MAX_PENDING_MEMBERS,
} from "./coarse.ts";

/**
 * Members one group's filter holds at most: 600 KB of bits at 10 bits
 * each, inside one atomic commit with its group record.
 */
export const MAX_GROUP_MEMBERS = 480_000;
/**
 * A chunk below the final tier joins a group once its newest entry is this
 * old: its hour closed, no merge is likely to take it again.
 */
export const SETTLED_AFTER_MS = 2 * CHUNK_SPAN_MS;
/** Waiting hashes dropped by one commit at most. */
const DROP_BATCH = 200;
/** Groups one commit past the retention deletes at most (129 keys each). */
const EXPIRE_GROUPS = 6;

/** What the coarse writes need of a merge round (db/storage/merge.ts). */
export interface CoarseRound {
  kv: Deno.Kv;
  projectId: string;
  now: number;
  retentionMs: number;
  /** An atomic operation guarded as the round's merges are. */
  guarded(): Deno.AtomicOperation;
  /** Commits `op`, or throws when another writer changed the project. */
  commit(op: Deno.AtomicOperation): Promise<void>;
  /**
   * Commits `op` (made by `kv.atomic()`) checked as a guarded one, the
   * marker left as it is (it moves no entry), or throws as `commit` does.
   */
  commitUnmoved(op: Deno.AtomicOperation): Promise<void>;
}

/** The `log_coarse_pending/` value: members, the chunk's tier and entries. */
interface PendingValue {
  n: number;
  t: number;
  c: number;
}

/**
 * Adds to `op` the hashes of a merged chunk's filter members, waiting for
 * a group (written over those of a source under the same key); returns
 * the mutations added (none for a chunk with more than
 * {@linkcode MAX_PENDING_MEMBERS}: it stays searched through its own
 * filters).
 */
export function setPending(
  op: Deno.AtomicOperation,
  projectId: string,
  chunk: { lastId: string; tier: number; count: number },
  members: Set<number>,
  expireIn: number,
): number {
  if (members.size === 0 || members.size > MAX_PENDING_MEMBERS) return 0;
  const { lastId, tier, count } = chunk;
  const pending: PendingValue = { n: members.size, t: tier, c: count };
  op.set(logCoarsePendingKey(projectId, lastId), encodeJson(pending), {
    expireIn,
  });
  op.set(logCoarseHashesKey(projectId, lastId), encodePending(members), {
    expireIn,
  });
  return 2;
}

/** A chunk waiting for a group, as listed. */
interface Pending {
  lastId: string;
  members: number;
  count: number;
}

/**
 * Adds to `op` the deletion of the waiting hashes of the chunks named (a
 * merge's sources); returns the mutations added.
 */
export function deletePendingOf(
  op: Deno.AtomicOperation,
  projectId: string,
  lastIds: readonly string[],
): number {
  for (const lastId of lastIds) deletePending(op, projectId, lastId);
  return 2 * lastIds.length;
}

/** Deletes a chunk's waiting hashes. */
function deletePending(
  op: Deno.AtomicOperation,
  projectId: string,
  lastId: string,
): void {
  op.delete(logCoarsePendingKey(projectId, lastId));
  op.delete(logCoarseHashesKey(projectId, lastId));
}

/**
 * Builds the groups of a project's settled waiting hashes, oldest first,
 * each of `groupChunks` chunks or {@linkcode MAX_GROUP_MEMBERS} members;
 * fewer wait for the next round. Hashes past the retention, or of a chunk
 * merged away since, are dropped. Returns the groups written.
 */
export async function groupPending(
  round: CoarseRound,
  groupChunks: number = COARSE_GROUP_CHUNKS,
): Promise<number> {
  const { kv, projectId } = round;
  const horizon = timeBound(round.now - round.retentionMs);
  const settled = timeBound(round.now - SETTLED_AFTER_MS);
  const waiting: Pending[] = [];
  const drop: string[] = [];
  let members = 0;
  let written = 0;
  const flush = async (take: number) => {
    const group = waiting.splice(0, take);
    written += await writeGroup(round, group, drop);
    members = waiting.reduce((n, p) => n + p.members, 0);
  };
  for await (
    const entry of kv.list({ prefix: logCoarsePendingPrefix(projectId) })
  ) {
    const lastId = logUnitId(entry.key);
    const value = decodeJson<PendingValue>(entry.value)!;
    if (lastId < horizon) drop.push(lastId);
    else if (value.t === FINAL_TIER || lastId < settled) {
      waiting.push({ lastId, members: value.n, count: value.c });
      members += value.n;
      if (members > MAX_GROUP_MEMBERS && waiting.length > 1) {
        await flush(waiting.length - 1);
      } else if (waiting.length >= groupChunks) await flush(waiting.length);
    }
    if (drop.length >= DROP_BATCH) await dropPending(round, drop);
  }
  if (drop.length > 0) await dropPending(round, drop);
  return written;
}

/** Deletes the waiting hashes of the chunks named in `drop`, and empties it. */
async function dropPending(round: CoarseRound, drop: string[]): Promise<void> {
  const op = round.guarded();
  for (const id of drop.splice(0)) deletePending(op, round.projectId, id);
  await round.commit(op);
}

/**
 * Writes one group of `chunks` (its record and segments) and deletes their
 * waiting hashes, with those in `drop`, in one commit; a chunk gone, or
 * rewritten since its hashes were stored (another count), is left out.
 * Returns 1, or 0 when none was left.
 */
async function writeGroup(
  round: CoarseRound,
  chunks: Pending[],
  drop: string[],
): Promise<number> {
  const { kv, projectId } = round;
  const summaries = await getManyChunked(
    kv,
    chunks.map((c) => logSummaryKey(projectId, c.lastId)),
  );
  const hashes = await getManyChunked(
    kv,
    chunks.map((c) => logCoarseHashesKey(projectId, c.lastId)),
  );
  const segments: number[][] = Array.from(
    { length: COARSE_SEGMENTS },
    () => [],
  );
  const seen = new Set<number>();
  const covered: string[] = [];
  const counts: number[] = [];
  let firstId = "";
  chunks.forEach((chunk, i) => {
    const value = summaries[i]!.value;
    const summary = value === null ? null : decodeSummary(value, chunk.lastId);
    const stored = hashes[i]!.value;
    if (summary?.count !== chunk.count || stored === null) return;
    covered.push(chunk.lastId);
    counts.push(chunk.count);
    if (firstId === "" || summary.firstId < firstId) firstId = summary.firstId;
    for (const h of decodePending(stored)) {
      if (seen.has(h)) continue;
      seen.add(h);
      segments[coarseSegment(h)]!.push(h);
    }
  });
  const op = round.guarded();
  for (const chunk of chunks) deletePending(op, projectId, chunk.lastId);
  for (const id of drop.splice(0)) deletePending(op, projectId, id);
  if (covered.length === 0) {
    await round.commit(op);
    return 0;
  }
  // Named by the group from this commit on: a search lists them no more,
  // and one that planned before this commit is done again.
  for (const id of covered) op.delete(logUngroupedKey(projectId, id));
  op.sum(logCoarseStateKey(projectId), 1n);
  const lastId = covered.at(-1)!;
  const expireIn = Math.max(
    1000,
    idTime(lastId) + round.retentionMs - round.now,
  );
  op.set(
    logCoarseGroupKey(projectId, lastId),
    encodeCoarseGroup({ firstId, lastId, chunks: covered, counts }),
    { expireIn },
  );
  segments.forEach((members, s) => {
    op.set(
      logCoarseBitsKey(projectId, s, lastId),
      buildCoarseSegment(members),
      { expireIn },
    );
  });
  await round.commit(op);
  return 1;
}

/**
 * What a round does first for coarse groups, before any merge: marks a
 * store from before the marks ({@linkcode markUngrouped}: a merge's bump
 * of the coarse state must not make it first), then deletes the groups
 * past the retention; returns how many.
 */
export async function prepareCoarse(round: CoarseRound): Promise<number> {
  await markUngrouped(round);
  return await expireCoarse(round);
}

/**
 * Deletes the groups whose newest chunk is past the retention (their
 * chunks are gone with it), a few per commit; returns how many.
 */
async function expireCoarse(round: CoarseRound): Promise<number> {
  const { kv, projectId } = round;
  const horizon = timeBound(round.now - round.retentionMs);
  const prefix = logCoarseGroupsPrefix(projectId);
  const expired: string[] = [];
  for await (
    const entry of kv.list({ start: prefix, end: [...prefix, horizon] })
  ) expired.push(logUnitId(entry.key));
  for (let i = 0; i < expired.length; i += EXPIRE_GROUPS) {
    const op = round.guarded();
    for (const lastId of expired.slice(i, i + EXPIRE_GROUPS)) {
      op.delete(logCoarseGroupKey(projectId, lastId));
      for (let s = 0; s < COARSE_SEGMENTS; s++) {
        op.delete(logCoarseBitsKey(projectId, s, lastId));
      }
    }
    await round.commit(op);
  }
  return expired.length;
}

/** Marks written by one commit of {@linkcode markUngrouped} at most. */
const MARK_BATCH = 500;

/**
 * Once per project: marks ungrouped every chunk no group names at its
 * count (chunks stored before marks existed), then sets the coarse state,
 * from which on a word search lists the marks instead of every summary
 * (db/query/coarse.ts). Each commit is checked as the round's merges are
 * (without moving the marker: readers need not read again); the consumer
 * marks the chunks it writes meanwhile itself.
 */
export async function markUngrouped(round: CoarseRound): Promise<void> {
  const { kv, projectId } = round;
  const state = logCoarseStateKey(projectId);
  if ((await kv.get(state)).versionstamp !== null) return;
  const named = new Map<string, number>();
  for await (
    const entry of kv.list({ prefix: logCoarseGroupsPrefix(projectId) })
  ) {
    const group = decodeCoarseGroup(entry.value, logUnitId(entry.key));
    group.chunks.forEach((id, i) => named.set(id, group.counts[i]!));
  }
  const marked = new Set<string>();
  for await (
    const entry of kv.list({ prefix: logUngroupedPrefix(projectId) })
  ) marked.add(logUnitId(entry.key));
  let op = kv.atomic();
  let marks = 0;
  for await (
    const entry of kv.list({ prefix: logSummariesPrefix(projectId) }, {
      batchSize: 1000,
    })
  ) {
    const summary = decodeSummary(entry.value, logUnitId(entry.key));
    const { lastId } = summary;
    if (marked.has(lastId) || named.get(lastId) === summary.count) continue;
    const expireIn = chunkExpireIn(
      summary.firstId,
      round.retentionMs,
      round.now,
    );
    marks += setUngrouped(op, projectId, lastId, expireIn);
    if (marks >= MARK_BATCH) {
      await round.commitUnmoved(op);
      op = kv.atomic();
      marks = 0;
    }
  }
  op.set(state, new Deno.KvU64(0n));
  await round.commitUnmoved(op);
}

/**
 * Whether a merge of `sources` moves a chunk a coarse group names (one
 * not marked ungrouped): its commit then bumps the coarse state
 * ({@linkcode bumpCoarseState}), so that a search that skipped by that
 * group is done again.
 */
export async function movesGrouped(
  kv: Deno.Kv,
  projectId: string,
  sources: readonly { lastId: string; tier: number }[],
): Promise<boolean> {
  // A chunk of tier 0 (the consumer's) has no hashes: no group names it.
  const merged = sources.filter((s) => s.tier > 0);
  const marks = await getManyChunked(
    kv,
    merged.map((s) => logUngroupedKey(projectId, s.lastId)),
  );
  return marks.some((mark) => mark.value === null);
}

/** Adds to `op` the bump of the coarse state; returns the mutations (1). */
export function bumpCoarseState(
  op: Deno.AtomicOperation,
  projectId: string,
): number {
  op.sum(logCoarseStateKey(projectId), 1n);
  return 1;
}

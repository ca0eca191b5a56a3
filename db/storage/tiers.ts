/**
 * Which chunks merge, and when: the tiering policy of the merger
 * (db/storage/merge.ts), and the backlog it leaves. A chunk is *open* while a
 * merge may still take it (tier below {@linkcode FINAL_TIER}, under half of
 * `CHUNK_TARGET_BYTES` compressed); {@linkcode chooseGroups} picks, in a run
 * of consecutive open chunks, the groups to merge now:
 *
 * - a full group: its JSON reaches half of what a chunk holds (the output is
 *   then final: it is not merged again);
 * - at least {@linkcode MERGE_FANIN} chunks, none over a quarter of the
 *   group's bytes: merging chunks of like size keeps the times an entry is
 *   rewritten logarithmic (once to a few times at steady rates);
 * - a settled run: its newest chunk is older than `settleMs` (the project
 *   stopped sending, or sends rarely), so its last chunks do not stay small.
 *
 * @module
 */
import { idTime } from "../../domain/ids.ts";
import {
  CHUNK_SPAN_MS,
  CHUNK_TARGET_BYTES,
  type ChunkSummary,
  FINAL_TIER,
} from "./chunk.ts";

/** Chunks of like size that are merged as soon as they are this many. */
export const MERGE_FANIN = 16;
/** Default age of a run's newest chunk after which the run is merged. */
export const DEFAULT_SETTLE_MS = 30_000;
/** Source chunks one merge takes at most. */
const MAX_GROUP = 64;
/** Mutations one merge commit makes at most. */
const MAX_MUTATIONS = 900;
/** What is not yet in merged form, as a round saw it. */
export interface Backlog {
  /** Open chunks (not final). */
  chunks: number;
  /** Chunks of tier 0, as the consumer wrote them, and their entries. */
  fresh: number;
  freshEntries: number;
  /** Receipt time of the oldest entry in a chunk of tier 0, or null. */
  oldestFresh: number | null;
}

/** A backlog of nothing. */
export function emptyBacklog(): Backlog {
  return { chunks: 0, fresh: 0, freshEntries: 0, oldestFresh: null };
}

/** Whether a chunk may still be merged. */
export function isOpen(summary: ChunkSummary): boolean {
  return summary.tier < FINAL_TIER && summary.bytes < CHUNK_TARGET_BYTES / 2;
}

/** The backlog of a project's chunks, from their summaries. */
export function backlogOf(summaries: Iterable<ChunkSummary>): Backlog {
  const backlog = emptyBacklog();
  for (const s of summaries) {
    if (!isOpen(s)) continue;
    backlog.chunks++;
    if (s.tier > 0) continue;
    backlog.fresh++;
    backlog.freshEntries += s.count;
    const first = idTime(s.firstId);
    if (backlog.oldestFresh === null || first < backlog.oldestFresh) {
      backlog.oldestFresh = first;
    }
  }
  return backlog;
}

/** Mutations a merge of `group` makes: deletions of 3 keys and slices each, the output's. */
function mutationsOf(group: ChunkSummary[]): number {
  return group.reduce((n, s) => n + 2 + s.slices, 4);
}

/**
 * The groups of a run of open chunks (oldest first) to merge now, in order.
 * Exported for tests of the policy.
 */
export function chooseGroups(
  run: ChunkSummary[],
  options: { now: number; settleMs: number; rawLimit: number },
): ChunkSummary[][] {
  const { now, settleMs, rawLimit } = options;
  const groups: ChunkSummary[][] = [];
  const quiet = run.length > 0 &&
    idTime(run.at(-1)!.lastId) <= now - settleMs;
  for (let i = 0; i < run.length - 1;) {
    const group: ChunkSummary[] = [run[i]!];
    let raw = run[i]!.raw;
    let largest = raw;
    const start = idTime(run[i]!.firstId);
    for (let j = i + 1; j < run.length && group.length < MAX_GROUP; j++) {
      const next = run[j]!;
      if (
        raw + next.raw > rawLimit ||
        idTime(next.lastId) - start > CHUNK_SPAN_MS ||
        mutationsOf([...group, next]) > MAX_MUTATIONS
      ) break;
      group.push(next);
      raw += next.raw;
      largest = Math.max(largest, next.raw);
    }
    const full = group.length > 1 && raw >= rawLimit / 2;
    const tiered = group.length >= MERGE_FANIN && largest * 4 <= raw;
    // A run that has been quiet for `settleMs` is merged as it is.
    const settled = quiet && group.length > 1;
    if (full || tiered || settled) {
      groups.push(group);
      i += group.length;
    } else i++;
  }
  return groups;
}

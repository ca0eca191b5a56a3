/**
 * Retention by filter inside a chunk (db/retention_rules.ts): the merger
 * rewrites a chunk without the entries of the levels past their time, when
 * the chunk's other entries are kept longer. Levels are read from the
 * lines without parsing them.
 *
 * @module
 */
import { logChunkKey, logUngroupedKey } from "../keys.ts";
import type { Project } from "../projects.ts";
import { levelRetentionMs } from "../retention_rules.ts";
import { timeBound } from "../../domain/ids.ts";
import {
  buildChunkPausing,
  type ChunkSummary,
  readChunkText,
} from "./chunk.ts";
import { lineLevel } from "./lines.ts";
import { deleteChunk, replaceChunks } from "./write.ts";

/** What of a merger's round pruning uses. */
export interface PruneRound {
  kv: Deno.Kv;
  projectId: string;
  now: number;
  /** The project's longest retention: what chunks are written to expire by. */
  retentionMs: number;
  pause: () => Promise<void>;
  /** An atomic operation guarded as the round's others. */
  guarded(): Deno.AtomicOperation;
  /** Commits `op`, or throws as the round does on a conflict. */
  commit(op: Deno.AtomicOperation): Promise<void>;
}

/** The levels of `summary` whose entries are all past their time. */
export function levelsPast(
  project: Project,
  summary: ChunkSummary,
  now: number,
): Set<string> {
  const past = new Set<string>();
  if (!project.retentionRules?.length) return past;
  for (const level of Object.keys(summary.levels)) {
    const horizon = timeBound(now - levelRetentionMs(project, level));
    if (summary.lastId < horizon) past.add(level);
  }
  return past;
}

/**
 * Rewrites the chunk of `summary` without the entries of `drop`'s levels,
 * in one commit of the round; returns the new chunk's summary, `null` when
 * nothing is left, or `summary` itself when there is nothing to drop.
 */
export async function pruneChunk(
  round: PruneRound,
  summary: ChunkSummary,
  drop: Set<string>,
): Promise<ChunkSummary | null> {
  if (drop.size === 0) return summary;
  const { kv, projectId } = round;
  const [head, ungrouped] = await kv.getMany([
    logChunkKey(projectId, summary.lastId),
    logUngroupedKey(projectId, summary.lastId),
  ]);
  if (head!.value === null) return null; // gone meanwhile: another round
  const text = await readChunkText(kv, projectId, summary.lastId, head!.value);
  const lines = text.split("\n").filter((line) =>
    line !== "" && !drop.has(lineLevel(line))
  );
  const op = round.guarded();
  if (lines.length === 0) {
    deleteChunk(op, projectId, summary);
    await round.commit(op);
    return null;
  }
  const chunk = await buildChunkPausing(lines, round.pause, {
    tier: summary.tier,
  });
  // Entries removed only: a coarse group naming the chunk still tells
  // true, so a chunk in one stays in it.
  replaceChunks(op, projectId, [summary], chunk, {
    retentionMs: round.retentionMs,
    now: round.now,
    // A chunk whose last entry went has a new key no coarse group names:
    // marked, so that searches list it.
    ungrouped: ungrouped!.value !== null ||
      chunk.summary.lastId !== summary.lastId,
  });
  await round.commit(op);
  return chunk.summary;
}

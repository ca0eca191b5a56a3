/**
 * What a word search learns from the coarse groups (db/storage/coarse.ts)
 * before it lists a chunk: the chunks it need not look at, because a group
 * that covers them certainly lacks one of the search's probes. One listing
 * of the groups in the range, and one of a segment's prefix per probe (at
 * most {@linkcode MAX_COARSE_PROBES}), replace listing every chunk's own
 * filters.
 *
 * @module
 */
import type { BloomHash } from "../storage/bloom.ts";
import {
  type CoarseGroup,
  coarseHas,
  coarseSegment,
  decodeCoarseGroup,
} from "../storage/coarse.ts";
import {
  logCoarseBitsGroupId,
  logCoarseBitsPrefix,
  logCoarseGroupsPrefix,
  logUnitId,
} from "../keys.ts";

/**
 * Probes checked against the groups at most: a search with more checks
 * these (a group lacking any of them is still ruled out; the rest are
 * checked against each chunk's filters).
 */
export const MAX_COARSE_PROBES = 8;

/** Every key from `lo` on under `prefix`. */
function from(prefix: Deno.KvKey, lo: string) {
  return {
    start: lo === "" ? prefix : [...prefix, lo],
    end: [...prefix, "\uffff"],
  };
}

/**
 * The last ids (with the entries each held when grouped: a chunk with
 * another count was rewritten since) of the chunks that certainly hold no entry
 * with every one of `probes`, among those of the groups overlapping [lo, hi); null when
 * no group overlaps the range, or when fewer than half of the groups rule
 * their chunks out (the chunks' own filters decide, as for a store written
 * before groups).
 *
 * @example
 * ```ts
 * const skip = await coarseSkips(kv, projectId, filter.probes, { lo: "", hi: MAX_ID });
 * ```
 */
export async function coarseSkips(
  kv: Deno.Kv,
  projectId: string,
  probes: readonly BloomHash[],
  range: { lo: string; hi: string },
): Promise<Map<string, number> | null> {
  const groups = new Map<string, CoarseGroup>();
  const groupsIter = kv.list(from(logCoarseGroupsPrefix(projectId), range.lo), {
    batchSize: 500,
  });
  for await (const entry of groupsIter) {
    const group = decodeCoarseGroup(entry.value, logUnitId(entry.key));
    if (group.firstId < range.hi) groups.set(group.lastId, group);
  }
  if (groups.size === 0) return null;
  const bySegment = new Map<number, BloomHash[]>();
  for (const probe of probes.slice(0, MAX_COARSE_PROBES)) {
    const segment = coarseSegment(probe.h1);
    bySegment.set(segment, [...(bySegment.get(segment) ?? []), probe]);
  }
  const ruledOut = new Set<string>();
  for (const [segment, segmentProbes] of bySegment) {
    const iter = kv.list<Uint8Array>(
      from(logCoarseBitsPrefix(projectId, segment), range.lo),
      { batchSize: 500 },
    );
    for await (const entry of iter) {
      const lastId = logCoarseBitsGroupId(entry.key);
      if (!groups.has(lastId) || ruledOut.has(lastId)) continue;
      if (!segmentProbes.every((probe) => coarseHas(entry.value, probe))) {
        ruledOut.add(lastId);
      }
    }
  }
  // Where most groups may hold a match, listing every chunk's filters
  // costs less than listing summaries and reading most filters one by one.
  if (ruledOut.size * 2 < groups.size) return null;
  const skip = new Map<string, number>();
  for (const lastId of ruledOut) {
    const group = groups.get(lastId)!;
    group.chunks.forEach((chunk, i) => skip.set(chunk, group.counts[i]!));
  }
  return skip;
}

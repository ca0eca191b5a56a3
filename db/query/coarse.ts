/**
 * What a word search learns from the coarse groups (db/storage/coarse.ts)
 * before it lists a chunk: the groups that may hold a match, and so the
 * chunks it must look at besides those written since a group last named
 * them (`log_ungrouped/`, listed by db/query/listing.ts). One listing of a
 * segment's prefix per probe (at most {@linkcode MAX_COARSE_PROBES})
 * replaces listing every chunk's summary or filters: the chunks of a
 * group that lacks a probe are never listed.
 *
 * Exact: every chunk of a project is named by a group or marked ungrouped
 * (from the moment `log_coarse_state/` exists), a write of a chunk marks it
 * in its own commit, and a group unmarks its chunks in the commit that
 * makes it. A group's making, and a merge that moves a chunk a group
 * names, bump the state: a scan that planned with it is done again when
 * it moved (db/query/scan.ts).
 *
 * @module
 */
import type { BloomHash } from "../storage/bloom.ts";
import {
  coarseHas,
  coarseSegment,
  decodeCoarseGroup,
} from "../storage/coarse.ts";
import {
  logCoarseBitsGroupId,
  logCoarseBitsPrefix,
  logCoarseGroupKey,
  logCoarseStateKey,
} from "../keys.ts";
import { getManyChunked } from "../kv.ts";

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

/** What a word search reads besides the ungrouped chunks. */
export interface CoarsePlan {
  /**
   * Last ids of the chunks named by the groups that may hold a match (a
   * chunk gone since was merged into one written, so marked, since), in
   * key order.
   */
  named: string[];
  /** The coarse state as read: the scan is done again when it moved. */
  state: { key: Deno.KvKey; versionstamp: string };
}

/**
 * The chunks the groups overlapping [lo, hi) cannot rule out for
 * `probes`; null when the project's chunks are not all marked or grouped
 * yet, when no group overlaps the range, or when fewer than half of the
 * groups rule their chunks out (then listing every chunk's filters costs
 * less than reading most of them one by one).
 *
 * @example
 * ```ts
 * const plan = await coarsePlan(kv, projectId, filter.probes, { lo: "", hi: MAX_ID });
 * ```
 */
export async function coarsePlan(
  kv: Deno.Kv,
  projectId: string,
  probes: readonly BloomHash[],
  range: { lo: string; hi: string },
): Promise<CoarsePlan | null> {
  const state = await kv.get(logCoarseStateKey(projectId));
  if (state.versionstamp === null) return null;
  const bySegment = new Map<number, BloomHash[]>();
  for (const probe of probes.slice(0, MAX_COARSE_PROBES)) {
    const segment = coarseSegment(probe.h1);
    bySegment.set(segment, [...(bySegment.get(segment) ?? []), probe]);
  }
  const groups = new Set<string>();
  const ruledOut = new Set<string>();
  for (const [segment, segmentProbes] of bySegment) {
    const iter = kv.list<Uint8Array>(
      from(logCoarseBitsPrefix(projectId, segment), range.lo),
      { batchSize: 1000 },
    );
    for await (const entry of iter) {
      const lastId = logCoarseBitsGroupId(entry.key);
      groups.add(lastId);
      if (ruledOut.has(lastId)) continue;
      if (!segmentProbes.every((probe) => coarseHas(entry.value, probe))) {
        ruledOut.add(lastId);
      }
    }
  }
  if (groups.size === 0 || ruledOut.size * 2 < groups.size) return null;
  const maybe = [...groups].filter((id) => !ruledOut.has(id));
  const records = await getManyChunked(
    kv,
    maybe.map((id) => logCoarseGroupKey(projectId, id)),
  );
  const named = new Set<string>();
  records.forEach((record, i) => {
    // Gone: past the retention with its chunks.
    if (record.value === null) return;
    const group = decodeCoarseGroup(record.value, maybe[i]!);
    if (group.firstId >= range.hi) return;
    for (const chunk of group.chunks) named.add(chunk);
  });
  return {
    named: [...named].sort(),
    state: { key: state.key, versionstamp: state.versionstamp },
  };
}

/**
 * A group's counts per release (db/error_groups.ts): which entries of a
 * batch it counts in which release, and which releases it keeps counts of.
 * The counts are what a group resolved in a release is judged by
 * (db/error_group_triage.ts).
 *
 * @module
 */
import type { LogRecord } from "../domain/entry.ts";
import { countedReleaseOf, type ReleasePlan } from "./releases.ts";

/**
 * Counts of a group's entries per release one batch adds at most (one
 * mutation each); entries past it are stored but not grouped, so that a
 * group's count and its counts per release always agree.
 */
export const MAX_RELEASE_PAIRS_PER_BATCH = 40;
/**
 * Releases a group counts its entries of at most (docs/limits.md): past it,
 * the release it first counted is dropped with its count.
 */
export const MAX_GROUP_RELEASES = 50;
/**
 * A group's entries of the batch per counted release, and the entries it
 * groups: those of a release past the batch's pairs (`pairs.left`) are not
 * grouped, so that the group's count and its counts per release agree.
 */
export function countReleases(
  entries: LogRecord[],
  counted: ReleasePlan,
  pairs: { left: number },
): { grouped: LogRecord[]; byRelease: Map<string, number> } {
  const byRelease = new Map<string, number>();
  const grouped = entries.filter((entry) => {
    const release = countedReleaseOf(entry);
    if (release === null || !counted.releases.has(release)) return true;
    const n = byRelease.get(release);
    if (n === undefined) {
      if (pairs.left <= 0) return false;
      pairs.left--;
    }
    byRelease.set(release, (n ?? 0) + 1);
    return true;
  });
  return { grouped, byRelease };
}

/**
 * Bytes of JSON a group's list of counted releases takes at most: the 10
 * releases one batch counts (`MAX_RELEASES_PER_BATCH`), each a name of 200
 * characters of at most 3 bytes (db/releases.ts `releaseName`), fit in it,
 * and 50 names of 40 characters do; longer names leave room for fewer.
 */
export const MAX_GROUP_RELEASE_BYTES = 6_144;

const encoder = new TextEncoder();

/** Bytes of `name` in a JSON list: quoted, and a comma. */
function listBytes(name: string): number {
  return encoder.encode(JSON.stringify(name)).length + 1;
}

/**
 * Adds the releases of `byRelease` to the group's list of counted
 * releases; returns those dropped, the first counted first, past
 * {@linkcode MAX_GROUP_RELEASES} releases or
 * {@linkcode MAX_GROUP_RELEASE_BYTES} bytes of JSON. A release the batch
 * counts is not dropped (its count is written in the same commit): it moves
 * to the end instead.
 */
export function trackReleases(
  group: { releases?: string[] },
  byRelease: Map<string, number>,
): string[] {
  const list = group.releases ?? [];
  for (const release of byRelease.keys()) {
    if (!list.includes(release)) list.push(release);
  }
  // The brackets, and one comma fewer than names.
  let bytes = 1;
  for (const name of list) bytes += listBytes(name);
  const dropped: string[] = [];
  // Each name is looked at once: the batch's own always fit.
  for (let turns = list.length; turns > 0; turns--) {
    if (list.length <= MAX_GROUP_RELEASES && bytes <= MAX_GROUP_RELEASE_BYTES) {
      break;
    }
    const gone = list.shift()!;
    if (byRelease.has(gone)) {
      list.push(gone); // counted by this batch: drop an older one
      continue;
    }
    dropped.push(gone);
    bytes -= listBytes(gone);
  }
  group.releases = list;
  return dropped;
}

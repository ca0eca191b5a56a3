/**
 * The bound of a stored error group (db/error_groups.ts): its record is
 * written whole in the result commit that stores its entries, so it must fit
 * KV's 65,536 bytes a value whatever the senders send, or every batch with an
 * entry of the group would fail. Each of its fields is bounded by
 * construction: its texts here, its releases by db/releases.ts (a name of at
 * most 3 bytes a character) and db/error_group_releases.ts (the list).
 *
 * @module
 */
import { cutJsonText, VALUE_MAX_BYTES } from "./kv.ts";
import { releaseName } from "./releases.ts";

/**
 * The texts of a stored group, each at most so many UTF-16 units and bytes
 * of JSON: 3 bytes a character, so that only control characters and lone
 * surrogates (6 bytes each in JSON) cut a text shorter than its characters.
 * The title and top frame come cut to 200 characters (domain/fingerprint.ts).
 */
export const TEXT_LIMITS = {
  title: { chars: 200, bytes: 600 },
  topFrame: { chars: 200, bytes: 600 },
  sampleTitle: { chars: 300, bytes: 900 },
} as const;

/**
 * Bytes of a stored group at most (docs/limits.md): its texts
 * ({@linkcode TEXT_LIMITS}), its two releases (600 bytes each), its list of
 * releases (`MAX_GROUP_RELEASE_BYTES`, 6,144) and its ids, times and counts.
 * Measured at most 10,245 bytes (tests/db/error_group_size_test.ts); a
 * group past it is not written (its entries are stored but not grouped),
 * which its fields' bounds never let happen.
 */
export const MAX_GROUP_RECORD_BYTES = 12_288;
if (MAX_GROUP_RECORD_BYTES > VALUE_MAX_BYTES) {
  throw new Error("MAX_GROUP_RECORD_BYTES does not fit KV's value bound");
}

/** The fields of a stored group that this module bounds. */
interface GroupTexts {
  title: string;
  topFrame: string | null;
  sampleTitle: string;
  firstRelease?: string | null;
  lastRelease?: string | null;
}

/**
 * `group` with each text cut to its {@linkcode TEXT_LIMITS} and each of its
 * two releases a name db/releases.ts takes (a group stored before may hold
 * others, then `null`): with its list of releases, what keeps it within
 * {@linkcode MAX_GROUP_RECORD_BYTES}.
 *
 * @example
 * ```ts
 * const after = bounded(merge(prior, fresh, entries));
 * ```
 */
export function bounded<T extends GroupTexts>(group: T): T {
  group.title = cutJsonText(group.title, TEXT_LIMITS.title);
  if (group.topFrame !== null) {
    group.topFrame = cutJsonText(group.topFrame, TEXT_LIMITS.topFrame);
  }
  group.sampleTitle = cutJsonText(group.sampleTitle, TEXT_LIMITS.sampleTitle);
  if (group.firstRelease) group.firstRelease = releaseName(group.firstRelease);
  if (group.lastRelease) group.lastRelease = releaseName(group.lastRelease);
  return group;
}

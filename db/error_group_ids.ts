/**
 * The row of an error group by its public fingerprint
 * (`error_group_ids/<projectId>/<fingerprint>`, db/error_groups.ts writes
 * it): the group's id, which triage and a group's page find it by, and the
 * release of its first entry, which a release's new groups are counted from
 * (docs/errors.md#releases).
 *
 * Every result commit that writes a group writes its row whole, with a
 * `set`: two commits that make one group at the same moment write one row,
 * so a group is counted once in the release of its first entry however many
 * commits made it, and the row says what the group's record says (the last
 * commit's). The row goes with its group, and so does its count.
 *
 * @module
 */
import { errorGroupIdKey } from "./keys.ts";
import { decodeJson, encodeJson } from "./kv.ts";

/** What the row of a fingerprint holds. */
export interface GroupIdRow {
  /** The group's id. */
  id: string;
  /** The release of its first entry, `null` without one. */
  firstRelease: string | null;
}

/** The value of a {@linkcode GroupIdRow}, as stored. */
export function encodeGroupIdRow(row: GroupIdRow): Uint8Array {
  return encodeJson(row);
}

/**
 * A stored row, `null` when there is none: earlier versions stored the id
 * alone, as a string, and counted nothing from it.
 */
export function decodeGroupIdRow(value: unknown): GroupIdRow | null {
  if (typeof value === "string") return { id: value, firstRelease: null };
  const row = decodeJson<Partial<GroupIdRow>>(value);
  if (typeof row?.id !== "string") return null;
  return {
    id: row.id,
    firstRelease: typeof row.firstRelease === "string"
      ? row.firstRelease
      : null,
  };
}

/**
 * A project's groups by the release of their first entry: one listing of
 * its rows (one a group, at most `MAX_GROUPS`, 10,000).
 *
 * @example
 * ```ts
 * (await newGroupsByRelease(kv, projectId)).get("2.4.1"); // 1
 * ```
 */
export async function newGroupsByRelease(
  kv: Deno.Kv,
  projectId: string,
): Promise<Map<string, number>> {
  const counts = new Map<string, number>();
  const rows = kv.list({ prefix: errorGroupIdKey(projectId) }, {
    batchSize: 1000,
  });
  for await (const { value } of rows) {
    const release = decodeGroupIdRow(value)?.firstRelease;
    if (release) counts.set(release, (counts.get(release) ?? 0) + 1);
  }
  return counts;
}

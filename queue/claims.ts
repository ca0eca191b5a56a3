/**
 * Replay protection for the consumer (docs/design.md#replays): before a
 * batch's results are committed, every signature-authorized entry claims its
 * signature under `seen_signatures/<projectId>/<signature>`, checked against
 * the key and against its project's record.
 *
 * @module
 */
import type { AuthResult } from "../auth/authenticate.ts";
import type { ProjectCache, ProjectRead } from "../auth/projects.ts";
import { RecordedAtomic } from "../db/atomic.ts";
import { projectKey, seenSignatureKey } from "../db/keys.ts";
import {
  ATOMIC_MAX_CHECKS,
  decodeJson,
  encodeJson,
  getManyChunked,
} from "../db/kv.ts";
import type { QueuedEntry } from "../domain/entry.ts";

/**
 * How much longer than twice the skew a signature is remembered, ms: a copy
 * that passes the skew check may be processed later than the first by the
 * retries of its batch (1 s, 5 s, 30 s, 60 s) and the sweeps between them.
 * A copy processed later still (a dead letter replayed by hand, a backlog
 * held longer) is not recognized (docs/design.md#replays).
 */
export const CLAIM_MARGIN_MS = 10 * 60_000;

/** Project records by id, with the versionstamps they were judged with. */
export type Reads = Map<string, ProjectRead>;

/** Options of {@linkcode claimSignatures}. */
export interface ClaimOptions {
  kv: Deno.Kv;
  entries: QueuedEntry[];
  /** The entries' results; a replayed one becomes `replayed`. */
  results: AuthResult[];
  /** The records judged with; changed ones are replaced by fresh reads. */
  projects: Reads;
  /** Keeps the fresh reads. */
  cache: ProjectCache;
  /** Accepted signature timestamp distance from receipt. */
  maxSkewMs: number;
  /** Makes the claims' commit, as the consumer makes its result commit. */
  commit: (
    op: RecordedAtomic,
  ) => Promise<Deno.KvCommitResult | Deno.KvCommitError>;
}

/**
 * Claims the signature of every signature-authorized entry before the
 * results are committed: a claim writes the entry's id under
 * `seen_signatures/<projectId>/<signature>` with a check on the key's
 * versionstamp, so that of two processes accepting the same signature only
 * one wins. An entry whose signature is held by another entry becomes
 * `replayed`; one holding it itself (a redelivery) is no replay. Claims
 * also check their project records, so that none lands under a project
 * deleted meanwhile. Returns `false` when a project record changed: it
 * is read again into `projects`, and the batch must be judged again.
 *
 * @example
 * ```ts
 * const current = await claimSignatures({ kv, entries, results, projects, cache, maxSkewMs, commit });
 * if (!current) {} // judge the batch again on the fresh records
 * ```
 */
export async function claimSignatures(
  options: ClaimOptions,
): Promise<boolean> {
  const { kv, entries, results, projects, cache, maxSkewMs, commit } = options;
  const todo = entries.flatMap((_entry, i) => {
    const r = results[i]!;
    return r.ok && r.method === "signature" ? [i] : [];
  });
  const holders = new Map<string, string>();
  const keyOf = (entry: QueuedEntry) =>
    seenSignatureKey(entry.projectId, entry.signature!);
  while (todo.length > 0) {
    // One atomic operation checks at most ATOMIC_MAX_CHECKS keys: the
    // signatures and their projects.
    const owners = new Set<string>();
    let size = 0;
    while (size < todo.length) {
      const owner = entries[todo[size]!]!.projectId;
      const checks = size + owners.size + (owners.has(owner) ? 1 : 2);
      if (checks > ATOMIC_MAX_CHECKS) break;
      owners.add(owner);
      size++;
    }
    const chunk = todo.splice(0, size);
    const ids = [...owners];
    const seen = await getManyChunked(kv, [
      ...chunk.map((i) => keyOf(entries[i]!)),
      ...ids.map((id) => projectKey(id)),
    ]);
    const op = new RecordedAtomic();
    let current = true;
    ids.forEach((id, j) => {
      const fresh = seen[chunk.length + j]!;
      const versionstamp = projects.get(id)!.versionstamp;
      if (fresh.versionstamp === versionstamp) {
        op.check({ key: projectKey(id), versionstamp });
      } else {
        projects.set(id, cache.remember(id, fresh));
        current = false;
      }
    });
    if (!current) return false;
    const claiming: number[] = [];
    chunk.forEach((i, j) => {
      const entry = entries[i]!;
      const local = `${entry.projectId}\n${entry.signature}`;
      const stored = decodeJson<string>(seen[j]!.value);
      const holder = stored ?? holders.get(local);
      if (holder != null && holder !== entry.id) {
        results[i] = { ok: false, reason: "replayed" };
        return;
      }
      holders.set(local, entry.id);
      if (stored === entry.id) return;
      op.check(seen[j]!).set(keyOf(entry), encodeJson(entry.id), {
        expireIn: 2 * maxSkewMs + CLAIM_MARGIN_MS,
      });
      claiming.push(i);
    });
    if (claiming.length > 0 && !(await commit(op)).ok) {
      // Another process claimed one of them, or a project changed,
      // meanwhile: read them again.
      for (const i of claiming) {
        holders.delete(`${entries[i]!.projectId}\n${entries[i]!.signature}`);
      }
      todo.unshift(...claiming);
    }
  }
  return true;
}

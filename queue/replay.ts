/**
 * Replaying kept rejected entries (docs/design.md#kept-rejected-entries)
 * once an operator fixed a project's settings: each is judged again by the
 * consumer's authentication on the project's current record, and one that
 * passes is accepted as the consumer accepts entries (queue/accept.ts). A
 * replay stores an entry and deletes it from the ring of kept entries
 * (db/rejected.ts) in one atomic operation, checked on its slot and on the
 * project record: an entry is replayed at most once, and never under a
 * deleted project.
 *
 * @module
 */
import { authenticate } from "../auth/authenticate.ts";
import { projectKey, replayedCountKey, seenSignatureKey } from "../db/keys.ts";
import { decodeJson, encodeJson } from "../db/kv.ts";
import { type Project, ProjectNotFoundError } from "../db/projects.ts";
import { type KeptEntry, listKeptSlots } from "../db/rejected.ts";
import { levelRetentionMs } from "../db/retention_rules.ts";
import {
  type AuthMethod,
  type RejectReason,
  toLogRecord,
} from "../domain/entry.ts";
import { scrubRecords } from "./accept.ts";
import { admitAndAccept } from "./admit.ts";
import { SourceMapResolver } from "../db/symbolicate.ts";

/** Signature skew assumed for a kept entry that does not say its own. */
const DEFAULT_MAX_SKEW_MS = 300_000;
/** Attempts at one replay when its keys keep changing. */
const REPLAY_ATTEMPTS = 5;

/** Options of {@linkcode replayRejected}. */
export interface ReplayOptions {
  /** Clock. @default {Date.now} */
  now?: () => number;
}

/** What became of one replayed entry. */
export type ReplayResult =
  | { entryId: string; outcome: "stored"; auth: AuthMethod }
  | { entryId: string; outcome: "rejected"; reason: RejectReason }
  | { entryId: string; outcome: "skipped"; why: string }
  | { entryId: string; outcome: "missing" };

/**
 * Authenticates a project's kept rejected entries again, on the project's
 * current record (all of them, or those of `entryIds`), oldest first. An
 * entry that passes is stored, counted as accepted and as replayed, and
 * deleted from the kept entries, in one atomic operation checked on its slot,
 * on the project record and on its signature's claim: each entry is stored
 * at most once, whoever replays it at the same time. One that fails stays
 * kept. Rejection counters are history and do not change. An entry is
 * judged by the consumer's own authentication and stored by the consumer's
 * own {@linkcode admitAndAccept}: under the project's quota and spike
 * protection (an entry they refuse is counted as the consumer counts it,
 * and not kept), with the day's usage.
 *
 * Not replayed: entries whose content was too large to keep, `replayed`
 * entries (a signature authorizes one entry), signed entries later than the
 * signature skew after their timestamp (the memory of used signatures no
 * longer covers them), and entries older than their level's retention.
 * Throws {@linkcode ProjectNotFoundError} when the project does not exist.
 *
 * @example
 * ```ts
 * const results = await replayRejected(kv, projectId, undefined);
 * ```
 */
export async function replayRejected(
  kv: Deno.Kv,
  projectId: string,
  entryIds: string[] | undefined,
  options: ReplayOptions = {},
): Promise<ReplayResult[]> {
  const now = options.now ?? Date.now;
  if ((await kv.get(projectKey(projectId))).versionstamp === null) {
    throw new ProjectNotFoundError(projectId);
  }
  const slots = (await listKeptSlots(kv, projectId)).reverse();
  const wanted = entryIds ?? slots.map((s) => s.kept.entryId);
  const results: ReplayResult[] = [];
  for (const entryId of new Set(wanted)) {
    const slot = slots.find((s) => s.kept.entryId === entryId);
    results.push(
      slot
        ? await replayOne(kv, projectId, slot.key, entryId, now)
        : { entryId, outcome: "missing" },
    );
  }
  return results;
}

/** Why a kept entry can never be replayed, or `undefined`. */
function notReplayable(kept: KeptEntry): string | undefined {
  if (kept.entry === undefined) {
    return `its content (${kept.omittedBytes} bytes) was not kept`;
  }
  if (kept.reason === "replayed") {
    return "its signature was already used by another entry";
  }
  if (kept.scrubbed && kept.entry.signature !== undefined) {
    return "its content was scrubbed, so its signature cannot verify";
  }
  return undefined;
}

async function replayOne(
  kv: Deno.Kv,
  projectId: string,
  slotKey: Deno.KvKey,
  entryId: string,
  clock: () => number,
): Promise<ReplayResult> {
  for (let attempt = 0; attempt < REPLAY_ATTEMPTS; attempt++) {
    const [record, slot] = await kv.getMany([projectKey(projectId), slotKey]);
    const project = decodeJson<Project>(record!.value);
    if (project === null) throw new ProjectNotFoundError(projectId);
    const kept = decodeJson<KeptEntry>(slot!.value);
    if (kept === null || kept.entryId !== entryId) {
      return { entryId, outcome: "missing" };
    }
    const skip = (why: string): ReplayResult => ({
      entryId,
      outcome: "skipped",
      why,
    });
    const why = notReplayable(kept);
    if (why !== undefined) return skip(why);
    const entry = kept.entry!;
    const maxSkewMs = kept.maxSkewMs ?? DEFAULT_MAX_SKEW_MS;
    const verdict = authenticate(entry, project, maxSkewMs);
    if (!verdict.ok) {
      return { entryId, outcome: "rejected", reason: verdict.reason };
    }
    const now = clock();
    // Its level's retention: a retention rule may keep errors longer.
    const expireIn = entry.receivedAt +
      levelRetentionMs(project, entry.level) - now;
    if (expireIn <= 0) return skip("it is older than its level's retention");
    const op = kv.atomic().check(record!).check(slot!);
    if (verdict.method === "signature") {
      if (now > Number(entry.timestamp) + maxSkewMs) {
        return skip("its signature is older than the signature skew");
      }
      const key = seenSignatureKey(projectId, entry.signature!);
      const seen = await kv.get(key);
      const holder = decodeJson<string>(seen.value);
      if (holder !== null && holder !== entryId) {
        return { entryId, outcome: "rejected", reason: "replayed" };
      }
      op.check(seen).set(key, encodeJson(entryId), { expireIn: 2 * maxSkewMs });
    }
    op.delete(slotKey);
    const records = [toLogRecord(entry, verdict.method)];
    // Scrubbed by the rules of now (docs/privacy.md), resolved through the
    // maps of now (docs/errors.md#resolving).
    const lineOf = await new SourceMapResolver(kv).resolveRecords(
      projectId,
      records,
      scrubRecords(project, records),
    );
    // As the consumer stores a batch: under the quota, counted in usage.
    // Its grant is checked on the slot, as this commit is: a replay that
    // another one finished makes none.
    const admitted = await admitAndAccept(kv, op, {
      batches: [{ id: `replay-${entryId}`, guard: slot! }],
      project,
      versionstamp: record!.versionstamp,
      records,
      lineOf,
      now,
    });
    if (admitted.stored > 0) op.sum(replayedCountKey(projectId), 1n);
    if ((await op.commit()).ok) {
      if (admitted.stored > 0) {
        return { entryId, outcome: "stored", auth: verdict.method };
      }
      const reason = admitted.overQuota > 0 ? "over_quota" : "sampled";
      return { entryId, outcome: "rejected", reason };
    }
  }
  throw new Error(`Cannot replay entry "${entryId}": its keys kept changing`);
}

/**
 * The query benchmark's store written straight in its merged form, for
 * counts the real pipeline would take too long to ingest on a small
 * machine (10,000,000 entries): the same generated entries
 * (bench/query/ingest.ts's {@linkcode generateEntries}), cut into chunks
 * of {@linkcode DIRECT_CHUNK_ENTRIES} (about what the merger leaves: final
 * chunks of 500 entries, 28 KB or more compressed) within an hour each,
 * each written once as a final chunk with its counters and the hashes a
 * coarse group is made of, one commit per chunk. One merge round at the
 * end makes the coarse groups, as the merger would. Each entry is built
 * into a chunk once, where the pipeline builds it once per merge too.
 *
 * @module
 */
import type { QueuedEntry } from "../../domain/entry.ts";
import { idTime } from "../../domain/ids.ts";
import { addLogCounts } from "../../db/log_counts.ts";
import {
  buildChunk,
  CHUNK_SPAN_MS,
  FINAL_TIER,
} from "../../db/storage/chunk.ts";
import { encodeRecordLine } from "../../db/storage/lines.ts";
import { mergeProject } from "../../db/storage/merge.ts";
import { setPending } from "../../db/storage/coarse_groups.ts";
import { chunkExpireIn, setChunk } from "../../db/storage/write.ts";
import { DAY_MS } from "../../domain/entry.ts";
import {
  type BuildStoreOptions,
  type BuiltStore,
  createBenchProject,
  emptyBuilt,
  generateEntries,
  toRecord,
} from "./ingest.ts";

/** Entries of one chunk written straight. */
export const DIRECT_CHUNK_ENTRIES = 500;

/**
 * Generates `count` entries into a new project as final chunks, then runs
 * one merge round (the coarse groups).
 *
 * @example
 * ```ts
 * const store = await buildStoreDirect({ kv, count: 10_000_000, seed: 42, start, spanMs });
 * ```
 */
export async function buildStoreDirect(
  options: BuildStoreOptions,
): Promise<BuiltStore> {
  const { kv, start } = options;
  let t = start;
  const project = await createBenchProject(kv, () => t);
  const retentionMs = project.retentionDays * DAY_MS;
  const built = emptyBuilt(project.id, start);
  const began = performance.now();
  let chunk: QueuedEntry[] = [];
  let done = 0;
  const write = async () => {
    const records = chunk.map(toRecord).sort((a, b) => a.id < b.id ? -1 : 1);
    const members = new Set<number>();
    const built = buildChunk(records.map(encodeRecordLine), {
      records,
      tier: FINAL_TIER,
      members,
    });
    t = records.at(-1)!.receivedAt;
    const expireIn = chunkExpireIn(built.summary.firstId, retentionMs, t);
    const op = kv.atomic();
    setChunk(op, project.id, built, { expireIn });
    addLogCounts(op, project.id, records);
    setPending(op, project.id, built.summary, members, expireIn);
    const result = await op.commit();
    if (!result.ok) throw new Error("Cannot write a chunk");
    done += chunk.length;
    if (
      Math.floor(done / 100_000) > Math.floor((done - chunk.length) / 100_000)
    ) {
      options.onProgress?.(Math.floor(done / 100_000) * 100_000);
    }
    chunk = [];
  };
  for (const entry of generateEntries(options, built)) {
    const first = chunk[0];
    if (
      first !== undefined &&
      (chunk.length >= DIRECT_CHUNK_ENTRIES ||
        idTime(entry.id) - idTime(first.id) >= CHUNK_SPAN_MS / 2)
    ) await write();
    chunk.push(entry);
  }
  if (chunk.length > 0) await write();
  built.ingestSeconds = (performance.now() - began) / 1000;
  built.end = t + (options.finalDelayMs ?? 60_000);
  const merging = performance.now();
  await mergeProject(kv, project.id, { now: built.end });
  built.mergeSeconds = (performance.now() - merging) / 1000;
  return built;
}

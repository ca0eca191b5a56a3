/**
 * The query benchmark's store written straight in its merged form, for
 * counts the real pipeline would take too long to ingest on a small
 * machine (10,000,000 entries): the same generated entries
 * (bench/query/ingest.ts's {@linkcode generateEntries}), cut into chunks
 * of {@linkcode DIRECT_CHUNK_ENTRIES} (about what the merger leaves: final
 * chunks of 500 entries, 28 KB or more compressed) within an hour each,
 * each built once as a final chunk (by {@linkcode WORKERS} workers,
 * bench/query/direct_worker.ts) and written with its counters and the
 * hashes a coarse group is made of, one commit per chunk. One merge round at the
 * end makes the coarse groups, as the merger would. Each entry is built
 * into a chunk once, where the pipeline builds it once per merge too.
 *
 * @module
 */
import type { LogRecord } from "../../domain/entry.ts";
import { idTime } from "../../domain/ids.ts";
import { addLogCounts } from "../../db/log_counts.ts";
import { type BuiltChunk, CHUNK_SPAN_MS } from "../../db/storage/chunk.ts";
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
import type { DirectJob } from "./direct_worker.ts";

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
  const pool = new BuilderPool(WORKERS);
  let done = 0;
  // Several chunks a commit: a commit costs tens of milliseconds on a
  // busy disk.
  let op = kv.atomic();
  let bytes = 0;
  let mutations = 0;
  const commit = async () => {
    if (mutations === 0) return;
    if (!(await op.commit()).ok) throw new Error("Cannot write chunks");
    op = kv.atomic();
    bytes = mutations = 0;
  };
  const write = async (result: Built) => {
    const { chunk, members } = result;
    const lastTime = idTime(chunk.summary.lastId);
    if (lastTime > t) t = lastTime;
    const expireIn = chunkExpireIn(chunk.summary.firstId, retentionMs, t);
    const size = chunkBytes(chunk) + 4 * members.size;
    if (bytes + size > COMMIT_BYTES || mutations > COMMIT_MUTATIONS) {
      await commit();
    }
    mutations += setChunk(op, project.id, chunk, { expireIn });
    mutations += addLogCounts(op, project.id, result.counts);
    mutations += setPending(op, project.id, chunk.summary, members, expireIn);
    bytes += size;
    const before = done;
    done += chunk.summary.count;
    if (Math.floor(done / 100_000) > Math.floor(before / 100_000)) {
      options.onProgress?.(Math.floor(done / 100_000) * 100_000);
    }
  };
  let records: LogRecord[] = [];
  const send = async () => {
    records.sort((a, b) => a.id < b.id ? -1 : 1);
    for (const result of await pool.submit(records)) await write(result);
    records = [];
  };
  for (const entry of generateEntries(options, built)) {
    const first = records[0];
    if (
      first !== undefined &&
      (records.length >= DIRECT_CHUNK_ENTRIES ||
        entry.receivedAt - first.receivedAt >= CHUNK_SPAN_MS / 2)
    ) await send();
    records.push(toRecord(entry));
  }
  if (records.length > 0) await send();
  for (const result of await pool.drain()) await write(result);
  await commit();
  pool.close();
  built.ingestSeconds = (performance.now() - began) / 1000;
  built.end = t + (options.finalDelayMs ?? 60_000);
  const merging = performance.now();
  await mergeProject(kv, project.id, { now: built.end });
  built.mergeSeconds = (performance.now() - merging) / 1000;
  return built;
}

/** Bytes and mutations of one commit, about: under KV's 800 KiB and 1,000. */
const COMMIT_BYTES = 640_000;
const COMMIT_MUTATIONS = 700;

/** Bytes of a chunk's values. */
function chunkBytes(chunk: BuiltChunk): number {
  let n = chunk.head.length + chunk.summaryValue.length +
    chunk.bloomValue.length;
  for (const slice of chunk.rest) n += slice.length;
  if (chunk.columns) {
    n += chunk.columns.head.length;
    for (const slice of chunk.columns.rest) n += slice.length;
  }
  return n + 2_000;
}

/** Workers that build chunks. */
const WORKERS = 3;

/** A chunk a worker built, with its records' times and levels. */
interface Built {
  chunk: BuiltChunk;
  members: Set<number>;
  counts: { receivedAt: number; level: string }[];
}

/**
 * Chunks built by workers, at most two per worker in flight: `submit`
 * hands out the records of a chunk and answers the chunks finished since.
 */
class BuilderPool {
  readonly #workers: Worker[];
  readonly #idle: Worker[];
  readonly #finished: Built[] = [];
  #inFlight = 0;
  #wake: (() => void) | null = null;

  constructor(size: number) {
    const url = new URL("./direct_worker.ts", import.meta.url).href;
    this.#workers = Array.from(
      { length: size },
      () => new Worker(url, { type: "module" }),
    );
    this.#idle = [];
    for (const worker of this.#workers) {
      this.#idle.push(worker, worker);
      worker.onmessage = (event) => {
        const { chunk, members } = event.data;
        const counts = this.#counts.get(event.data.n)!;
        this.#counts.delete(event.data.n);
        this.#finished.push({ chunk, members, counts });
        this.#idle.push(worker);
        this.#inFlight--;
        this.#wake?.();
      };
    }
  }

  readonly #counts = new Map<number, Built["counts"]>();
  #n = 0;

  async submit(records: LogRecord[]): Promise<Built[]> {
    while (this.#idle.length === 0) await this.#wait();
    const n = this.#n++;
    this.#counts.set(
      n,
      records.map((r) => ({ receivedAt: r.receivedAt, level: r.level })),
    );
    this.#inFlight++;
    this.#idle.shift()!.postMessage({ n, records } satisfies DirectJob);
    return this.#finished.splice(0);
  }

  async drain(): Promise<Built[]> {
    while (this.#inFlight > 0) await this.#wait();
    return this.#finished.splice(0);
  }

  close(): void {
    for (const worker of this.#workers) worker.terminate();
  }

  #wait(): Promise<void> {
    return new Promise((resolve) => {
      this.#wake = () => {
        this.#wake = null;
        resolve();
      };
    });
  }
}

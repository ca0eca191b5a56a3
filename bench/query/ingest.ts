/**
 * Fills a KV store with generated entries the way the service stores them:
 * through the real producer (group commit) and consumer of
 * `createPipeline`, with an injected clock that spreads receipt times over
 * a span (7 days for the benchmark), and the merger run every
 * `mergeEveryMs` of that clock, as the service's merger would run
 * every few seconds. The benchmark (bench/query/main.ts) and the engine's
 * exactness test (tests/db/query/generated_test.ts) both build their store
 * with it.
 *
 * Entries are submitted 200 at a time (a group spans minutes of receipt
 * time), so ingest runs at the pipeline's speed while pages stay as small
 * as at real traffic: the consumer cuts pages at one second, and at a few
 * entries per second a page holds one or two.
 *
 * @module
 */
import type { LogRecord, QueuedEntry } from "../../domain/entry.ts";
import { createProject } from "../../db/projects.ts";
import { mergeProject } from "../../db/storage/merge.ts";
import { createPipeline } from "../../queue/pipeline.ts";
import { createId } from "../../domain/ids.ts";
import {
  createGenerator,
  type GeneratedEntry,
  mulberry32,
  plantWord,
} from "./generate.ts";

/** The browser origin of generated entries without an app id. */
export const ORIGIN = "https://shop.example.com";
/** The app ids the generator sends. */
const APP_IDS = ["com.example.shop.android", "com.example.shop.ios"];
/** Entries submitted per group. */
const GROUP = 200;

/** Options of {@linkcode buildStore}. */
export interface BuildStoreOptions {
  kv: Deno.Kv;
  /** Entries to generate. */
  count: number;
  /** Seed of the generator. */
  seed: number;
  /** Receipt time of the first entry, Unix ms. */
  start: number;
  /** Receipt times spread over this span. */
  spanMs: number;
  /** Words planted in one entry each, by entry index. */
  plant?: Map<number, string>;
  /** Keep the stored records (for comparisons). @default {false} */
  keep?: boolean;
  /** Keep the records of these entries (by index) in `samples`. */
  sample?: number[];
  /**
   * Keep every entry's id in `ids` (a 10,000,000-entry store would hold
   * about 600 MB of them). @default {true}
   */
  ids?: boolean;
  /** Receipt time between merge rounds. @default {600000} */
  mergeEveryMs?: number;
  /** Clock reading of the last merge round, after the last entry. @default {60000} */
  finalDelayMs?: number;
  /** Final chunks a coarse group takes. @default {COARSE_GROUP_CHUNKS} */
  coarseGroupChunks?: number;
  /** Told every 100,000 entries. */
  onProgress?: (done: number) => void;
}

/** What {@linkcode buildStore} stored. */
export interface BuiltStore {
  projectId: string;
  /** Bytes of the entries' JSON as sent (`POST /api/v1/logs` bodies). */
  rawBytes: number;
  /** Id of each entry, by index (unless `ids` was false). */
  ids: string[];
  /** The stored records, by index, when `keep` was set. */
  records: LogRecord[];
  /** The records of the entries named by `sample`, by index. */
  samples: Map<number, LogRecord>;
  /** Entries per level. */
  levels: Record<string, number>;
  /** Entries per `context.userId`. */
  users: Map<string, number>;
  /** Id of each `context.userId`'s newest entry. */
  newestByUser: Map<string, string>;
  /**
   * Errors and criticals per hour and `context.service` (`null` when
   * missing): `<hour start, Unix ms> <service JSON>`.
   */
  severeByHour: Map<string, number>;
  /** The clock at the end. */
  end: number;
  /** Seconds spent ingesting, and merging. */
  ingestSeconds: number;
  mergeSeconds: number;
}

const encoder = new TextEncoder();

/** Counts what the aggregation queries answer (bench/query/queries.ts). */
function tally(
  built: BuiltStore,
  generated: GeneratedEntry,
  receivedAt: number,
): void {
  const user = generated.context.userId;
  built.users.set(user, (built.users.get(user) ?? 0) + 1);
  if (generated.level !== "error" && generated.level !== "critical") return;
  const service = (generated.context as Record<string, unknown>).service;
  const key = `${Math.floor(receivedAt / 3_600_000) * 3_600_000} ${
    JSON.stringify(service ?? null)
  }`;
  built.severeByHour.set(key, (built.severeByHour.get(key) ?? 0) + 1);
}

/**
 * The entry the endpoint would queue for `generated`, received at
 * `receivedAt`, and the bytes of its JSON as sent.
 */
function toQueued(
  generated: GeneratedEntry,
  projectId: string,
  receivedAt: number,
): { entry: QueuedEntry; sentBytes: number } {
  const { appid, ...body } = generated;
  const entry: QueuedEntry = {
    id: createId(receivedAt),
    receivedAt,
    projectId,
    level: body.level,
    data: body.data,
    device: body.device,
    context: body.context,
    ...(appid === undefined ? { origin: ORIGIN } : { appid }),
  };
  const sentBytes = encoder.encode(JSON.stringify({
    level: body.level,
    projectId,
    data: body.data,
    device: body.device,
    context: body.context,
    ...(appid === undefined ? {} : { appid }),
  })).length;
  return { entry, sentBytes };
}

/** The record the store keeps of a queued `entry`. */
export function toRecord(entry: QueuedEntry): LogRecord {
  const { appid } = entry;
  const record: LogRecord = {
    id: entry.id,
    receivedAt: entry.receivedAt,
    level: entry.level,
    data: entry.data,
    device: entry.device!,
    context: entry.context!,
    auth: appid === undefined ? "origin" : "appid",
  };
  if (appid !== undefined) record.appid = appid;
  else record.origin = ORIGIN;
  return record;
}

/** The service's producer and consumer over `kv`, on the bench's clock. */
function benchPipeline(kv: Deno.Kv, now: () => number) {
  return createPipeline({
    kv,
    now,
    config: {
      consumerConcurrency: 4,
      maxPendingRequests: 100_000,
      projectCacheMs: 3_600_000,
      signatureMaxSkewMs: 300_000,
    },
    onError: (batchId, error) =>
      console.error(`Cannot process batch "${batchId}":`, error),
  });
}

/**
 * Generates, ingests and merges `count` entries into a new project.
 *
 * @example
 * ```ts
 * const store = await buildStore({ kv, count: 20_000, seed: 7, start, spanMs: 7 * 86_400_000 });
 * ```
 */
export async function buildStore(
  options: BuildStoreOptions,
): Promise<BuiltStore> {
  const { kv, start } = options;
  let t = start;
  const now = () => t;
  const project = await createBenchProject(kv, now);
  const pipeline = benchPipeline(kv, now);
  const mergeEveryMs = options.mergeEveryMs ?? 600_000;
  const built = emptyBuilt(project.id, start);
  let mergeSeconds = 0;
  const merge = async (at: number) => {
    await pipeline.worker.idle();
    const began = performance.now();
    t = at;
    await mergeProject(kv, project.id, {
      now: at,
      ...(options.coarseGroupChunks === undefined
        ? {}
        : { coarseGroupChunks: options.coarseGroupChunks }),
    });
    mergeSeconds += (performance.now() - began) / 1000;
  };
  const began = performance.now();
  let nextMerge = start + mergeEveryMs;
  let group: QueuedEntry[] = [];
  let done = 0;
  for (const entry of generateEntries(options, built)) {
    group.push(entry);
    if (group.length < GROUP && done + group.length < options.count) continue;
    t = group.at(-1)!.receivedAt;
    await Promise.all(group.map((entry) => pipeline.producer.submit(entry)));
    if ((done / GROUP) % 8 === 7) await pipeline.worker.idle();
    if (t >= nextMerge) {
      await merge(t);
      nextMerge = t + mergeEveryMs;
    }
    done += group.length;
    group = [];
    if (done % 100_000 === 0) options.onProgress?.(done);
  }
  await pipeline.stop();
  built.end = t + (options.finalDelayMs ?? 60_000);
  await merge(built.end);
  built.mergeSeconds = mergeSeconds;
  built.ingestSeconds = (performance.now() - began) / 1000 - mergeSeconds;
  return built;
}

/** The benchmark's project, created at `now`. */
export async function createBenchProject(kv: Deno.Kv, now: () => number) {
  return await createProject(kv, {
    name: "query bench",
    allow: [ORIGIN, ...APP_IDS],
    now,
  });
}

/** A {@linkcode BuiltStore} of nothing yet. */
export function emptyBuilt(projectId: string, start: number): BuiltStore {
  return {
    projectId,
    rawBytes: 0,
    ids: [],
    records: [],
    samples: new Map(),
    levels: {},
    users: new Map(),
    newestByUser: new Map(),
    severeByHour: new Map(),
    end: start,
    ingestSeconds: 0,
    mergeSeconds: 0,
  };
}

/**
 * The entries of a store as the endpoint would queue them, in receipt
 * order, each counted into `built` (ids, levels, users, samples) as it is
 * made.
 */
export function* generateEntries(
  options: BuildStoreOptions,
  built: BuiltStore,
): Generator<QueuedEntry> {
  const { count, start, spanMs } = options;
  const generator = createGenerator(options.seed);
  const jitter = mulberry32(options.seed ^ 0x5eed);
  const sampled = new Set(options.sample ?? []);
  for (let i = 0; i < count; i++) {
    const receivedAt = start + Math.floor((i + jitter()) * spanMs / count);
    let generated: GeneratedEntry = generator.next();
    const word = options.plant?.get(i);
    if (word !== undefined) generated = plantWord(generated, word);
    const { entry, sentBytes } = toQueued(
      generated,
      built.projectId,
      receivedAt,
    );
    built.rawBytes += sentBytes;
    if (options.ids !== false) built.ids.push(entry.id);
    built.newestByUser.set(generated.context.userId, entry.id);
    built.levels[entry.level] = (built.levels[entry.level] ?? 0) + 1;
    tally(built, generated, receivedAt);
    if (options.keep || sampled.has(i)) {
      const record = toRecord(entry);
      if (options.keep) built.records.push(record);
      if (sampled.has(i)) built.samples.set(i, record);
    }
    yield entry;
  }
}

/**
 * Fixtures shared by the test suites: an in-memory KV, a clock driven by
 * hand, entry builders, and a pipeline wired as the server wires it.
 *
 * @module
 */
import { createApp } from "../app.ts";
import type { Config } from "../config.ts";
import type { LogRecord } from "../db/logs.ts";
import { listLogs } from "../db/query/mod.ts";
import { createProject, type Project } from "../db/projects.ts";
import { sign } from "../auth/signature.ts";
import {
  createPipeline,
  type Pipeline,
  type PipelineOptions,
} from "../queue/pipeline.ts";
import type { Admission } from "../routes/logs.ts";

/** A clock that moves only when told to. */
export interface FakeClock {
  now: () => number;
  advance(ms: number): void;
  set(ms: number): void;
}

/** Returns a clock starting at `start` (2026-01-01T00:00:00Z by default). */
export function fakeClock(start = Date.UTC(2026, 0, 1)): FakeClock {
  let t = start;
  return {
    now: () => t,
    advance: (ms) => {
      t += ms;
    },
    set: (ms) => {
      t = ms;
    },
  };
}

/** The configuration the tests run with (queue delivery off unless asked). */
export function testConfig(overrides: Partial<Config> = {}): Config {
  return {
    port: 0,
    hostname: "127.0.0.1",
    kvPath: ":memory:",
    maxBodyBytes: 65536,
    rateLimitRps: 20,
    rateLimitBurst: 50,
    trustProxy: 0,
    signatureMaxSkewMs: 300_000,
    queue: false,
    consumerConcurrency: 4,
    maxPendingRequests: 20_000,
    projectCacheMs: 0,
    ...overrides,
  };
}

let counter = 0;

/** A valid entry body; `overrides` replace members. */
export function randomEntry(
  overrides: Record<string, unknown> = {},
): Record<string, unknown> {
  counter++;
  return {
    level: "info",
    projectId: "p-unknown",
    data: {
      title: `Entry ${counter}`,
      message: "Something happened",
      n: counter,
    },
    device: { type: "browser", os: "Linux" },
    context: { environment: "test", sessionId: `s${counter}` },
    ...overrides,
  };
}

/** A test harness: KV, clock, project, pipeline and app. */
export interface Harness {
  kv: Deno.Kv;
  clock: FakeClock;
  config: Config;
  pipeline: Pipeline;
  app: ReturnType<typeof createApp>;
  /** Ids of the batches `process()` has processed, in order. */
  batches: string[];
  /** POSTs `body` (JSON-encoded unless a string) to the endpoint. */
  post(
    body: unknown,
    headers?: Record<string, string>,
    remoteAddr?: string,
  ): Promise<Response>;
  /** Processes every committed batch (as the worker would). */
  process(): Promise<void>;
  /** Creates a project. */
  project(allow?: string[]): Promise<Project>;
  /** Stored entries of a project, oldest first. */
  logs(projectId: string): Promise<LogRecord[]>;
  close(): Promise<void>;
}

/** Options of {@linkcode harness}. */
export interface HarnessOptions {
  config?: Partial<Config>;
  clock?: FakeClock;
  kv?: Deno.Kv;
  admission?: Admission;
  pipeline?: Partial<PipelineOptions>;
}

/**
 * Builds a harness on an in-memory KV. Batches are not handed to the worker:
 * tests call `process()` to run the consumer when they choose.
 */
export async function harness(options: HarnessOptions = {}): Promise<Harness> {
  const kv = options.kv ?? await Deno.openKv(":memory:");
  const clock = options.clock ?? fakeClock();
  const config = testConfig(options.config);
  const batches: string[] = [];
  const pipeline = createPipeline({
    kv,
    config,
    now: clock.now,
    handOver: false,
    onError: () => {},
    ...options.pipeline,
  });
  const producer = pipeline.producer;
  const app = createApp({
    producer,
    maxBodyBytes: config.maxBodyBytes,
    now: clock.now,
    ...(options.admission ? { admission: options.admission } : {}),
  });
  return {
    kv,
    clock,
    config,
    pipeline,
    app,
    batches,
    post(body, headers = {}, remoteAddr = "203.0.113.7") {
      return Promise.resolve(app.request("/api/v1/logs", {
        method: "POST",
        headers: { "Content-Type": "application/json", ...headers },
        body: typeof body === "string" ? body : JSON.stringify(body),
      }, {
        remoteAddr: { transport: "tcp", hostname: remoteAddr, port: 40000 },
      }));
    },
    async process() {
      await producer.flush();
      for await (const entry of kv.list({ prefix: ["pending_batches"] })) {
        const id = String(entry.key[1]);
        batches.push(id);
        await pipeline.consumer.process(id);
      }
    },
    project(allow = ["https://app.example.com", "com.example.app.ios"]) {
      return createProject(kv, { name: "test", allow, now: clock.now });
    },
    async logs(projectId) {
      const out: LogRecord[] = [];
      for await (const log of listLogs(kv, projectId)) out.push(log);
      return out;
    },
    async close() {
      await pipeline.stop();
      if (!options.kv) kv.close();
    },
  };
}

/**
 * Signs a body the way a JavaScript server client does: compact JSON of
 * `{level, projectId, device, context, data}` in that order.
 */
export function signEntry(
  secret: string,
  body: Record<string, unknown>,
  timestamp: number,
): { timestamp: string; signature: string } {
  const { level, projectId, device, context, data } = body;
  const params = JSON.stringify({ level, projectId, device, context, data });
  return {
    timestamp: String(timestamp),
    signature: sign(secret, `${projectId}${params}${timestamp}`),
  };
}

// ---------------------------------------------------------------------------
// Consumer-side fixtures: counters, recent rejections, pending batches and a
// second consumer, all read through the key builders of db/keys.ts. (The
// imports sit here so that these additions stay at the end of the file.)

import type { RejectReason } from "../auth/authenticate.ts";
import { ProjectCache } from "../auth/projects.ts";
import {
  acceptedCountKey,
  globalRejectedCountKey,
  pendingBatchesPrefix,
  rejectedCountKey,
  rejectionsPrefix,
} from "../db/keys.ts";
import type { BatchHeader } from "../queue/batch.ts";
import { Consumer, type Rejection } from "../queue/consumer.ts";

/** Every reason an entry can be dropped for (CONTRACT §4). */
export const REJECT_REASONS: readonly RejectReason[] = [
  "unknown_project",
  "bad_origin",
  "unknown_appid",
  "bad_signature",
  "stale_timestamp",
  "replayed",
  "no_credentials",
  "unknown_level",
];

/**
 * Reads a `Deno.KvU64` counter as a number; 0 when it was never written.
 *
 * @example
 * ```ts
 * await readCounter(h.kv, acceptedCountKey(project.id)); // 3
 * ```
 */
export async function readCounter(
  kv: Deno.Kv,
  key: Deno.KvKey,
): Promise<number> {
  const entry = await kv.get<Deno.KvU64>(key);
  return entry.value === null ? 0 : Number(entry.value.value);
}

/** A project's counters, as `deno task stats` reports them. */
export interface Stats {
  accepted: number;
  /** Rejections by reason; reasons never counted are left out. */
  rejected: Partial<Record<RejectReason, number>>;
}

/**
 * Reads a project's counters of accepted and rejected entries.
 *
 * @example
 * ```ts
 * assert.deepEqual(await stats(h.kv, id), { accepted: 1, rejected: {} });
 * ```
 */
export async function stats(kv: Deno.Kv, projectId: string): Promise<Stats> {
  const rejected: Partial<Record<RejectReason, number>> = {};
  for (const reason of REJECT_REASONS) {
    const n = await readCounter(kv, rejectedCountKey(projectId, reason));
    if (n > 0) rejected[reason] = n;
  }
  return {
    accepted: await readCounter(kv, acceptedCountKey(projectId)),
    rejected,
  };
}

/** Reads the global counters of rejections for projects that do not exist. */
export async function globalRejected(
  kv: Deno.Kv,
): Promise<Partial<Record<RejectReason, number>>> {
  const rejected: Partial<Record<RejectReason, number>> = {};
  for (const reason of REJECT_REASONS) {
    const n = await readCounter(kv, globalRejectedCountKey(reason));
    if (n > 0) rejected[reason] = n;
  }
  return rejected;
}

/** A project's recent rejections (the ring of slots), oldest entry first. */
export async function recentRejections(
  kv: Deno.Kv,
  projectId: string,
): Promise<Rejection[]> {
  const out: Rejection[] = [];
  for await (
    const entry of kv.list<Rejection>({ prefix: rejectionsPrefix(projectId) })
  ) {
    out.push(entry.value);
  }
  return out.sort((a, b) => a.entryId < b.entryId ? -1 : 1);
}

/** The batches waiting to be processed, oldest first. */
export async function pendingBatches(
  kv: Deno.Kv,
): Promise<{ id: string; header: BatchHeader }[]> {
  const out: { id: string; header: BatchHeader }[] = [];
  for await (
    const entry of kv.list<BatchHeader>({ prefix: pendingBatchesPrefix() })
  ) {
    out.push({ id: String(entry.key[1]), header: entry.value });
  }
  return out;
}

/**
 * A consumer with its own project cache on the harness's KV and clock, as a
 * second process sharing the database would build it.
 */
export function otherConsumer(h: Harness): Consumer {
  return new Consumer({
    kv: h.kv,
    now: h.clock.now,
    maxSkewMs: h.config.signatureMaxSkewMs,
    projects: new ProjectCache(h.kv, {
      ttlMs: h.config.projectCacheMs,
      now: h.clock.now,
    }),
  });
}

/** Runs `fn` with a fresh harness and closes it afterwards. */
export async function withHarness(
  fn: (h: Harness) => Promise<void>,
  options: HarnessOptions = {},
): Promise<void> {
  const h = await harness(options);
  try {
    await fn(h);
  } finally {
    await h.close();
  }
}

/** POSTs `body` (an object, or the client's own text) and checks it was queued. */
export async function postQueued(
  h: Harness,
  body: Record<string, unknown> | string,
  headers: Record<string, string> = {},
): Promise<void> {
  const res = await h.post(body, headers);
  if (res.status !== 200) {
    throw new Error(
      `Expected 200 queued, got ${res.status}: ${await res.text()}`,
    );
  }
  const answer = await res.json();
  if (answer.status !== "queued") {
    throw new Error(`Expected status "queued", got ${JSON.stringify(answer)}`);
  }
}

/**
 * Processes what is queued and checks that the project holds exactly one
 * stored entry, authorized by `auth`, and that the counters say one accepted
 * and none rejected. Returns the entry for further checks.
 */
export async function assertStoredOnce(
  h: Harness,
  projectId: string,
  auth: LogRecord["auth"],
): Promise<LogRecord> {
  await h.process();
  const logs = await h.logs(projectId);
  const counted = await stats(h.kv, projectId);
  if (logs.length !== 1 || logs[0]!.auth !== auth) {
    throw new Error(
      `Expected one entry stored with auth "${auth}", found ${
        JSON.stringify(logs.map((l) => l.auth))
      }`,
    );
  }
  if (counted.accepted !== 1 || Object.keys(counted.rejected).length > 0) {
    throw new Error(
      `Expected 1 accepted, 0 rejected: ${JSON.stringify(counted)}`,
    );
  }
  return logs[0]!;
}

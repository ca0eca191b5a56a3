/**
 * Fixtures shared by the test suites: an in-memory KV, a clock driven by
 * hand, entry builders, and a pipeline wired as the server wires it.
 *
 * @module
 */
import { fixtureTest, withNewProject } from "./fixture.ts";
import assert from "node:assert/strict";
import { createApp } from "../../app.ts";
import { type Config, loadConfig } from "../../config.ts";
import { listLogs } from "../../db/query/mod.ts";
import type { LogRecord, RejectReason } from "../../domain/entry.ts";
import { createProject, type Project } from "../../db/projects.ts";
import { sign } from "../../auth/signature.ts";
import {
  createPipeline,
  type Pipeline,
  type PipelineOptions,
} from "../../queue/pipeline.ts";
import type { Admission } from "../../routes/logs.ts";

/**
 * The web origin a harness's project allows unless told otherwise: entries
 * sent with it are stored, by origin.
 */
export const ORIGIN = "https://app.example.com";

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

/**
 * The real clock, for tests whose other side (a browser, a client on a real
 * socket) runs on it: it cannot be moved, and a test that tries fails rather
 * than going on at the wrong time.
 */
export const wallClock: FakeClock = {
  now: () => Date.now(),
  advance: () => {
    throw new Error("This test runs on the real clock, which cannot be moved");
  },
  set: () => {
    throw new Error("This test runs on the real clock, which cannot be moved");
  },
};

/**
 * Waits for `promise`, or rejects after `ms` milliseconds with a message
 * naming what was awaited: a test that waits for an event fails instead of
 * hanging when the event never comes. The timer is cleared either way.
 *
 * @example
 * ```ts
 * await withTimeout(worker.idle(), EVENT_TIMEOUT_MS, "the worker to go idle");
 * ```
 */
export async function withTimeout<T>(
  promise: Promise<T>,
  ms: number,
  what: string,
): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new Error(`Timed out after ${ms} ms waiting for ${what}`)),
      ms,
    );
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** How long a test waits for an event within the process before it fails. */
export const EVENT_TIMEOUT_MS = 5000;

/**
 * Waits until `worker` has finished the batches in hand, failing the test
 * after {@linkcode EVENT_TIMEOUT_MS}.
 *
 * @example
 * ```ts
 * h.pipeline.worker.push(ids);
 * await untilIdle(h.pipeline.worker);
 * ```
 */
export function untilIdle(worker: { idle(): Promise<void> }): Promise<void> {
  return withTimeout(
    worker.idle(),
    EVENT_TIMEOUT_MS,
    "the worker to finish its batches",
  );
}

/**
 * The configuration the tests run with: the defaults of `loadConfig`, on an
 * in-memory KV, with queue delivery off and no project cache unless asked.
 *
 * @example
 * ```ts
 * testConfig({ maxBodyBytes: 4096 }).rateLimitBurst; // 50, the default
 * ```
 */
export function testConfig(overrides: Partial<Config> = {}): Config {
  return {
    ...loadConfig({
      PORT: "0",
      HOSTNAME: "127.0.0.1",
      KV_PATH: ":memory:",
      PROJECT_CACHE_MS: "0",
    }),
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
    context: { environment: "test", traceId: `t${counter}` },
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
  /**
   * Errors the pipeline reported (failed processing attempts, a queue
   * listener that stopped). `close()` fails the test when there are any,
   * unless the harness was built with `expectErrors`.
   */
  errors: WorkerError[];
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
  /**
   * Stops the pipeline, closes the KV it opened, and throws when the
   * pipeline reported errors that were not expected.
   */
  close(options?: { checkErrors?: boolean }): Promise<void>;
}

/** An error the pipeline reported through its `onError`. */
export interface WorkerError {
  /** The batch being processed; `""` for the sweeper or the listener. */
  batchId: string;
  error: unknown;
}

/** Options of {@linkcode harness}. */
export interface HarnessOptions {
  config?: Partial<Config>;
  clock?: FakeClock;
  kv?: Deno.Kv;
  admission?: Admission;
  pipeline?: Partial<PipelineOptions>;
  /**
   * The test makes processing fail on purpose: errors are collected in
   * `h.errors` for it to check, and do not fail it. @default {false}
   */
  expectErrors?: boolean;
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
  const errors: WorkerError[] = [];
  const pipeline = createPipeline({
    kv,
    config,
    now: clock.now,
    handOver: false,
    onError: (batchId, error) => errors.push({ batchId, error }),
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
    errors,
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
      for await (const entry of kv.list({ prefix: pendingBatchesPrefix() })) {
        const id = batchIdOf(entry.key);
        batches.push(id);
        await pipeline.consumer.process(id);
      }
    },
    project(allow = [ORIGIN, "com.example.app.ios"]) {
      return createProject(kv, { name: "test", allow, now: clock.now });
    },
    async logs(projectId) {
      const out: LogRecord[] = [];
      for await (const log of listLogs(kv, projectId)) out.push(log);
      return out;
    },
    async close({ checkErrors = true } = {}) {
      await pipeline.stop();
      if (!options.kv) kv.close();
      if (checkErrors && !options.expectErrors && errors.length > 0) {
        throw new Error(
          `Expected no worker errors, got ${errors.length}: ${
            errors.map(({ batchId, error }) =>
              `batch "${batchId}": ${
                error instanceof Error ? error.message : String(error)
              }`
            ).join("; ")
          }`,
          { cause: errors[0]!.error },
        );
      }
    },
  };
}

/**
 * The signed members of a body, `{level, projectId, device, context, data}`
 * in that order, for a test to write as JSON the way a client would.
 *
 * @example
 * ```ts
 * const params = JSON.stringify(signedMembers(body), null, 1);
 * ```
 */
export function signedMembers(
  body: Record<string, unknown>,
): Record<string, unknown> {
  const { level, projectId, device, context, data } = body;
  return { level, projectId, device, context, data };
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
  const params = JSON.stringify(signedMembers(body));
  return {
    timestamp: String(timestamp),
    signature: sign(secret, `${body.projectId}${params}${timestamp}`),
  };
}

/**
 * A new project with no allowed origin, an entry for it, and that entry's
 * headers signed now.
 *
 * @example
 * ```ts
 * const { project, body, headers } = await signedEntry(h);
 * await postQueued(h, body, headers);
 * ```
 */
export async function signedEntry(h: Harness): Promise<{
  project: Project;
  body: Record<string, unknown>;
  headers: { timestamp: string; signature: string };
}> {
  const project = await h.project([]);
  const body = randomEntry({ projectId: project.id });
  const headers = signEntry(project.secret, body, h.clock.now());
  return { project, body, headers };
}

// ---------------------------------------------------------------------------
// Consumer-side fixtures: counters, recent rejections, pending batches and a
// second consumer, all read through the key builders of db/keys.ts. (The
// imports sit here so that these additions stay at the end of the file.)

import { ProjectCache } from "../../auth/projects.ts";
import { batchIdOf, pendingBatchesPrefix } from "../../db/keys.ts";
import {
  readStats,
  readUnknownProjectRejections,
  type Rejection,
} from "../../db/stats.ts";
import { type BatchHeader, decodeBatchHeader } from "../../queue/batch.ts";
import { Consumer } from "../../queue/consumer.ts";
import { MAX_ATTEMPTS, recordFailure } from "../../queue/dead_letters.ts";

/** A project's counters, as `deno task stats` reports them. */
export interface Stats {
  accepted: number;
  /** Rejections by reason; reasons never counted are left out. */
  rejected: Partial<Record<RejectReason, number>>;
}

/**
 * Reads a project's counters of accepted and rejected entries, through the
 * module the operator commands read them with.
 *
 * @example
 * ```ts
 * assert.deepEqual(await stats(h.kv, id), { accepted: 1, rejected: {} });
 * ```
 */
export async function stats(kv: Deno.Kv, projectId: string): Promise<Stats> {
  const { accepted, rejected } = await readStats(kv, projectId);
  return { accepted, rejected };
}

/** Asserts a project's counters: `accepted` entries, `rejected` by reason. */
export async function assertCounts(
  h: Harness,
  projectId: string,
  accepted: number,
  rejected: Stats["rejected"],
): Promise<void> {
  assert.deepEqual(await stats(h.kv, projectId), { accepted, rejected });
}

/**
 * Asserts that the project stored no entry and counted none accepted, only
 * the `rejected` ones by reason.
 */
export async function assertOnlyRejected(
  h: Harness,
  projectId: string,
  rejected: Stats["rejected"],
): Promise<void> {
  assert.deepEqual(await h.logs(projectId), []);
  await assertCounts(h, projectId, 0, rejected);
}

/** Reads the global counters of rejections for projects that do not exist. */
export function globalRejected(
  kv: Deno.Kv,
): Promise<Partial<Record<RejectReason, number>>> {
  return readUnknownProjectRejections(kv);
}

/** A project's recent rejections (the ring of slots), oldest entry first. */
export async function recentRejections(
  kv: Deno.Kv,
  projectId: string,
): Promise<Rejection[]> {
  const { recent } = await readStats(kv, projectId);
  return recent.sort((a, b) => a.entryId < b.entryId ? -1 : 1);
}

/** The ids of the batches waiting to be processed, readable or not. */
export async function pendingBatchIds(kv: Deno.Kv): Promise<string[]> {
  const ids: string[] = [];
  for await (const entry of kv.list({ prefix: pendingBatchesPrefix() })) {
    ids.push(batchIdOf(entry.key));
  }
  return ids;
}

/** The batches waiting to be processed, oldest first. */
export async function pendingBatches(
  kv: Deno.Kv,
): Promise<{ id: string; header: BatchHeader }[]> {
  const out: { id: string; header: BatchHeader }[] = [];
  for await (const entry of kv.list({ prefix: pendingBatchesPrefix() })) {
    out.push({
      id: batchIdOf(entry.key),
      header: decodeBatchHeader(entry.value),
    });
  }
  return out;
}

/**
 * Posts `body` from the project's allowed origin, then fails its batch with
 * `error` until it is a dead letter; returns the batch's id.
 *
 * @example
 * ```ts
 * const batchId = await deadLetter(h, randomEntry({ projectId }));
 * ```
 */
export async function deadLetter(
  h: Harness,
  body: Record<string, unknown>,
  error = "disk full",
): Promise<string> {
  await h.post(body, { Origin: ORIGIN });
  await h.pipeline.producer.flush();
  const ids = await pendingBatchIds(h.kv);
  if (ids.length !== 1) {
    throw new Error(`Expected one pending batch, found ${ids.length}`);
  }
  for (let i = 0; i < MAX_ATTEMPTS; i++) {
    await recordFailure(h.kv, ids[0]!, new Error(error), h.clock.now());
  }
  return ids[0]!;
}

/**
 * A consumer with its own project cache on the harness's KV (or `kv`, a
 * view of it) and clock, as a second process sharing the database would
 * build it.
 */
export function otherConsumer(h: Harness, kv: Deno.Kv = h.kv): Consumer {
  return new Consumer({
    kv,
    now: h.clock.now,
    maxSkewMs: h.config.signatureMaxSkewMs,
    projects: new ProjectCache(kv, {
      ttlMs: h.config.projectCacheMs,
      now: h.clock.now,
    }),
  });
}

/**
 * Runs `fn` with a fresh harness and closes it afterwards. The test fails
 * when the pipeline reported errors, unless `options.expectErrors` is set;
 * when `fn` itself fails, its error is the one reported.
 */
export async function withHarness(
  fn: (h: Harness) => Promise<void>,
  options: HarnessOptions = {},
): Promise<void> {
  const h = await harness(options);
  try {
    await fn(h);
  } catch (error) {
    await h.close({ checkErrors: false });
    throw error;
  }
  await h.close();
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

/** Options of {@linkcode postEntries}. */
export interface PostEntriesOptions {
  /** The Origin header the entries are sent with; none when left out. */
  origin?: string;
  /**
   * A secret to sign each entry with at the harness's clock, as a server
   * client would; unsigned when left out.
   */
  secret?: string;
  /** How many entries, one request each. @default {1} */
  count?: number;
}

/**
 * POSTs random entries of `projectId`, one request each, and checks that
 * each was queued, as {@linkcode postQueued} does.
 *
 * @example
 * ```ts
 * await postEntries(h, project.id, { origin: ORIGIN, count: 3 });
 * ```
 */
export async function postEntries(
  h: Harness,
  projectId: string,
  { origin, secret, count = 1 }: PostEntriesOptions = {},
): Promise<void> {
  for (let i = 0; i < count; i++) {
    const body = randomEntry({ projectId });
    await postQueued(h, body, {
      ...(origin === undefined ? {} : { Origin: origin }),
      ...(secret === undefined ? {} : signEntry(secret, body, h.clock.now())),
    });
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

/**
 * A `TextDecoderStream` typed as the runtime's own, so that a test reading a
 * child's output type-checks the same when a browser test's `lib="dom"` is
 * part of the same check.
 */
export function textDecoder(): TransformStream<Uint8Array, string> {
  return new TextDecoderStream() as unknown as TransformStream<
    Uint8Array,
    string
  >;
}

/**
 * POSTs `body` (a stream too) to the endpoint of `app` from one fixed client
 * address, as a real server would hand the request over.
 */
export function postBody(
  app: ReturnType<typeof createApp>,
  body: BodyInit,
  headers: Record<string, string> = {},
): Promise<Response> {
  return Promise.resolve(app.request("/api/v1/logs", {
    method: "POST",
    headers: { "Content-Type": "application/json", ...headers },
    body,
    duplex: "half",
  } as RequestInit, {
    remoteAddr: { transport: "tcp", hostname: "203.0.113.7", port: 40000 },
  }));
}

/**
 * Asks `app` the CORS preflight of a POST to the endpoint from `origin`, with
 * `headers` as the request headers it means to send.
 */
export function preflight(
  app: ReturnType<typeof createApp>,
  origin: string,
  headers: string,
): Promise<Response> {
  return Promise.resolve(app.request("/api/v1/logs", {
    method: "OPTIONS",
    headers: {
      Origin: origin,
      "Access-Control-Request-Method": "POST",
      "Access-Control-Request-Headers": headers,
    },
  }));
}

/** Runs `fn` with an in-memory KV and closes it. */
export async function withKv(fn: (kv: Deno.Kv) => Promise<void>) {
  const kv = await Deno.openKv(":memory:");
  try {
    await fn(kv);
  } finally {
    kv.close();
  }
}

/** Serves `handler` on a free port of 127.0.0.1. */
export function serve(
  handler: (
    req: Request,
    info: Deno.ServeHandlerInfo<Deno.NetAddr>,
  ) => Response | Promise<Response>,
): Deno.HttpServer<Deno.NetAddr> {
  return Deno.serve(
    { port: 0, hostname: "127.0.0.1", onListen: () => {} },
    handler,
  );
}

/** Every stored key and value as text, to look for a secret in. */
export async function everything(kv: Deno.Kv): Promise<string> {
  const parts: string[] = [];
  for await (const entry of kv.list({ prefix: [] })) {
    parts.push(JSON.stringify(entry.key));
    parts.push(
      entry.value instanceof Uint8Array
        ? new TextDecoder().decode(entry.value)
        : JSON.stringify(entry.value),
    );
  }
  return parts.join("\n");
}

/** Serves `handler` on a free port of 127.0.0.1 while `fn` runs with the port. */
export async function withServed(
  handler: Parameters<typeof serve>[0],
  fn: (port: number) => Promise<void>,
): Promise<void> {
  const server = serve(handler);
  try {
    await fn(server.addr.port);
  } finally {
    await server.shutdown();
  }
}

/** A test run inside {@linkcode withHarness}. */
export const harnessTest = fixtureTest(withHarness);
/** A test run inside {@linkcode withHarness}, given a new project: `async (h, project) => …`. */
export const projectTest = fixtureTest(withNewProject(withHarness));
/** A test run inside {@linkcode withKv}. */
export const kvTest = fixtureTest(withKv);

/** What `replayRejected` is given: the harness's clock. */
export function replayWith(h: Harness) {
  return { now: h.clock.now };
}

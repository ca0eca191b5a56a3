/**
 * The ingestion path stage by stage, in process: each stage runs in a loop
 * over the bench's 295-byte entry, and the tool prints the CPU time per
 * request of each (median of several rounds). It prices each change to the
 * hot path alone; `bench/cpu.ts` then checks the whole from outside. Time
 * is the process's CPU time (user + system, every thread), so that other
 * load on the machine hardly moves it. What
 * the runtime does in Rust around a handler (HTTP parsing, sending the
 * answer's headers) is not seen here: `bench/variants.ts` prices that.
 *
 * ```sh
 * deno run -A bench/stages.ts             # every stage
 * deno run -A bench/stages.ts zod scan    # the stages whose name contains a word
 * ```
 *
 * @module
 */
import process from "node:process";
import { createApp } from "../app.ts";
import { ProjectCache } from "../auth/projects.ts";
import { createProject } from "../db/projects.ts";
import type { QueuedEntry } from "../domain/entry.ts";
import { createId } from "../domain/ids.ts";
import { scanJson } from "../domain/json.ts";
import { projectKey } from "../db/keys.ts";
import type { HandedBatch } from "../queue/batch.ts";
import { Consumer } from "../queue/consumer.ts";
import { createPipeline } from "../queue/pipeline.ts";
import { GroupCommitter } from "../queue/producer.ts";
import { BodyGuard } from "../routes/body_guard.ts";
import { checkContentType, readBody } from "../routes/body.ts";
import { RateLimiter } from "../routes/rate_limit/mod.ts";
import { corsHeaders, jsonResponse } from "../routes/responses.ts";
import { validateEntry } from "../routes/schema.ts";
import { benchEntry } from "./ingest.ts";
import { median } from "./cpu.ts";

const ORIGIN = "https://bench.example";
const ROUNDS = 7;

/**
 * One stage: `run(n)` does the stage's work `n` times, with what
 * `prepare(n)` made (untimed).
 */
interface Stage {
  name: string;
  prepare?(n: number): Promise<unknown>;
  run(n: number, prepared?: unknown): void | Promise<void>;
  /** Iterations per round. @default {20000} */
  n?: number;
  /** Rounds timed. @default {7} */
  rounds?: number;
}

async function timeStage(stage: Stage): Promise<number> {
  const n = stage.n ?? 20_000;
  const warm = Math.ceil(n / 4);
  // Warm-up: let the JIT settle.
  await stage.run(warm, await stage.prepare?.(warm));
  const perOp: number[] = [];
  for (let r = 0; r < (stage.rounds ?? ROUNDS); r++) {
    const prepared = await stage.prepare?.(n);
    // CPU time of the process (all threads: KV's and the collector's too),
    // not wall time: time spent descheduled by other load does not count.
    const before = process.cpuUsage();
    await stage.run(n, prepared);
    const used = process.cpuUsage(before);
    perOp.push((used.user + used.system) / n);
  }
  return median(perOp);
}

/** Options of {@linkcode closedLoop}. */
interface ClosedLoopOptions {
  kvFile: string;
  projectId: string;
  entryOf: (i: number) => QueuedEntry;
  /** Entries in flight at once, as connections would keep them. */
  window: number;
  /** Entries in all. */
  n: number;
}

/**
 * The queue as the server runs it (group commit, hand-over, consumer) on a
 * KV file, fed like wrk feeds the server: `window` entries in flight, each
 * committed one followed at once by a new one, until `n` were committed;
 * then until the consumer has stored everything.
 */
async function closedLoop(options: ClosedLoopOptions): Promise<void> {
  // A file of its own: nothing left by an earlier run is processed here.
  const dir = await Deno.makeTempDir({ prefix: "stages-loop-" });
  const kv = await Deno.openKv(`${dir}/kv.sqlite`);
  const source = await Deno.openKv(options.kvFile);
  const key = projectKey(options.projectId);
  await kv.set(key, (await source.get(key)).value);
  source.close();
  const pipeline = createPipeline({
    kv,
    config: {
      consumerConcurrency: 4,
      maxPendingRequests: 20_000,
      projectCacheMs: 2000,
      signatureMaxSkewMs: 300_000,
    },
    sweepIntervalMs: 60_000,
  });
  pipeline.start();
  let sent = 0;
  const lane = async () => {
    while (sent < options.n) {
      await pipeline.producer.submit(options.entryOf(sent++));
    }
  };
  await Promise.all(Array.from({ length: options.window }, lane));
  await pipeline.stop();
  kv.close();
  await Deno.remove(dir, { recursive: true });
}

function post(body: Uint8Array<ArrayBuffer>, n: number): Request {
  return new Request("http://127.0.0.1/api/v1/logs", {
    method: "POST",
    body,
    headers: {
      "Content-Type": "application/json",
      "Content-Length": String(body.length),
      "Origin": ORIGIN,
      "X-Forwarded-For": `10.${(n >> 16) & 255}.${(n >> 8) & 255}.${n & 255}`,
    },
  });
}

async function main(filter: string[]): Promise<void> {
  const kv = await Deno.openKv(":memory:");
  const project = await createProject(kv, { name: "bench", allow: [ORIGIN] });
  const dir = await Deno.makeTempDir({ prefix: "stages-" });
  const kvFile = `${dir}/kv.sqlite`;
  const fileKv = await Deno.openKv(kvFile);
  await fileKv.set(
    projectKey(project.id),
    (await kv.get(projectKey(project.id))).value,
  );
  fileKv.close();
  const text = benchEntry(project.id);
  const bytes = new TextEncoder().encode(text);
  const parsed = JSON.parse(text);
  const decoder = new TextDecoder("utf-8", { fatal: true });
  let sink: unknown;
  let address = 0;

  // Members in the order the route gives them (the stored line's first).
  const entryOf = (i: number): QueuedEntry => {
    const now = Date.now() + (i & 1);
    const { level, projectId, data, device, context } = parsed;
    return {
      id: createId(now),
      level,
      data,
      device,
      context,
      origin: ORIGIN,
      receivedAt: now,
      projectId,
    };
  };

  const stages: Stage[] = [
    {
      name: "Request + arrayBuffer (what bare does in JS)",
      async run(n) {
        for (let i = 0; i < n; i++) sink = await post(bytes, i).arrayBuffer();
      },
    },
    {
      name: "Request + content type + readBody (guarded)",
      async run(n) {
        const guard = new BodyGuard({
          budgetBytes: 1 << 25,
          timeoutMs: 10_000,
        });
        for (let i = 0; i < n; i++) {
          const req = post(bytes, i);
          checkContentType(req.headers.get("content-type"));
          sink = await readBody(req, { limit: 65536, guard });
        }
      },
    },
    {
      name: "UTF-8 decode + JSON.parse",
      run(n) {
        for (let i = 0; i < n; i++) sink = JSON.parse(decoder.decode(bytes));
      },
    },
    {
      name: "scan (duplicates, depth, spans)",
      run(n) {
        for (let i = 0; i < n; i++) sink = scanJson(text, 32);
      },
    },
    {
      name: "entry validation (validateEntry)",
      run(n) {
        for (let i = 0; i < n; i++) sink = validateEntry(parsed);
      },
    },
    {
      name: "entry id + JSON.stringify of the entry",
      run(n) {
        for (let i = 0; i < n; i++) sink = JSON.stringify(entryOf(i));
      },
    },
    {
      name: "response with CORS headers (JS side)",
      run(n) {
        for (let i = 0; i < n; i++) {
          sink = jsonResponse('{"status":"queued"}', 200, corsHeaders(ORIGIN));
        }
      },
    },
    {
      name: "limiter admit, a new address each",
      prepare(n) {
        // A new address per request, as in the bench.
        return Promise.resolve(
          Array.from({ length: n }, () => post(bytes, address++)),
        );
      },
      run(n, reqs) {
        const limiter = new RateLimiter({ rps: 20, burst: 50, trustProxy: 1 });
        for (let i = 0; i < n; i++) {
          limiter.admit((reqs as Request[])[i]!, {});
        }
      },
    },
    {
      name: "producer submit + commit, 200 per commit (KV in memory)",
      async run(n) {
        const producer = new GroupCommitter({
          kv,
          maxPending: 1e6,
        });
        for (let done = 0; done < n; done += 200) {
          const all = [];
          for (let i = 0; i < 200; i++) all.push(producer.submit(entryOf(i)));
          await Promise.all(all);
        }
      },
      n: 16_000,
    },
    {
      name: "consumer, per entry of handed batches of 200 (KV in memory)",
      async prepare(n) {
        const batches: HandedBatch[] = [];
        const producer = new GroupCommitter({
          kv,
          maxPending: 1e6,
          onCommitted: (b) => batches.push(...b),
        });
        const all = [];
        for (let i = 0; i < n; i++) all.push(producer.submit(entryOf(i)));
        await Promise.all(all);
        return batches;
      },
      async run(_n, batches) {
        const consumer = new Consumer({
          kv,
          projects: new ProjectCache(kv, { ttlMs: 2000 }),
          maxSkewMs: 300_000,
        });
        for (const batch of batches as HandedBatch[]) {
          await consumer.process(batch.id, batch);
        }
      },
      n: 4000,
    },
    ...[16, 32, 64, 256].map((window): Stage => ({
      name: `pipeline on a KV file, ${window} entries in flight (queue on)`,
      async run(n) {
        await closedLoop({ kvFile, projectId: project.id, entryOf, window, n });
      },
      n: 20_000,
      rounds: 3,
    })),
    {
      name: "whole route in process (app.fetch, commit stubbed)",
      async run(n) {
        const app = createApp({
          producer: {
            submit: () => Promise.resolve(),
          } as unknown as GroupCommitter,
          maxBodyBytes: 65536,
          admission: new RateLimiter({ rps: 20, burst: 50, trustProxy: 1 }),
          bodies: new BodyGuard({ budgetBytes: 1 << 25, timeoutMs: 10_000 }),
        });
        for (let i = 0; i < n; i++) {
          const res = await app.fetch(post(bytes, address++), {
            remoteAddr: { transport: "tcp", hostname: "127.0.0.1", port: 1 },
          });
          if (res.status !== 200) throw new Error(`status ${res.status}`);
          sink = res;
        }
      },
    },
  ];
  const chosen = stages.filter((s) =>
    filter.length === 0 || filter.some((f) => s.name.includes(f))
  );
  const width = Math.max(...chosen.map((s) => s.name.length));
  for (const stage of chosen) {
    const us = await timeStage(stage);
    console.log(`${stage.name.padEnd(width)}  ${us.toFixed(2).padStart(7)} µs`);
  }
  void sink;
  kv.close();
  await Deno.remove(dir, { recursive: true });
}

if (import.meta.main) await main(Deno.args);

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
import { Consumer } from "../queue/consumer.ts";
import { GroupCommitter } from "../queue/producer.ts";
import { BodyGuard } from "../routes/body_guard.ts";
import { checkContentType, readBody } from "../routes/body.ts";
import { RateLimiter } from "../routes/rate_limit/mod.ts";
import { corsHeaders, jsonResponse } from "../routes/responses.ts";
import { entrySchema } from "../routes/schema.ts";
import { benchEntry } from "./ingest.ts";
import { median } from "./cpu.ts";

const ORIGIN = "https://bench.example";
const ROUNDS = 7;

/** One stage: `run(n)` does the stage's work `n` times. */
interface Stage {
  name: string;
  run(n: number): void | Promise<void>;
  /** Iterations per round. @default {20000} */
  n?: number;
}

async function timeStage(stage: Stage): Promise<number> {
  const n = stage.n ?? 20_000;
  await stage.run(Math.ceil(n / 4)); // warm-up: let the JIT settle
  const perOp: number[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    // CPU time of the process (all threads: KV's and the collector's too),
    // not wall time: time spent descheduled by other load does not count.
    const before = process.cpuUsage();
    await stage.run(n);
    const used = process.cpuUsage(before);
    perOp.push((used.user + used.system) / n);
  }
  return median(perOp);
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
  const text = benchEntry(project.id);
  const bytes = new TextEncoder().encode(text);
  const parsed = JSON.parse(text);
  const decoder = new TextDecoder("utf-8", { fatal: true });
  let sink: unknown;
  let address = 0;

  const entryOf = (i: number): QueuedEntry => {
    const now = Date.now();
    const { level, projectId, data, device, context } = parsed;
    return {
      id: createId(now + (i & 1)),
      receivedAt: now,
      level,
      projectId,
      data,
      device,
      context,
      origin: ORIGIN,
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
      name: "zod safeParse",
      run(n) {
        for (let i = 0; i < n; i++) sink = entrySchema.safeParse(parsed);
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
      run(n) {
        const limiter = new RateLimiter({ rps: 20, burst: 50, trustProxy: 1 });
        const reqs = Array.from({ length: 1000 }, (_, i) => post(bytes, i));
        for (let i = 0; i < n; i++) {
          // A new address per request, as in the bench.
          const req = reqs[i % 1000]!;
          req.headers.set(
            "x-forwarded-for",
            `10.0.${address >> 8 & 255}.${address++ & 255}`,
          );
          limiter.admit(req, {});
        }
      },
      n: 20_000,
    },
    ...[true, false].map((queue): Stage => ({
      name: `producer submit + commit, 800 per commit, wake-up ${
        queue ? "on" : "off"
      }`,
      async run(n) {
        const producer = new GroupCommitter({ kv, queue, maxPending: 1e6 });
        for (let done = 0; done < n; done += 800) {
          const all = [];
          for (let i = 0; i < 800; i++) all.push(producer.submit(entryOf(i)));
          await Promise.all(all);
        }
      },
      n: 16_000,
    })),
    {
      name: "consumer, per entry of handed batches of 200",
      async run(n) {
        const consumer = new Consumer({
          kv,
          projects: new ProjectCache(kv, { ttlMs: 2000 }),
          maxSkewMs: 300_000,
        });
        const producer = new GroupCommitter({
          kv,
          queue: false,
          maxPending: 1e6,
          onCommitted: (b) => batches.push(...b),
        });
        const batches: Parameters<Consumer["process"]>[1][] = [];
        const all = [];
        for (let i = 0; i < n; i++) all.push(producer.submit(entryOf(i)));
        await Promise.all(all);
        for (const batch of batches) await consumer.process(batch!.id, batch);
      },
      n: 4000,
    },
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
}

if (import.meta.main) await main(Deno.args);

/**
 * Live tails benchmark: the ingestion endpoint's latency before and while
 * the dashboard streams its most live tails. 500 tails are asked for at once
 * over real connections by 25 signed-in sessions (64 stream, the rest are
 * answered 429), then 200 entries are POSTed one after the other and timed
 * from the request to the end of the answer. The dashboard and the endpoint
 * run in this process on one in-memory database, as the tail test runs them
 * (`tests/dashboard/tail_limits_test.ts`, which asserts the answers, not
 * the times).
 *
 * ```sh
 * deno task bench:tails          # --runs 3, --json
 * ```
 *
 * @module
 */
import { parseArgs } from "node:util";
import { createApp } from "../app.ts";
import { loadConfig } from "../config.ts";
import { createDashboard } from "../dashboard/app.ts";
import { createProject } from "../db/projects.ts";
import { createPipeline } from "../queue/pipeline.ts";
import { signIn } from "./dashboard.ts";
import { quantile } from "./timing.ts";

const PASSWORD = "tails benchmark";
const ORIGIN = "https://app.example.com";
/** POSTs `count` entries one after the other; each one's time in ms. */
async function timePosts(
  endpoint: string,
  projectId: string,
  count: number,
): Promise<number[]> {
  const times: number[] = [];
  for (let i = 0; i < count; i++) {
    const began = performance.now();
    const res = await fetch(endpoint, {
      method: "POST",
      headers: { "Content-Type": "application/json", Origin: ORIGIN },
      body: JSON.stringify({
        level: "info",
        projectId,
        data: { title: "Checkout opened", n: i },
      }),
    });
    await res.body?.cancel();
    times.push(performance.now() - began);
    if (res.status !== 200) throw new Error(`Answered ${res.status}`);
  }
  return times;
}

/** One run: the endpoint's p50 and p99 before and with the tails open. */
async function run() {
  const kv = await Deno.openKv(":memory:");
  const config = {
    ...loadConfig({
      PORT: "0",
      HOSTNAME: "127.0.0.1",
      KV_PATH: ":memory:",
    }),
    rateLimitRps: 1_000_000,
    rateLimitBurst: 1_000_000,
  };
  const pipeline = createPipeline({ kv, config, handOver: false });
  const app = createApp({
    producer: pipeline.producer,
    maxBodyBytes: config.maxBodyBytes,
  });
  const dash = createDashboard({
    kv,
    password: PASSWORD,
    loginLimit: { burst: 1000 },
    tailLimits: { perAccount: 1000 },
  });
  const project = await createProject(kv, { name: "bench", allow: [ORIGIN] });
  const dashServer = Deno.serve(
    { port: 0, hostname: "127.0.0.1", onListen: () => {} },
    (req, info) => dash.fetch(req, { remoteAddr: info.remoteAddr }),
  );
  const ingest = Deno.serve(
    { port: 0, hostname: "127.0.0.1", onListen: () => {} },
    (req, info) => app.fetch(req, { remoteAddr: info.remoteAddr }),
  );
  const endpoint = `http://127.0.0.1:${ingest.addr.port}/api/v1/logs`;
  const sendAll = (count: number) => timePosts(endpoint, project.id, count);
  const readers: ReadableStreamDefaultReader<Uint8Array>[] = [];
  try {
    const sessions: string[] = [];
    for (let i = 0; i < 25; i++) sessions.push(await signIn(dash, PASSWORD));
    await sendAll(50); // warm up
    const before = await sendAll(200);
    const url =
      `http://127.0.0.1:${dashServer.addr.port}/projects/${project.id}/tail`;
    const began = performance.now();
    const statuses = await Promise.all(
      Array.from({ length: 500 }, async (_, i) => {
        const res = await fetch(url, {
          headers: { cookie: sessions[i % sessions.length]! },
        });
        if (res.status !== 200) {
          await res.body?.cancel();
          return res.status;
        }
        const reader = res.body!.getReader();
        readers.push(reader);
        await reader.read();
        return 200;
      }),
    );
    const openMs = performance.now() - began;
    const during = await sendAll(200);
    return {
      streaming: statuses.filter((s) => s === 200).length,
      openMs,
      beforeP50: quantile(before, 0.5),
      beforeP99: quantile(before, 0.99),
      duringP50: quantile(during, 0.5),
      duringP99: quantile(during, 0.99),
    };
  } finally {
    for (const reader of readers) await reader.cancel();
    await dashServer.shutdown();
    await ingest.shutdown();
    await pipeline.stop();
    kv.close();
  }
}

if (import.meta.main) {
  const { values } = parseArgs({
    args: Deno.args,
    options: {
      runs: { type: "string", default: "3" },
      json: { type: "boolean", default: false },
    },
  });
  const results = [];
  for (let i = 0; i < Number(values.runs); i++) {
    const result = await run();
    results.push(result);
    if (!values.json) {
      const ms = (n: number) => `${n.toFixed(1)} ms`;
      console.log(
        `run ${i + 1}: ${result.streaming} tails streaming, 500 asked for in ${
          result.openMs.toFixed(0)
        } ms; endpoint p50/p99 ${ms(result.beforeP50)}/${
          ms(result.beforeP99)
        } before, ${ms(result.duringP50)}/${
          ms(result.duringP99)
        } with them open`,
      );
    }
  }
  if (values.json) console.log(JSON.stringify({ runs: results }, null, 2));
  console.log(`load average: ${Deno.loadavg().join(" ")}`);
}

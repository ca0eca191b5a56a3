/**
 * The metrics port's handler: the health check, the bearer token of
 * `/metrics`, and what the Prometheus text reports after entries went
 * through the pipeline.
 *
 * @module
 */
import assert from "node:assert/strict";
import {
  HEARTBEAT_MAX_AGE_MS,
  measured,
  metricsHandler,
  RequestMetrics,
} from "../../server/metrics.ts";
import {
  harness,
  harnessTest,
  randomEntry,
  withServed,
} from "../_helpers/harness.ts";
import { rawGet } from "../_helpers/raw_http.ts";

const TOKEN = "0123456789abcdef-metrics";

function get(
  handler: (req: Request) => Promise<Response>,
  path: string,
  headers: Record<string, string> = {},
) {
  return handler(new Request(`http://127.0.0.1:9464${path}`, { headers }));
}

Deno.test("GET /healthz answers 200 while KV answers and the consumer sweeps, 503 otherwise", async () => {
  const h = await harness();
  let closed = false;
  try {
    const worker = h.pipeline.worker;
    const handler = metricsHandler({
      kv: h.kv,
      requests: new RequestMetrics(),
      sweptAt: () => worker.sweptAt,
      token: undefined,
      now: h.clock.now,
    });
    const ok = await get(handler, "/healthz");
    assert.equal(ok.status, 200);
    assert.deepEqual(await ok.json(), {
      status: "ok",
      kv: "ok",
      consumer: "ok",
    });
    h.clock.advance(HEARTBEAT_MAX_AGE_MS + 1000);
    const stale = await get(handler, "/healthz");
    assert.equal(stale.status, 503);
    const body = await stale.json();
    assert.equal(body.status, "unavailable");
    assert.match(body.consumer, /no sweep for 31 s/);
    // A sweep of the worker is its sign of life.
    await worker.sweep();
    assert.equal((await (await get(handler, "/healthz")).json()).status, "ok");
    await h.close();
    closed = true;
    const down = await get(handler, "/healthz");
    assert.equal(down.status, 503);
    assert.equal((await down.json()).kv, "read failed");
  } finally {
    if (!closed) await h.close();
  }
});

harnessTest(
  "GET /metrics needs the bearer token, and answers 503 when none is set",
  async (h) => {
    const options = {
      kv: h.kv,
      requests: new RequestMetrics(),
      sweptAt: h.clock.now,
      now: h.clock.now,
    };
    const unset = metricsHandler({ ...options, token: undefined });
    const res = await get(unset, "/metrics", {
      Authorization: `Bearer ${TOKEN}`,
    });
    assert.equal(res.status, 503);
    assert.match((await res.json()).message, /set METRICS_TOKEN/);
    const handler = metricsHandler({ ...options, token: TOKEN });
    const refusals: Record<string, string>[] = [
      {},
      { Authorization: "Bearer wrong" },
      { Authorization: `Basic ${TOKEN}` },
    ];
    for (const headers of refusals) {
      const refused = await get(handler, "/metrics", headers);
      assert.equal(refused.status, 401);
      await refused.body?.cancel();
    }
    const other = await get(handler, "/api/v1/logs");
    assert.equal(other.status, 404);
    await other.body?.cancel();
  },
);

harnessTest(
  "GET /metrics reports requests, accepted and rejected entries and the queue",
  async (h) => {
    const requests = new RequestMetrics();
    const project = await h.project(["https://app.example.com"]);
    const post = measured(
      (req: Request, info: Deno.ServeHandlerInfo<Deno.NetAddr>) =>
        Promise.resolve(h.app.fetch(req, { remoteAddr: info.remoteAddr })),
      requests,
    );
    const send = async (body: unknown, origin: string) => {
      const res = await post(
        new Request("http://127.0.0.1/api/v1/logs", {
          method: "POST",
          headers: { "Content-Type": "application/json", Origin: origin },
          body: JSON.stringify(body),
        }),
        {
          remoteAddr: { transport: "tcp", hostname: "127.0.0.1", port: 1 },
          completed: Promise.resolve(),
        },
      );
      await res.body?.cancel();
      return res.status;
    };
    for (let i = 0; i < 3; i++) {
      await send(
        randomEntry({ projectId: project.id }),
        "https://app.example.com",
      );
    }
    await send(randomEntry({ projectId: project.id }), "https://evil.example");
    await send(
      randomEntry({ projectId: "no-such-project" }),
      "https://app.example.com",
    );
    assert.equal(await send({ level: "info" }, "https://app.example.com"), 400);
    await h.process();
    // One more, left pending.
    await send(
      randomEntry({ projectId: project.id }),
      "https://app.example.com",
    );
    await h.pipeline.producer.flush();
    h.clock.advance(4000);
    const handler = metricsHandler({
      kv: h.kv,
      requests,
      sweptAt: h.clock.now,
      token: TOKEN,
      now: h.clock.now,
    });
    const res = await get(handler, "/metrics", {
      Authorization: `Bearer ${TOKEN}`,
    });
    assert.equal(res.status, 200);
    assert.match(
      res.headers.get("content-type")!,
      /^text\/plain; version=0.0.4/,
    );
    const text = await res.text();
    const lines = text.split("\n");
    const has = (line: string) =>
      assert.ok(lines.includes(line), `expected the line ${line} in:\n${text}`);
    has("# TYPE logs_http_requests_total counter");
    has('logs_http_requests_total{status="200"} 6');
    has('logs_http_requests_total{status="400"} 1');
    has("# TYPE logs_http_request_duration_seconds histogram");
    has('logs_http_request_duration_seconds_bucket{le="+Inf"} 7');
    has("logs_http_request_duration_seconds_count 7");
    has(
      "# HELP logs_entries_accepted_total Entries stored, by project (the whole service).",
    );
    has(`logs_entries_accepted_total{project="${project.id}"} 3`);
    has(
      `logs_entries_rejected_total{project="${project.id}",reason="bad_origin"} 1`,
    );
    has('logs_entries_rejected_total{reason="unknown_project"} 1');
    has("logs_queue_pending_batches 1");
    has("logs_queue_oldest_age_seconds 4");
    has("logs_dead_letters 0");
    // Every sample belongs to a family declared with # HELP and # TYPE.
    const declared = new Set(
      lines.filter((l) => l.startsWith("# TYPE ")).map((l) => l.split(" ")[2]),
    );
    for (const line of lines.filter((l) => l !== "" && !l.startsWith("#"))) {
      const name = line.split(/[{ ]/)[0]!.replace(/_(bucket|sum|count)$/, "");
      assert.ok(
        declared.has(name) || declared.has(line.split(/[{ ]/)[0]),
        line,
      );
    }
  },
);

harnessTest(
  "a Host header that makes no URL is answered 400 JSON by the metrics port",
  async (h) => {
    const handler = metricsHandler({
      kv: h.kv,
      requests: new RequestMetrics(),
      sweptAt: h.clock.now,
      token: TOKEN,
      now: h.clock.now,
    });
    await withServed(handler, async (port) => {
      const res = await rawGet(port, "/healthz", "localhost:99999");
      assert.equal(res.status, 400);
      assert.match(JSON.parse(res.body).message, /Host header/);
    });
  },
);

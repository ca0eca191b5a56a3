/**
 * The real server as a process: the metrics and health port beside the
 * ingest port, a critical entry delivered to a webhook by the server's own
 * alert loop, and Deno's built-in OpenTelemetry exporting the service's
 * spans to a local OTLP receiver (OTLP over HTTP with JSON bodies).
 *
 * @module
 */
import assert from "node:assert/strict";
import { addAlertRule } from "../../alerts/rules.ts";
import { createProject } from "../../db/projects.ts";
import { ORIGIN, withTimeout } from "../_helpers/harness.ts";
import {
  postEntry,
  PROCESS_TIMEOUT_MS,
  type SpawnedServer,
  spawnServer,
} from "../_helpers/server_process.ts";
import { startReceiver } from "../_helpers/webhook_receiver.ts";

const TOKEN = "metrics-token-of-the-process-test";

function startServer(env: Record<string, string>) {
  return spawnServer(
    { PORT: "0", HOSTNAME: "127.0.0.1", METRICS_PORT: "0", ...env },
    {
      ingest: /Listening on (http:\/\/[^/\s]+)/,
      metrics: /Metrics and health on (http:\/\/[^/\s]+)/,
    },
    ["--unstable-cron"],
  );
}

/** Polls `check` every 100 ms until it holds, failing after the timeout. */
async function until(what: string, check: () => boolean): Promise<void> {
  await withTimeout(
    (async () => {
      while (!check()) await new Promise((r) => setTimeout(r, 100));
    })(),
    PROCESS_TIMEOUT_MS,
    what,
  );
}

Deno.test("the server serves health and metrics on their own port, alerts a webhook, and exports its spans over OTLP", async () => {
  const dir = await Deno.makeTempDir();
  const kvPath = `${dir}/kv.sqlite`;
  const otlp = startReceiver();
  const webhook = startReceiver();
  const kv = await Deno.openKv(kvPath);
  let server: SpawnedServer<"ingest" | "metrics"> | undefined;
  try {
    const project = await createProject(kv, { name: "otel", allow: [ORIGIN] });
    await addAlertRule(kv, {
      projectId: project.id,
      query: "level:critical",
      webhook: webhook.url,
    }, { allowPrivate: true });
    server = await startServer({
      KV_PATH: kvPath,
      METRICS_TOKEN: TOKEN,
      ALERT_PRIVATE_TARGETS: "allow",
      OTEL_DENO: "true",
      OTEL_SERVICE_NAME: "logs-process-test",
      OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url.replace(/\/hook$/, ""),
      OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
      OTEL_BSP_SCHEDULE_DELAY: "200",
    });
    assert.notEqual(server.urls.metrics, server.urls.ingest);

    const status = await postEntry(server.urls.ingest, {
      level: "critical",
      projectId: project.id,
      data: { message: "payment declined" },
    }, ORIGIN);
    assert.equal(status, 200);

    const health = await fetch(`${server.urls.metrics}/healthz`);
    assert.equal(health.status, 200);
    assert.deepEqual(await health.json(), {
      status: "ok",
      kv: "ok",
      consumer: "ok",
    });
    // The ingest port keeps its one endpoint.
    const elsewhere = await fetch(`${server.urls.ingest}/metrics`);
    assert.equal(elsewhere.status, 404);
    await elsewhere.body?.cancel();

    // The server's own loop stores the entry and delivers the alert.
    await until("the alert delivery", () => webhook.received.length > 0);
    const delivery = JSON.parse(webhook.received[0]!.body);
    assert.equal(delivery.count, 1);
    assert.equal(delivery.entries[0].data.message, "payment declined");

    const scrape = await fetch(`${server.urls.metrics}/metrics`, {
      headers: { Authorization: `Bearer ${TOKEN}` },
    });
    assert.equal(scrape.status, 200);
    const text = await scrape.text();
    assert.ok(text.includes('logs_http_requests_total{status="200"} 1'), text);
    assert.ok(
      text.includes(`logs_entries_accepted_total{project="${project.id}"} 1`),
      text,
    );

    await until(
      "a span of POST /api/v1/logs",
      () =>
        otlp.received.some((r) =>
          r.path === "/v1/traces" && r.body.includes("logs-process-test") &&
          r.body.includes('"POST"')
        ),
    );
    const traces = otlp.received.find((r) => r.path === "/v1/traces")!;
    assert.equal(traces.headers.get("content-type"), "application/json");
    const spans = JSON.parse(traces.body).resourceSpans[0];
    assert.ok(
      spans.resource.attributes.some((a: { key: string; value: unknown }) =>
        a.key === "service.name" &&
        JSON.stringify(a.value).includes("logs-process-test")
      ),
    );
  } finally {
    if (server) await server.stop();
    kv.close();
    await otlp.close();
    await webhook.close();
    await Deno.remove(dir, { recursive: true });
  }
});

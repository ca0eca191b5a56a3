/**
 * Metrics and health on a port of their own (`METRICS_PORT`), never the
 * ingest port, which keeps exactly one endpoint (docs/metrics.md):
 *
 * - `GET /healthz`, no token: `200 {"status":"ok"}` while KV answers a read
 *   and the consumer's heartbeat is recent, `503 {"status":"unavailable"}`
 *   otherwise.
 * - `GET /metrics`, `Authorization: Bearer $METRICS_TOKEN`: Prometheus text
 *   with this process's requests (by status, and their latency) and the
 *   service's totals kept in KV (db/totals.ts), the same from every instance.
 *   Without a token configured it answers `503` saying to set one.
 *
 * @module
 */
import { createHash, timingSafeEqual } from "node:crypto";
import { healthProbeKey } from "../db/keys.ts";
import { readTotals, type ServiceTotals } from "../db/totals.ts";

/** Upper bounds of the latency histogram's buckets, in seconds. */
export const LATENCY_BUCKETS_S: readonly number[] = [
  0.001,
  0.0025,
  0.005,
  0.01,
  0.025,
  0.05,
  0.1,
  0.25,
  0.5,
  1,
  2.5,
  5,
  10,
];
/** Age of the consumer's last heartbeat past which it counts as dead. */
export const HEARTBEAT_MAX_AGE_MS = 30_000;
/** Time the health check's KV read may take. */
const KV_PROBE_TIMEOUT_MS = 2000;
/** The answer to a request whose Host header makes no URL. */
const BAD_HOST =
  "Cannot read the request's address: its Host header is no host";

/**
 * This process's requests on the ingest port: a counter per status and a
 * latency histogram. `observe` is all the request path calls (two map
 * updates and a short loop), so it can stay on the hot path.
 */
export class RequestMetrics {
  readonly byStatus = new Map<number, number>();
  /** Counts per bucket of {@linkcode LATENCY_BUCKETS_S}, not cumulative; the last is +Inf. */
  readonly buckets: number[] = Array(LATENCY_BUCKETS_S.length + 1).fill(0);
  sumSeconds = 0;
  count = 0;

  /** Records one answered request: its status and its time in milliseconds. */
  observe(status: number, ms: number): void {
    this.byStatus.set(status, (this.byStatus.get(status) ?? 0) + 1);
    const seconds = ms / 1000;
    let i = 0;
    while (i < LATENCY_BUCKETS_S.length && seconds > LATENCY_BUCKETS_S[i]!) i++;
    this.buckets[i]!++;
    this.sumSeconds += seconds;
    this.count++;
  }
}

/**
 * Wraps a `Deno.serve` handler so that each answer is observed.
 *
 * @example
 * ```ts
 * const handler = measured(service, metrics);
 * ```
 */
export function measured<A extends Deno.Addr>(
  handler: Deno.ServeHandler<A>,
  metrics: RequestMetrics,
  clock: () => number = () => performance.now(),
): Deno.ServeHandler<A> {
  return async (req, info) => {
    const start = clock();
    try {
      const res = await handler(req, info);
      metrics.observe(res.status, clock() - start);
      return res;
    } catch (error) {
      metrics.observe(500, clock() - start);
      throw error;
    }
  };
}

/** Escapes a label value of the Prometheus text format. */
function label(value: string): string {
  return value.replaceAll("\\", "\\\\").replaceAll('"', '\\"')
    .replaceAll("\n", "\\n");
}

function labels(pairs: Record<string, string>): string {
  const text = Object.entries(pairs).map(([k, v]) => `${k}="${label(v)}"`)
    .join(",");
  return text === "" ? "" : `{${text}}`;
}

/** One sample of a family: a name suffix, its labels and its value. */
type Sample = [string, Record<string, string>, number];

/** One metric family: its help, type and samples. */
function family(
  name: string,
  type: "counter" | "gauge" | "histogram",
  help: string,
  samples: Sample[],
): string {
  const lines = [`# HELP ${name} ${help}`, `# TYPE ${name} ${type}`];
  for (const [suffix, pairs, value] of samples) {
    lines.push(`${name}${suffix}${labels(pairs)} ${value}`);
  }
  return lines.join("\n");
}

/** A map's entries in the order of their names. */
function byName<V>(map: Map<string, V>): [string, V][] {
  return [...map].sort(([a], [b]) => a < b ? -1 : a > b ? 1 : 0);
}

/** The latency histogram's samples: cumulative buckets, sum and count. */
function latencySamples(requests: RequestMetrics): Sample[] {
  const samples: Sample[] = [];
  let cumulative = 0;
  LATENCY_BUCKETS_S.forEach((le, i) => {
    cumulative += requests.buckets[i]!;
    samples.push(["_bucket", { le: String(le) }, cumulative]);
  });
  samples.push(["_bucket", { le: "+Inf" }, requests.count]);
  samples.push(["_sum", {}, requests.sumSeconds]);
  samples.push(["_count", {}, requests.count]);
  return samples;
}

/** Rejections by project and reason, then those naming no project. */
function rejectedSamples(totals: ServiceTotals): Sample[] {
  const samples: Sample[] = [];
  for (const [project, reasons] of byName(totals.rejected)) {
    for (const [reason, n] of byName(reasons)) {
      samples.push(["", { project, reason }, n]);
    }
  }
  for (const [reason, n] of byName(totals.rejectedGlobal)) {
    samples.push(["", { reason }, n]);
  }
  return samples;
}

/** Today's usage by project: entries by what became of them. */
function usageSamples(totals: ServiceTotals): Sample[] {
  const samples: Sample[] = [];
  for (const [project, { day }] of byName(totals.usageToday)) {
    for (
      const kind of [
        "accepted",
        "stored",
        "over_quota",
        "sampled",
        "rejected",
      ] as const
    ) {
      samples.push(["", { project, kind }, day[kind]]);
    }
  }
  return samples;
}

/** The share of each per-day quota used today. */
function quotaSamples(totals: ServiceTotals): Sample[] {
  const samples: Sample[] = [];
  for (const [project, { day, quotaPerDay }] of byName(totals.usageToday)) {
    if (quotaPerDay === undefined) continue;
    samples.push([
      "",
      { project },
      Math.min(day.stored, quotaPerDay) / quotaPerDay,
    ]);
  }
  return samples;
}

/** The families of today's usage and quotas. */
function usageFamilies(totals: ServiceTotals): string[] {
  return [
    family(
      "logs_usage_entries_today",
      "gauge",
      "Entries of the current UTC day by project and by what became of them: accepted, stored, over_quota, sampled, rejected.",
      usageSamples(totals),
    ),
    family(
      "logs_usage_bytes_today",
      "gauge",
      "Characters of the JSON of the entries stored in the current UTC day, by project.",
      byName(totals.usageToday).map(([project, { day }]) => [
        "",
        { project },
        day.bytes,
      ]),
    ),
    family(
      "logs_quota_used_ratio",
      "gauge",
      "Share of the per-day quota used in the current UTC day, by project with a quota.",
      quotaSamples(totals),
    ),
  ];
}

/**
 * The Prometheus text of this process's requests and the service's totals.
 */
export function renderMetrics(
  requests: RequestMetrics,
  totals: ServiceTotals,
  heartbeatAgeMs: number,
): string {
  return [
    family(
      "logs_http_requests_total",
      "counter",
      "Requests this process answered on the ingest port, by status.",
      [...requests.byStatus].sort(([a], [b]) => a - b)
        .map(([status, n]) => ["", { status: String(status) }, n]),
    ),
    family(
      "logs_http_request_duration_seconds",
      "histogram",
      "Time this process took to answer a request on the ingest port.",
      latencySamples(requests),
    ),
    family(
      "logs_entries_accepted_total",
      "counter",
      "Entries stored, by project (the whole service).",
      byName(totals.accepted).map(([project, n]) => ["", { project }, n]),
    ),
    family(
      "logs_entries_rejected_total",
      "counter",
      "Entries dropped, by project and reason; without a project label for entries naming no existing project (the whole service).",
      rejectedSamples(totals),
    ),
    ...usageFamilies(totals),
    family(
      "logs_queue_pending_batches",
      "gauge",
      "Batches committed and not yet processed (counted up to 1000).",
      [["", {}, totals.pendingBatches]],
    ),
    family(
      "logs_queue_oldest_age_seconds",
      "gauge",
      "Age of the oldest pending batch; 0 when none waits.",
      [["", {}, totals.oldestPendingAgeMs / 1000]],
    ),
    family(
      "logs_dead_letters",
      "gauge",
      "Batches moved aside after repeated failures (counted up to 1000).",
      [["", {}, totals.deadLetters]],
    ),
    family(
      "logs_alert_deliveries_pending",
      "gauge",
      "Alert deliveries waiting to be sent or retried (counted up to 1000).",
      [["", {}, totals.alertOutbox]],
    ),
    family(
      "logs_consumer_heartbeat_age_seconds",
      "gauge",
      "Time since this process's consumer last swept for pending batches.",
      [["", {}, heartbeatAgeMs / 1000]],
    ),
  ].join("\n") + "\n";
}

/** Options of {@linkcode metricsHandler}. */
export interface MetricsServerOptions {
  kv: Deno.Kv;
  requests: RequestMetrics;
  /** When the consumer's worker last finished a sweep, Unix ms. */
  sweptAt: () => number;
  /** `METRICS_TOKEN`; without one `/metrics` answers 503. */
  token: string | undefined;
  /** Clock, Unix ms. @default {Date.now} */
  now?: () => number;
  /** @default {HEARTBEAT_MAX_AGE_MS} */
  heartbeatMaxAgeMs?: number;
}

function digest(text: string): Uint8Array {
  return createHash("sha256").update(text).digest();
}

/** Whether the request carries `Authorization: Bearer <token>`, compared in constant time. */
function authorized(req: Request, token: string): boolean {
  const match = /^Bearer\s+(\S+)\s*$/i.exec(
    req.headers.get("authorization") ?? "",
  );
  return match !== null && timingSafeEqual(digest(match[1]!), digest(token));
}

function json(body: unknown, status: number, headers = {}): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: { "Content-Type": "application/json", ...headers },
  });
}

async function probeKv(kv: Deno.Kv): Promise<string | null> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<string>((resolve) => {
    timer = setTimeout(
      () => resolve(`no answer within ${KV_PROBE_TIMEOUT_MS} ms`),
      KV_PROBE_TIMEOUT_MS,
    );
  });
  try {
    return await Promise.race([
      kv.get(healthProbeKey()).then(() => null, () => "read failed"),
      timeout,
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * The handler of the metrics port.
 *
 * @example
 * ```ts
 * Deno.serve({ port: 9464, hostname: "127.0.0.1" }, metricsHandler({ kv, requests, sweptAt: () => worker.sweptAt, token }));
 * ```
 */
export function metricsHandler(
  options: MetricsServerOptions,
): (req: Request) => Promise<Response> {
  const now = options.now ?? Date.now;
  const maxAge = options.heartbeatMaxAgeMs ?? HEARTBEAT_MAX_AGE_MS;
  return async (req) => {
    // A Host header that makes no URL (`localhost:99999`): refused, not thrown.
    if (!URL.canParse(req.url)) {
      return json({ status: "error", message: BAD_HOST }, 400);
    }
    const path = new URL(req.url).pathname;
    if (path !== "/healthz" && path !== "/metrics") {
      return json({ status: "error", message: "Not found" }, 404);
    }
    if (req.method !== "GET" && req.method !== "HEAD") {
      return json({ status: "error", message: "Method not allowed" }, 405, {
        Allow: "GET, HEAD",
      });
    }
    if (path === "/healthz") {
      const kvProblem = await probeKv(options.kv);
      const age = Math.max(0, now() - options.sweptAt());
      const consumer = age <= maxAge
        ? "ok"
        : `no sweep for ${Math.round(age / 1000)} s`;
      const ok = kvProblem === null && consumer === "ok";
      return json(
        {
          status: ok ? "ok" : "unavailable",
          kv: kvProblem ?? "ok",
          consumer,
        },
        ok ? 200 : 503,
        { "Cache-Control": "no-store" },
      );
    }
    if (options.token === undefined) {
      return json({
        status: "error",
        message:
          "Cannot serve metrics: set METRICS_TOKEN and scrape with Authorization: Bearer <token>",
      }, 503);
    }
    if (!authorized(req, options.token)) {
      return json(
        {
          status: "error",
          message: "Cannot serve metrics: bad or missing bearer token",
        },
        401,
        { "WWW-Authenticate": 'Bearer realm="metrics"' },
      );
    }
    const at = now();
    const totals = await readTotals(options.kv, at);
    return new Response(
      renderMetrics(
        options.requests,
        totals,
        Math.max(0, at - options.sweptAt()),
      ),
      {
        headers: {
          "Content-Type": "text/plain; version=0.0.4; charset=utf-8",
          "Cache-Control": "no-store",
        },
      },
    );
  };
}

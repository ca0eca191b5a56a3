/**
 * Configuration: the environment variables the server and the operator
 * commands read, validated once with zod. `loadConfig` fails fast and names
 * the variable at fault; besides it, only the dashboard's own configuration
 * (dashboard/config.ts) and the CLI's `NO_COLOR` read the environment.
 *
 * The schema is the one source of every default: the {@linkcode Config} type
 * is what it outputs.
 *
 * @module
 */
import { z } from "zod";

/** One day, in milliseconds. */
const DAY_MS = 86_400_000;
/** Where the database lives when `KV_PATH` is unset, outside Deno Deploy. */
const DEFAULT_KV_PATH = "./data/kv.sqlite";

const integer = (min: number, max: number) =>
  z.coerce.number().int().min(min).max(max);

const schema = z.object({
  PORT: integer(0, 65535).default(8000),
  HOSTNAME: z.string().min(1).default("0.0.0.0"),
  KV_PATH: z.string().min(1).optional(),
  MAX_BODY_BYTES: integer(256, 256 * 1024).default(64 * 1024),
  RATE_LIMIT_RPS: z.coerce.number().positive().max(1e6).default(20),
  RATE_LIMIT_BURST: integer(1, 1e6).default(50),
  TRUST_PROXY: integer(0, 16).default(0),
  SIGNATURE_MAX_SKEW_MS: integer(1000, DAY_MS).default(5 * 60_000),
  CONSUMER_CONCURRENCY: integer(1, 64).default(4),
  MAX_PENDING_REQUESTS: integer(1, 1_000_000).default(20_000),
  MAX_MERGE_BACKLOG: integer(10, 1_000_000).default(3000),
  PROJECT_CACHE_MS: integer(0, 5000).default(2000),
  BODY_TIMEOUT_MS: integer(100, 600_000).default(10_000),
  MAX_BODY_BUDGET_BYTES: integer(65536, 1 << 30).default(32 << 20),
  DENO_DEPLOYMENT_ID: z.string().optional(),
  METRICS_PORT: integer(0, 65535).optional(),
  METRICS_HOSTNAME: z.string().min(1).default("127.0.0.1"),
  METRICS_TOKEN: z.string().min(16, "expected at least 16 characters")
    .max(1024, "expected at most 1024 characters").optional(),
  ALERT_PRIVATE_TARGETS: z.enum(["allow", "deny"]).default("deny"),
  MERGE_THREAD: z.enum(["on", "off"]).default("on"),
  QUERY_THREAD: z.enum(["on", "off"]).default("on"),
  COMMIT_LINGER_MS: integer(0, 100).default(8),
  DASHBOARD_URL: z.url({ protocol: /^https?$/ }).optional(),
}).transform((v) => {
  const onDeploy = v.DENO_DEPLOYMENT_ID !== undefined;
  const kvPath = v.KV_PATH ?? (onDeploy ? undefined : DEFAULT_KV_PATH);
  return {
    /** Port to listen on (`PORT`). */
    port: v.PORT,
    /** Interface to bind (`HOSTNAME`). */
    hostname: v.HOSTNAME,
    /**
     * Where the KV database lives (`KV_PATH`): a file path, `:memory:` or a
     * KV Connect URL. `undefined` means the platform's own KV (Deno Deploy).
     */
    kvPath,
    /** Largest accepted body, counted after decompression (`MAX_BODY_BYTES`). */
    maxBodyBytes: v.MAX_BODY_BYTES,
    /** Token refill per second of the per-IP bucket (`RATE_LIMIT_RPS`). */
    rateLimitRps: v.RATE_LIMIT_RPS,
    /** Capacity of the per-IP bucket (`RATE_LIMIT_BURST`). */
    rateLimitBurst: v.RATE_LIMIT_BURST,
    /** Trusted proxy hops in `X-Forwarded-For`; 0 ignores it (`TRUST_PROXY`). */
    trustProxy: v.TRUST_PROXY,
    /**
     * Accepted distance between a signature's timestamp and receipt
     * (`SIGNATURE_MAX_SKEW_MS`).
     */
    signatureMaxSkewMs: v.SIGNATURE_MAX_SKEW_MS,
    /** Batches processed at once by this process (`CONSUMER_CONCURRENCY`). */
    consumerConcurrency: v.CONSUMER_CONCURRENCY,
    /**
     * Requests that may wait for a commit before new ones get 503
     * (`MAX_PENDING_REQUESTS`).
     */
    maxPendingRequests: v.MAX_PENDING_REQUESTS,
    /**
     * Open chunks (not yet merged into their final size) past which new
     * entries are refused until the merger catches up (`MAX_MERGE_BACKLOG`).
     */
    maxMergeBacklog: v.MAX_MERGE_BACKLOG,
    /** How long a project record is cached by the consumer (`PROJECT_CACHE_MS`). */
    projectCacheMs: v.PROJECT_CACHE_MS,
    /** Time a request body has to arrive whole, else `408` (`BODY_TIMEOUT_MS`). */
    bodyTimeoutMs: v.BODY_TIMEOUT_MS,
    /**
     * Bytes the bodies being read may reserve together, else `503`
     * (`MAX_BODY_BUDGET_BYTES`).
     */
    maxBodyBudgetBytes: v.MAX_BODY_BUDGET_BYTES,
    /**
     * Port of the metrics and health server (`METRICS_PORT`); `undefined`
     * (unset) serves none. Never the ingest port.
     */
    metricsPort: v.METRICS_PORT,
    /** Interface of the metrics server (`METRICS_HOSTNAME`). */
    metricsHostname: v.METRICS_HOSTNAME,
    /** Bearer token of `GET /metrics` (`METRICS_TOKEN`); unset answers 503. */
    metricsToken: v.METRICS_TOKEN,
    /**
     * Whether alert webhooks may point at loopback and private addresses
     * (`ALERT_PRIVATE_TARGETS=allow`).
     */
    alertPrivateTargets: v.ALERT_PRIVATE_TARGETS === "allow",
    /** Whether a database file's merger has a thread of its own (`MERGE_THREAD`). */
    mergeThread: v.MERGE_THREAD === "on",
    /** Whether reads and source map resolution have one (`QUERY_THREAD`). */
    queryThread: v.QUERY_THREAD === "on",
    /**
     * Longest an entry waits for others to share its commit, while fewer
     * than 64 wait (`COMMIT_LINGER_MS`; 0: none): CPU per entry at moderate
     * rates against milliseconds of each answer.
     */
    commitLingerMs: v.COMMIT_LINGER_MS,
    /**
     * The dashboard's URL, for the links in alerts on error groups
     * (`DASHBOARD_URL`); unset, a link is the page's path.
     */
    dashboardUrl: v.DASHBOARD_URL,
  };
});

/** The validated configuration of one process. */
export type Config = z.output<typeof schema>;

/** Thrown by {@linkcode loadConfig} when a variable is malformed. */
export class ConfigError extends Error {
  override name = "ConfigError";
}

/**
 * The variables of an environment record that are set: an empty variable
 * counts as unset, so that its default applies.
 *
 * @example
 * ```ts
 * setVariables({ PORT: "8000", KV_PATH: "" }); // { PORT: "8000" }
 * ```
 */
export function setVariables(
  env: Record<string, string | undefined>,
): Record<string, string> {
  return Object.fromEntries(
    Object.entries(env).filter((pair): pair is [string, string] =>
      pair[1] !== undefined && pair[1] !== ""
    ),
  );
}

/**
 * Reads and validates the configuration from an environment record; an
 * empty variable counts as unset.
 *
 * @example
 * ```ts
 * const config = loadConfig(Deno.env.toObject());
 * ```
 */
export function loadConfig(env: Record<string, string | undefined>): Config {
  const parsed = schema.safeParse(setVariables(env));
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new ConfigError(
      `Cannot read "${String(issue.path[0])}": ${issue.message}`,
    );
  }
  return parsed.data;
}

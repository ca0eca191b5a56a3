/**
 * Configuration: the environment variables the server and the operator
 * commands read, validated once with zod. `loadConfig` fails fast and names
 * the variable at fault; nothing else in the service reads the environment.
 *
 * @module
 */
import { z } from "zod";

const integer = (min: number, max: number) =>
  z.coerce.number().int().min(min).max(max);

const schema = z.object({
  PORT: integer(0, 65535).default(8000),
  HOSTNAME: z.string().min(1).default("0.0.0.0"),
  KV_PATH: z.string().min(1).optional(),
  MAX_BODY_BYTES: integer(256, 262144).default(65536),
  RATE_LIMIT_RPS: z.coerce.number().positive().max(1e6).default(20),
  RATE_LIMIT_BURST: integer(1, 1e6).default(50),
  TRUST_PROXY: integer(0, 16).default(0),
  SIGNATURE_MAX_SKEW_MS: integer(1000, 86_400_000).default(300_000),
  QUEUE: z.enum(["auto", "on", "off"]).default("auto"),
  CONSUMER_CONCURRENCY: integer(1, 64).default(4),
  MAX_PENDING_REQUESTS: integer(1, 1_000_000).default(20_000),
  PROJECT_CACHE_MS: integer(0, 5000).default(2000),
  BODY_TIMEOUT_MS: integer(100, 600_000).default(10_000),
  MAX_BODY_BUDGET_BYTES: integer(65536, 1 << 30).default(32 << 20),
  DENO_DEPLOYMENT_ID: z.string().optional(),
});

/** The validated configuration of one process. */
export interface Config {
  /** Port to listen on. @default {8000} */
  port: number;
  /** Interface to bind. @default {"0.0.0.0"} */
  hostname: string;
  /**
   * Where the KV database lives: a file path, `:memory:` or a KV Connect URL.
   * `undefined` means the platform's own KV (Deno Deploy).
   * @default {"./data/kv.sqlite"} outside Deno Deploy
   */
  kvPath: string | undefined;
  /** Largest accepted body, counted after decompression. @default {65536} */
  maxBodyBytes: number;
  /** Token refill per second of the per-IP bucket. @default {20} */
  rateLimitRps: number;
  /** Capacity of the per-IP bucket. @default {50} */
  rateLimitBurst: number;
  /** Number of trusted proxy hops in `X-Forwarded-For`; 0 ignores it. @default {0} */
  trustProxy: number;
  /** Accepted distance between a signature's timestamp and receipt. @default {300000} */
  signatureMaxSkewMs: number;
  /** Whether KV queue delivery is used (enqueue + listenQueue). */
  queue: boolean;
  /** Batches processed at once by this process. @default {4} */
  consumerConcurrency: number;
  /** Requests that may wait for a commit before new ones get 503. @default {20000} */
  maxPendingRequests: number;
  /** How long a project record is cached by the consumer. @default {2000} */
  projectCacheMs: number;
  /** Time a request body has to arrive whole, else `408`. @default {10000} */
  bodyTimeoutMs?: number;
  /** Bytes the bodies being read may reserve together, else `503`. @default {33554432} */
  maxBodyBudgetBytes?: number;
}

/** Thrown by {@linkcode loadConfig} when a variable is malformed. */
export class ConfigError extends Error {
  override name = "ConfigError";
}

/**
 * Reads and validates the configuration from an environment record.
 *
 * @example
 * ```ts
 * const config = loadConfig(Deno.env.toObject());
 * ```
 */
export function loadConfig(env: Record<string, string | undefined>): Config {
  const present = Object.fromEntries(
    Object.entries(env).filter(([, value]) =>
      value !== undefined && value !== ""
    ),
  );
  const parsed = schema.safeParse(present);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new ConfigError(
      `Cannot read "${String(issue.path[0])}": ${issue.message}`,
    );
  }
  const v = parsed.data;
  const onDeploy = v.DENO_DEPLOYMENT_ID !== undefined;
  const kvPath = v.KV_PATH ?? (onDeploy ? undefined : "./data/kv.sqlite");
  const remote = kvPath === undefined || /^https?:\/\//.test(kvPath);
  return {
    port: v.PORT,
    hostname: v.HOSTNAME,
    kvPath,
    maxBodyBytes: v.MAX_BODY_BYTES,
    rateLimitRps: v.RATE_LIMIT_RPS,
    rateLimitBurst: v.RATE_LIMIT_BURST,
    trustProxy: v.TRUST_PROXY,
    signatureMaxSkewMs: v.SIGNATURE_MAX_SKEW_MS,
    // Deno Deploy and KV Connect deliver no queue messages.
    queue: v.QUEUE === "on" || (v.QUEUE === "auto" && !remote),
    consumerConcurrency: v.CONSUMER_CONCURRENCY,
    maxPendingRequests: v.MAX_PENDING_REQUESTS,
    projectCacheMs: v.PROJECT_CACHE_MS,
    bodyTimeoutMs: v.BODY_TIMEOUT_MS,
    maxBodyBudgetBytes: v.MAX_BODY_BUDGET_BYTES,
  };
}

/**
 * The dashboard's configuration: its own variables (`DASHBOARD`,
 * `DASHBOARD_HOSTNAME`, `DASHBOARD_PORT`, `ADMIN_PASSWORD`, and the bounds
 * of docs/limits.md: `DASHBOARD_PUBLIC_HOST`, `DASHBOARD_FORM_BYTES`,
 * `DASHBOARD_TAILS`, `DASHBOARD_TAILS_PER_SESSION`,
 * `DASHBOARD_TAILS_PER_ACCOUNT`), validated with
 * their own zod schema, and the database the service uses (`KV_PATH`, read
 * by the service's own configuration so that both meet in one database).
 * There is no default password: without `ADMIN_PASSWORD` the dashboard does
 * not start.
 *
 * @module
 */
import { z } from "zod";
import { loadConfig, setVariables } from "../config.ts";

/** Shortest accepted `ADMIN_PASSWORD`. */
export const MIN_PASSWORD_LENGTH = 8;

const schema = z.object({
  DASHBOARD: z.enum(["on", "off"]).default("off"),
  DASHBOARD_HOSTNAME: z.string().min(1).default("127.0.0.1"),
  DASHBOARD_PORT: z.coerce.number().int().min(0).max(65535).default(8001),
  ADMIN_PASSWORD: z.string().min(MIN_PASSWORD_LENGTH).optional(),
  DASHBOARD_PUBLIC_HOST: z.string().regex(
    /^[A-Za-z0-9.\-\[\]:,\s]*$/,
    "expected host names separated by commas, such as logs.example.com",
  ).default(""),
  DASHBOARD_FORM_BYTES: z.coerce.number().int().min(1024).max(16 << 20)
    .default(64 * 1024),
  DASHBOARD_TAILS: z.coerce.number().int().min(1).max(10_000).default(64),
  DASHBOARD_TAILS_PER_SESSION: z.coerce.number().int().min(1).max(1000)
    .default(4),
  DASHBOARD_TAILS_PER_ACCOUNT: z.coerce.number().int().min(1).max(1000)
    .default(8),
});

/** The validated configuration of the dashboard. */
export interface DashboardConfig {
  /** Whether the main server also serves the dashboard under `/dashboard/`. @default {false} */
  mounted: boolean;
  /** Interface `deno task dashboard` binds. @default {"127.0.0.1"} */
  hostname: string;
  /** Port `deno task dashboard` listens on. @default {8001} */
  port: number;
  /**
   * `ADMIN_PASSWORD`: the built-in `admin` account's password (other
   * accounts have their own). Required; no default.
   */
  password: string;
  /** The database, as the service reads `KV_PATH`. */
  kvPath: string | undefined;
  /** The service's own port, to show the endpoint in snippets. @default {8000} */
  servicePort: number;
  /**
   * Host names served besides loopback ones (`DASHBOARD_PUBLIC_HOST`,
   * separated by commas). @default {[]}
   */
  publicHosts: string[];
  /** Largest form body (`DASHBOARD_FORM_BYTES`). @default {65536} */
  formLimitBytes: number;
  /**
   * Live tails open at once (`DASHBOARD_TAILS`, `DASHBOARD_TAILS_PER_SESSION`,
   * `DASHBOARD_TAILS_PER_ACCOUNT`). @default 64, 4 and 8
   */
  tailLimits: { total: number; perSession: number; perAccount: number };
}

/** Thrown when a variable is missing or malformed; its message is one line. */
export class DashboardConfigError extends Error {
  override name = "DashboardConfigError";
}

/**
 * Reads the dashboard's configuration from an environment record.
 *
 * @example
 * ```ts
 * const config = loadDashboardConfig({ ADMIN_PASSWORD: "correct horse" });
 * config.port; // 8001
 * ```
 */
export function loadDashboardConfig(
  env: Record<string, string | undefined>,
): DashboardConfig {
  const parsed = schema.safeParse(setVariables(env));
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const name = String(issue.path[0]);
    const detail = name === "ADMIN_PASSWORD"
      ? `expected at least ${MIN_PASSWORD_LENGTH} characters`
      : issue.message;
    throw new DashboardConfigError(`Cannot read "${name}": ${detail}`);
  }
  const v = parsed.data;
  if (v.ADMIN_PASSWORD === undefined) {
    throw new DashboardConfigError(
      `Cannot start the dashboard: set "ADMIN_PASSWORD" (at least ${MIN_PASSWORD_LENGTH} characters); there is no default`,
    );
  }
  let service;
  try {
    service = loadConfig(env);
  } catch (error) {
    throw new DashboardConfigError((error as Error).message);
  }
  return {
    mounted: v.DASHBOARD === "on",
    hostname: v.DASHBOARD_HOSTNAME,
    port: v.DASHBOARD_PORT,
    password: v.ADMIN_PASSWORD,
    kvPath: service.kvPath,
    servicePort: service.port,
    publicHosts: v.DASHBOARD_PUBLIC_HOST.split(",").map((h) => h.trim())
      .filter((h) => h !== ""),
    formLimitBytes: v.DASHBOARD_FORM_BYTES,
    tailLimits: {
      total: v.DASHBOARD_TAILS,
      perSession: v.DASHBOARD_TAILS_PER_SESSION,
      perAccount: v.DASHBOARD_TAILS_PER_ACCOUNT,
    },
  };
}

/**
 * The bounds of a configuration, as options of `createDashboard` (and
 * `mountDashboard`).
 *
 * @example
 * ```ts
 * createDashboard({ kv, password: config.password, ...dashboardBounds(config) });
 * ```
 */
export function dashboardBounds(
  config: DashboardConfig,
): Pick<DashboardConfig, "publicHosts" | "formLimitBytes" | "tailLimits"> {
  return {
    publicHosts: config.publicHosts,
    formLimitBytes: config.formLimitBytes,
    tailLimits: config.tailLimits,
  };
}

/** Whether `DASHBOARD=on` asks the main server to serve the dashboard. */
export function dashboardRequested(
  env: Record<string, string | undefined>,
): boolean {
  return env.DASHBOARD === "on";
}

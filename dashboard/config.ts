/**
 * The dashboard's configuration: its own variables (`DASHBOARD`,
 * `DASHBOARD_HOSTNAME`, `DASHBOARD_PORT`, `ADMIN_PASSWORD`), validated with
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
});

/** The validated configuration of the dashboard. */
export interface DashboardConfig {
  /** Whether the main server also serves the dashboard under `/dashboard/`. @default {false} */
  mounted: boolean;
  /** Interface `deno task dashboard` binds. @default {"127.0.0.1"} */
  hostname: string;
  /** Port `deno task dashboard` listens on. @default {8001} */
  port: number;
  /** The one password that signs in. Required; no default. */
  password: string;
  /** The database, as the service reads `KV_PATH`. */
  kvPath: string | undefined;
  /** The service's own port, to show the endpoint in snippets. @default {8000} */
  servicePort: number;
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
  };
}

/** Whether `DASHBOARD=on` asks the main server to serve the dashboard. */
export function dashboardRequested(
  env: Record<string, string | undefined>,
): boolean {
  return env.DASHBOARD === "on";
}

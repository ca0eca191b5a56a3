/**
 * Serving the dashboard from the main server (`DASHBOARD=on`), for
 * platforms with one port such as Deno Deploy: the app routes requests
 * under `/dashboard` to the dashboard, every other request to the service. The
 * two share no cookie: the dashboard's cookies are scoped to `/dashboard/`.
 *
 * @module
 */
import type { Hono } from "hono";
import { createDashboard, type DashboardOptions } from "./app.ts";

/** Path the main server serves the dashboard under. */
export const DASHBOARD_BASE = "/dashboard";

/**
 * Mounts the dashboard on the main server's app under `/dashboard/`: the
 * dashboard is built with that base (its routes are written relative to
 * it, under Hono's `basePath`), so the request reaches it unchanged.
 *
 * @example
 * ```ts
 * mountDashboard(app, { kv, password });
 * Deno.serve((req, info) => app.fetch(req, info));
 * ```
 */
export function mountDashboard(
  // deno-lint-ignore no-explicit-any
  app: Hono<any>,
  options: Omit<DashboardOptions, "base">,
): void {
  const dashboard = createDashboard({ ...options, base: DASHBOARD_BASE });
  app.mount(DASHBOARD_BASE, dashboard.fetch, { replaceRequest: false });
}

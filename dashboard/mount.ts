/**
 * Serving the dashboard from the main server (`DASHBOARD=on`), for
 * platforms with one port such as Deno Deploy: requests under `/dashboard`
 * go to the dashboard, every other request to the service, unchanged. The
 * two share no cookie: the dashboard's cookies are scoped to `/dashboard/`.
 *
 * @module
 */
import { createDashboard, type DashboardOptions } from "./app.ts";

/** Path the main server serves the dashboard under. */
export const DASHBOARD_BASE = "/dashboard";

/** A `Deno.serve` handler. */
export type Handler = (
  req: Request,
  info: Deno.ServeHandlerInfo<Deno.Addr>,
) => Response | Promise<Response>;

/** Whether `url`'s path is `/dashboard` or below it (no URL parsing: this runs on every request). */
export function isDashboardUrl(url: string): boolean {
  const scheme = url.indexOf("://");
  const path = url.indexOf("/", scheme < 0 ? 0 : scheme + 3);
  if (path < 0 || !url.startsWith(DASHBOARD_BASE, path)) return false;
  const next = url[path + DASHBOARD_BASE.length];
  return next === undefined || next === "/" || next === "?";
}

/**
 * Wraps the service's handler so that the dashboard answers under
 * `/dashboard/`.
 *
 * @example
 * ```ts
 * const handler = mountDashboard(serviceHandler, { kv, password });
 * Deno.serve(handler);
 * ```
 */
export function mountDashboard(
  service: Handler,
  options: Omit<DashboardOptions, "base">,
): Handler {
  const dashboard = createDashboard({ ...options, base: DASHBOARD_BASE });
  return (req, info) =>
    isDashboardUrl(req.url)
      ? dashboard.fetch(req, { remoteAddr: info.remoteAddr as Deno.NetAddr })
      : service(req, info);
}

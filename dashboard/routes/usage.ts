/**
 * `GET /usage`: the usage of every project the account may read
 * (dashboard/pages/usage.tsx).
 *
 * @module
 */
import { listProjects } from "../../db/projects.ts";
import { readUsage } from "../../db/usage.ts";
import { canRead } from "../../db/users.ts";
import { UsagePage } from "../pages/usage.tsx";
import { type DashApp, type DashboardDeps, renderPage } from "./common.ts";

/** Days the page shows. */
const USAGE_PAGE_DAYS = 14;

/** Adds the usage route. */
export function usageRoutes(app: DashApp, deps: DashboardDeps): void {
  app.get("/usage", async (c) => {
    const account = c.get("session")!.account;
    const now = deps.now();
    const projects = (await listProjects(deps.kv)).filter((p) =>
      canRead(account, p.id)
    );
    const rows = await Promise.all(projects.map(async (p) => ({
      id: p.id,
      name: p.name,
      ...(p.quota ? { quota: p.quota } : {}),
      ...(p.spike ? { spike: p.spike } : {}),
      days: (await readUsage(deps.kv, p.id, { now, days: USAGE_PAGE_DAYS }))
        .reverse(),
    })));
    return await renderPage(c, deps, UsagePage, {
      projects: rows,
      days: USAGE_PAGE_DAYS,
    });
  });
}

/**
 * `GET /projects/:id/audit`: the project's audit log, for every account
 * that may read the project (dashboard/access.ts).
 *
 * @module
 */
import { listAudit } from "../../db/audit.ts";
import { AuditPage } from "../pages/audit.tsx";
import {
  type DashApp,
  type DashboardDeps,
  renderPage,
  withProject,
} from "./common.ts";

/** Adds the audit route. */
export function auditRoutes(app: DashApp, deps: DashboardDeps): void {
  app.get(
    "/projects/:id/audit",
    withProject(deps, async (c, project) => {
      const events = await listAudit(deps.kv, project.id);
      return await renderPage(c, deps, AuditPage, {
        project: { id: project.id, name: project.name },
        events,
      });
    }),
  );
}

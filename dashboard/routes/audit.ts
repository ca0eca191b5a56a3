/**
 * `GET /projects/:id/audit`: the project's audit log, for every account
 * that may read the project (dashboard/access.ts).
 *
 * @module
 */
import { AuditCursorError, listAudit } from "../../db/audit.ts";
import { AuditPage } from "../pages/audit.tsx";
import { link } from "../pages/format.ts";
import {
  type DashApp,
  type DashboardDeps,
  message,
  renderPage,
  withProject,
} from "./common.ts";

/** Events a page shows, newest first. */
const PAGE_EVENTS = 200;

/** Adds the audit route. */
export function auditRoutes(app: DashApp, deps: DashboardDeps): void {
  app.get(
    "/projects/:id/audit",
    withProject(deps, async (c, project) => {
      // An empty cursor is the first page, as a form left empty sends it.
      const before = c.req.query("before") || undefined;
      let events;
      try {
        events = await listAudit(deps.kv, project.id, PAGE_EVENTS, before);
      } catch (error) {
        if (!(error instanceof AuditCursorError)) throw error;
        return await message(c, deps, "Bad link", error.message, 400);
      }
      const last = events.length === PAGE_EVENTS ? events.at(-1) : undefined;
      return await renderPage(c, deps, AuditPage, {
        project: { id: project.id, name: project.name },
        events,
        older: last === undefined ? null : link(
          deps.base,
          `/projects/${encodeURIComponent(project.id)}/audit?before=${last.id}`,
        ),
      });
    }),
  );
}

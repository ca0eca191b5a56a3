/**
 * `GET /projects/:id/errors`: the project's error groups, read from the
 * counters the consumer writes (db/error_groups.ts), never by scanning
 * entries. Reading also deletes hourly counters older than the sparkline.
 *
 * @module
 */
import { listGroups, pruneErrorGroupHours } from "../../db/error_groups.ts";
import { ErrorsPage } from "../pages/errors.tsx";
import {
  type DashApp,
  type DashboardDeps,
  renderPage,
  withProject,
} from "./common.ts";

/** Groups shown at most, the most recently seen first. */
const MAX_GROUPS = 500;

/** Adds the errors route. */
export function errorsRoutes(app: DashApp, deps: DashboardDeps): void {
  const { kv } = deps;
  app.get(
    `/projects/:id/errors`,
    withProject(deps, async (c, project) => {
      const now = deps.now();
      const groups = await listGroups(kv, project.id, now, {
        limit: MAX_GROUPS,
      });
      await pruneErrorGroupHours(kv, project.id, now);
      return await renderPage(c, deps, ErrorsPage, {
        project: { id: project.id, name: project.name },
        groups,
        now,
      });
    }),
  );
}

/**
 * `GET /projects/:id/errors`: the project's error groups, read from the
 * groups the consumer writes (db/error_groups.ts), never by scanning
 * entries: a page of the most recently seen, and a link to the next.
 *
 * @module
 */
import {
  groupCursor,
  GroupCursorError,
  listGroups,
} from "../../db/error_groups.ts";
import { DAY_MS } from "../../domain/entry.ts";
import { ErrorsPage } from "../pages/errors.tsx";
import {
  type DashApp,
  type DashboardDeps,
  renderPage,
  withProject,
} from "./common.ts";

/** Groups a page shows, the most recently seen first. */
const PAGE_GROUPS = 100;

/** Adds the errors route. */
export function errorsRoutes(app: DashApp, deps: DashboardDeps): void {
  const { kv } = deps;
  app.get(
    `/projects/:id/errors`,
    withProject(deps, async (c, project) => {
      const now = deps.now();
      const after = c.req.query("after");
      let groups;
      try {
        groups = await listGroups(kv, project.id, now, {
          limit: PAGE_GROUPS + 1,
          retentionMs: project.retentionDays * DAY_MS,
          ...(after === undefined ? {} : { after }),
        });
      } catch (error) {
        if (!(error instanceof GroupCursorError)) throw error;
        return c.json({ error: error.message }, 400);
      }
      const more = groups.length > PAGE_GROUPS;
      groups = groups.slice(0, PAGE_GROUPS);
      return await renderPage(c, deps, ErrorsPage, {
        project: { id: project.id, name: project.name },
        groups,
        now,
        older: more ? groupCursor(groups.at(-1)!) : null,
        paged: after !== undefined,
      });
    }),
  );
}

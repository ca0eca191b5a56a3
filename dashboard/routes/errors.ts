/**
 * `GET /projects/:id/errors`: the project's error groups, read from the
 * groups the consumer writes (db/error_groups.ts), never by scanning
 * entries for the groups themselves: a page of the most recently seen, a
 * link to the next, and the users of the page's groups (one scan within
 * its budget, db/error_group_detail.ts). `GET /projects/:id/errors/:fp`:
 * one group's own page.
 *
 * @module
 */
import {
  checkFingerprint,
  FingerprintError,
  readGroupDetail,
  readGroupUsers,
} from "../../db/error_group_detail.ts";
import {
  groupCursor,
  GroupCursorError,
  listGroups,
} from "../../db/error_groups.ts";
import { DAY_MS } from "../../domain/entry.ts";
import { ErrorGroupPage } from "../pages/error_group.tsx";
import { shownStack } from "../../db/symbolicate.ts";
import { ErrorsPage } from "../pages/errors.tsx";
import {
  type DashApp,
  type DashboardDeps,
  message,
  renderPage,
  withProject,
} from "./common.ts";

/** Groups a page shows, the most recently seen first. */
const PAGE_GROUPS = 100;

/** Adds the errors routes. */
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
      const users = await readGroupUsers(kv, project.id, groups, {});
      return await renderPage(c, deps, ErrorsPage, {
        project: { id: project.id, name: project.name },
        groups,
        now,
        users: users.users,
        usersPartial: users.searchedTo !== undefined,
        older: more ? groupCursor(groups.at(-1)!) : null,
        paged: after !== undefined,
      });
    }),
  );
  app.get(
    `/projects/:id/errors/:fingerprint`,
    withProject(deps, async (c, project) => {
      let fingerprint;
      try {
        fingerprint = checkFingerprint(c.req.param("fingerprint") ?? "");
      } catch (error) {
        if (!(error instanceof FingerprintError)) throw error;
        return c.json({ error: error.message }, 400);
      }
      const now = deps.now();
      const detail = await readGroupDetail(kv, project.id, fingerprint, {
        now,
      });
      if (
        detail.latest === null && detail.searchedTo === undefined
      ) {
        return await message(
          c,
          deps,
          "No such error group",
          `Project "${project.name}" has no error group ${fingerprint} with entries in the last 14 days.`,
          404,
        );
      }
      return await renderPage(c, deps, ErrorGroupPage, {
        project: { id: project.id, name: project.name },
        detail,
        now,
        resolved: detail.latest &&
          await shownStack(kv, project.id, detail.latest),
      });
    }),
  );
}

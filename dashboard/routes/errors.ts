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
} from "../../db/error_group_detail.ts";
import { GroupCursorError } from "../../db/error_group_reads.ts";
import {
  listTriagedGroups,
  readTriage,
  STATUS_FILTERS,
  type StatusFilter,
} from "../../db/error_group_triage.ts";
import { accountOf, canRead, listUsers } from "../../db/users.ts";
import { TRIAGE_DONE } from "./errors_triage.ts";
import { DAY_MS } from "../../domain/entry.ts";
import type { Project } from "../../db/projects.ts";
import { ErrorGroupPage } from "../pages/error_group.tsx";
import { ErrorsPage } from "../pages/errors.tsx";
import {
  type DashApp,
  type DashboardDeps,
  type DashContext,
  doneNotice,
  message,
  renderPage,
  withProject,
} from "./common.ts";

/** Groups a page shows, the most recently seen first. */
const PAGE_GROUPS = 100;

/** The errors list of the status filter (`?status=`, unresolved by default). */
async function showErrors(
  c: DashContext,
  deps: DashboardDeps,
  project: Project,
): Promise<Response> {
  const { kv } = deps;
  const now = deps.now();
  const after = c.req.query("after");
  const status = c.req.query("status") ?? "unresolved";
  if (!(STATUS_FILTERS as readonly string[]).includes(status)) {
    return c.json({
      error: `Cannot read status "${status.slice(0, 40)}": expected one of ${
        STATUS_FILTERS.join(", ")
      }`,
    }, 400);
  }
  let listed;
  try {
    listed = await listTriagedGroups(kv, project.id, now, {
      status: status as StatusFilter,
      limit: PAGE_GROUPS,
      retentionMs: project.retentionDays * DAY_MS,
      ...(after === undefined ? {} : { after }),
    });
  } catch (error) {
    if (!(error instanceof GroupCursorError)) throw error;
    return c.json({ error: error.message }, 400);
  }
  const groups = listed.groups.map((g) => g.group);
  const users = await deps.reads.readGroupUsers(project.id, groups, {});
  return await renderPage(c, deps, ErrorsPage, {
    project: { id: project.id, name: project.name },
    groups,
    now,
    users: users.users,
    usersPartial: users.searchedTo !== undefined,
    older: listed.next,
    paged: after !== undefined,
    status: status as StatusFilter,
    triage: new Map(listed.groups.map((g) => [g.group.id, g.triage])),
    ...doneNotice(c, TRIAGE_DONE),
  });
}

/** Adds the errors routes. */
export function errorsRoutes(app: DashApp, deps: DashboardDeps): void {
  const { kv } = deps;
  app.get(
    `/projects/:id/errors`,
    withProject(deps, (c, project) => showErrors(c, deps, project)),
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
      const detail = await deps.reads.readGroupDetail(project.id, fingerprint, {
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
      const triage = detail.group === null
        ? undefined
        : (await readTriage(kv, project.id, [detail.group], now))
          .get(detail.group.id);
      const accounts = (await listUsers(kv))
        .filter((u) => canRead(accountOf(u), project.id))
        .map((u) => u.email);
      return await renderPage(c, deps, ErrorGroupPage, {
        project: { id: project.id, name: project.name },
        detail,
        now,
        resolved: detail.latest &&
          await deps.reads.shownStack(project.id, detail.latest),
        ...(triage ? { triage } : {}),
        accounts,
        ...doneNotice(c, TRIAGE_DONE),
      });
    }),
  );
}

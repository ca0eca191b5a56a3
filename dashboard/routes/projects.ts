/**
 * `GET /` lists the projects; `POST /projects` creates one and redirects to
 * the list, which shows its id and secret this once (dashboard/flash.ts).
 *
 * @module
 */
import { createProject } from "../../db/projects.ts";
import { canRead } from "../../db/users.ts";
import { InvalidValueError } from "../../db/validation.ts";
import { listViews } from "../../db/views.ts";
import { projectRows, unknownProjectCount } from "../data.ts";
import { type ProjectsData, ProjectsPage } from "../pages/projects.tsx";
import {
  audit,
  type DashApp,
  type DashboardDeps,
  type DashContext,
  doneNotice,
  formField,
  keepFlash,
  renderPage,
  sessionFlash,
} from "./common.ts";

async function projectsData(
  c: DashContext,
  deps: DashboardDeps,
): Promise<ProjectsData> {
  const [rows, unknownProject] = await Promise.all([
    projectRows(deps.kv, deps.now()),
    unknownProjectCount(deps.kv),
  ]);
  // Only the projects the account may read are listed.
  const account = c.get("session")!.account;
  const projects = rows.filter((row) => canRead(account, row.id));
  const views = Object.fromEntries(
    await Promise.all(
      projects.map(async (p) => [p.id, await listViews(deps.kv, p.id)]),
    ),
  );
  return {
    projects,
    unknownProject: account.role === "admin" ? unknownProject : 0,
    now: deps.now(),
    views,
  };
}

async function showProjects(
  c: DashContext,
  deps: DashboardDeps,
  extra: Partial<ProjectsData>,
  status: 200 | 400 = 200,
): Promise<Response> {
  const data = { ...await projectsData(c, deps), ...extra };
  return await renderPage(c, deps, ProjectsPage, data, status);
}

/** Adds the projects routes. */
export function projectsRoutes(app: DashApp, deps: DashboardDeps): void {
  const { base, kv } = deps;

  app.get(`/`, async (c) => {
    const flash = await sessionFlash(c, deps, "created");
    return await showProjects(c, deps, {
      ...doneNotice(c, { deleted: "Project deleted." }),
      ...(flash
        ? {
          created: {
            id: flash.projectId,
            name: flash.name,
            secret: flash.secret,
          },
        }
        : {}),
    });
  });

  app.post(`/projects`, async (c) => {
    const name = await formField(c, "name");
    const allowText = await formField(c, "allow");
    const allow = allowText.split(/[\s,]+/).filter((v) => v !== "");
    try {
      const project = await createProject(kv, { name, allow, now: deps.now });
      await audit(c, deps, {
        projectId: project.id,
        action: "project.create",
        detail: project.name,
      });
      // Redirected, so that a reload does not create it again.
      await keepFlash(c, deps, {
        kind: "created",
        projectId: project.id,
        name: project.name,
        secret: project.secret,
      });
      return c.redirect(`${base}/`, 303);
    } catch (error) {
      if (!(error instanceof InvalidValueError)) throw error;
      return await showProjects(c, deps, {
        notice: { kind: "error", text: error.message },
        form: { name, allow: allowText },
      }, 400);
    }
  });
}

/**
 * Saved views: `POST /projects/:id/views` saves the query and range of the
 * form's explorer state under a name, then opens it;
 * `POST /projects/:id/views/delete` removes one (`view` = its id) and goes
 * back to the explorer, or to the projects page with `back=projects`.
 *
 * @module
 */
import { InvalidValueError } from "../../db/validation.ts";
import { deleteView, saveView } from "../../db/views.ts";
import { readState, stateQuery } from "../explorer_state.ts";
import {
  audit,
  type DashApp,
  type DashboardDeps,
  formField,
  message,
  withProject,
} from "./common.ts";

/** Adds the saved views routes. */
export function viewsRoutes(app: DashApp, deps: DashboardDeps): void {
  const { base, kv } = deps;

  app.post(
    `/projects/:id/views`,
    withProject(deps, async (c, project) => {
      const params = new URLSearchParams();
      for (const name of ["q", "level", "range", "since", "until"]) {
        const value = await formField(c, name);
        if (value !== "") params.set(name, value);
      }
      // Read and written again: only what the explorer understands is kept.
      const { state } = readState(params);
      const query = stateQuery({ ...state, paused: false });
      try {
        const view = await saveView(kv, project.id, {
          name: await formField(c, "name"),
          query,
          now: deps.now,
        });
        await audit(c, deps, {
          projectId: project.id,
          action: "view.save",
          detail: `${view.name} (${view.id}): ${view.query || "?"}`,
        });
      } catch (error) {
        if (!(error instanceof InvalidValueError)) throw error;
        return await message(
          c,
          deps,
          "Cannot save the view",
          error.message,
          400,
        );
      }
      return c.redirect(`${base}/projects/${project.id}${query}`, 303);
    }),
  );

  app.post(
    `/projects/:id/views/delete`,
    withProject(deps, async (c, project) => {
      const removed = await deleteView(
        kv,
        project.id,
        await formField(c, "view"),
      );
      if (removed !== null) {
        await audit(c, deps, {
          projectId: project.id,
          action: "view.delete",
          detail: `${removed.name} (${removed.id})`,
        });
      }
      return c.redirect(
        (await formField(c, "back")) === "projects"
          ? `${base}/`
          : `${base}/projects/${project.id}`,
        303,
      );
    }),
  );
}

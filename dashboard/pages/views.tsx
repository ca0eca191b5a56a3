/**
 * Saved views: the list of a project's named queries and ranges (each a
 * link to the explorer in that state, with a remove button), and the form
 * that saves the current one. Shown in the explorer and on the projects
 * page.
 *
 * @module
 */
import type { SavedView } from "../../db/views.ts";
import { type ExplorerState, formatUtc } from "../explorer_state.ts";
import { link } from "./format.ts";
import { type PageContext, PostForm } from "./layout.tsx";

/** Link to a saved view. */
export function viewHref(base: string, projectId: string, view: SavedView) {
  return link(base, `/projects/${projectId}`) + view.query;
}

/** A project's saved views as links; with `removable`, each can be removed. */
export function SavedViewList(
  props: {
    ctx: PageContext;
    projectId: string;
    views: SavedView[];
    removable?: boolean;
    /** Where removing one goes back to: `explorer` or `projects`. */
    back?: string;
  },
) {
  const { ctx, projectId, views } = props;
  if (views.length === 0) return null;
  return (
    <ul class="views" aria-label="Saved views">
      {views.map((view) => (
        <li data-view={view.id}>
          <a class="chip view" href={viewHref(ctx.base, projectId, view)}>
            {view.name}
          </a>
          {props.removable && (
            <PostForm
              ctx={ctx}
              to={`/projects/${projectId}/views/delete`}
              class="inline"
            >
              <input type="hidden" name="view" value={view.id} />
              <input type="hidden" name="back" value={props.back ?? ""} />
              <button
                type="submit"
                class="link remove-view"
                aria-label={`Remove view ${view.name}`}
                title="Remove this saved view"
              >
                ×
              </button>
            </PostForm>
          )}
        </li>
      ))}
    </ul>
  );
}

/** The form that saves the current query and range under a name. */
export function SaveViewForm(
  props: { ctx: PageContext; projectId: string; state: ExplorerState },
) {
  const { ctx, state } = props;
  return (
    <details class="save-view">
      <summary>Save view…</summary>
      <PostForm
        ctx={ctx}
        to={`/projects/${props.projectId}/views`}
        id="save-view-form"
      >
        {state.q !== "" && <input type="hidden" name="q" value={state.q} />}
        {state.levels.length > 0 && (
          <input type="hidden" name="level" value={state.levels.join(",")} />
        )}
        {state.since !== undefined
          ? <input type="hidden" name="since" value={formatUtc(state.since)} />
          : <input type="hidden" name="range" value={state.range} />}
        {state.until !== undefined && (
          <input type="hidden" name="until" value={formatUtc(state.until)} />
        )}
        <label>
          Name{" "}
          <input
            name="name"
            id="view-name"
            required
            maxlength={100}
            placeholder="Checkout errors"
          />
        </label>{" "}
        <button type="submit">Save</button>
      </PostForm>
    </details>
  );
}

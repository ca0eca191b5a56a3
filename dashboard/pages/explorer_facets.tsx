/**
 * The explorer's facets: beside the list, for the current query and range,
 * the top values of the standard fields and of the fields pinned in the
 * URL (`facet=data.status`), each with its count and share; one link
 * filters by a value, the other excludes it. A field with too many distinct
 * values says so (db/query/facets.ts bounds the work).
 *
 * @module
 */
import { type Cell, type Facet, FACET_FIELDS, type Facets } from "../source.ts";
import {
  addTerm,
  type ExplorerState,
  fieldTerm,
  MAX_PINNED_FACETS,
  stateQuery,
} from "../explorer_state.ts";
import { NONE } from "../histogram.ts";
import { explorerHref } from "./explorer_list.tsx";
import { formatTime, link } from "./format.ts";
import type { PageContext } from "./layout.tsx";

/** The fields every explorer shows facets of, in order. */
export const STANDARD_FACETS: readonly string[] = FACET_FIELDS;

/** The facet fields of a view: the standard ones, then the pinned ones. */
export function facetFields(state: ExplorerState): string[] {
  return [
    ...STANDARD_FACETS,
    ...(state.facets ?? []).filter((f) => !STANDARD_FACETS.includes(f)),
  ];
}

/** The terms that keep (or drop) the entries whose `path` is `value`. */
export function facetTerm(path: string, value: Cell, exclude: boolean): string {
  if (value === null) return `${exclude ? "" : "-"}${path}:*`;
  return fieldTerm(path, String(value), exclude);
}

/** Props of {@linkcode FacetPanel}. */
export interface FacetPanelProps {
  ctx: PageContext;
  projectId: string;
  state: ExplorerState;
  facets: Facets;
}

/** The facets of a view, as a side panel. */
export function FacetPanel(props: FacetPanelProps) {
  const { ctx, projectId, state, facets } = props;
  const list: ExplorerState = { ...state };
  delete list.cursor;
  delete list.open;
  delete list.around;
  const withTerm = (term: string) =>
    explorerHref(ctx.base, projectId, { ...list, q: addTerm(state.q, term) });
  const pinned = state.facets ?? [];
  return (
    <aside class="facets" id="facets" aria-label="Facets">
      {facets.searchedTo !== undefined && (
        <p class="partial">
          {`Counted back to ${formatTime(facets.searchedTo, false)} UTC`}
        </p>
      )}
      {facets.facets.map((facet) => {
        const unpin = pinned.includes(facet.field)
          ? explorerHref(ctx.base, projectId, {
            ...list,
            facets: pinned.filter((f) => f !== facet.field),
          })
          : null;
        return (
          <section class="facet" data-field={facet.field}>
            <h3>
              {facet.field}
              {unpin && (
                <a class="unpin" href={unpin} title="Unpin this field">×</a>
              )}
            </h3>
            {facet.tooMany
              ? (
                <p class="hint too-many">
                  {`More than ${
                    facet.distinct.toLocaleString("en")
                  } distinct values: not counted`}
                </p>
              )
              : facet.values.length === 0
              ? <p class="hint">No entries</p>
              : <FacetValues facet={facet} href={withTerm} />}
          </section>
        );
      })}
      {pinned.length < MAX_PINNED_FACETS && (
        <PinForm ctx={ctx} projectId={projectId} state={list} />
      )}
    </aside>
  );
}

/** The values of a facet: each filters by itself, or excludes itself. */
function FacetValues(
  props: { facet: Facet; href: (term: string) => string },
) {
  return (
    <ul>
      {props.facet.values.map((v) => (
        <li data-count={v.count}>
          <a
            class="only"
            href={props.href(facetTerm(props.facet.field, v.value, false))}
            title="Show only these"
          >
            <span class="value">
              {v.value === null ? NONE : String(v.value)}
            </span>
            <span class="n">{v.count}</span>
            <span class="share">
              {`${(v.share * 100).toFixed(1)}%`}
            </span>
          </a>
          <a
            class="exclude"
            href={props.href(facetTerm(props.facet.field, v.value, true))}
            title="Exclude these"
            aria-label={`Exclude ${props.facet.field} ${
              v.value === null ? NONE : String(v.value)
            }`}
          >
            −
          </a>
        </li>
      ))}
    </ul>
  );
}

/** A field to pin: the form sends the view's state and one more `facet`. */
function PinForm(
  props: { ctx: PageContext; projectId: string; state: ExplorerState },
) {
  const params = new URLSearchParams(stateQuery(props.state));
  return (
    <form
      class="pin"
      method="get"
      action={link(props.ctx.base, `/projects/${props.projectId}`)}
    >
      {[...params].map(([name, value]) => (
        <input type="hidden" name={name} value={value} />
      ))}
      <input
        type="text"
        name="facet"
        placeholder="data.status"
        aria-label="Field to pin"
        required
        maxlength={200}
      />
      <button type="submit">Pin</button>
    </form>
  );
}

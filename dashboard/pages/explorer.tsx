/**
 * The log explorer of one project: search box, time presets and absolute
 * range, level chips, histogram, the list of entries newest first (with a
 * link to older ones that the script follows as you scroll), the live-tail
 * switch, and the "show in context" view. Everything links to a URL of the
 * same page with another state, so it all works before the script loads.
 *
 * @module
 */
import type { LogRecord } from "../../domain/entry.ts";
import {
  type ExplorerState,
  formatUtc,
  stateQuery,
} from "../explorer_state.ts";
import type { Facets } from "../source.ts";
import { facetFields, FacetPanel } from "./explorer_facets.tsx";
import { AggregationView, type RowsData } from "./explorer_rows.tsx";
import {
  type EntryLinks,
  EntryRow,
  pageBudget,
  type PreviewBudget,
} from "./entry.tsx";
import { ExportLinks } from "./export_links.tsx";
import { LevelChips, TimeControls } from "./explorer_controls.tsx";
import {
  entryLinks,
  EntryList,
  EntryRows,
  explorerHref,
} from "./explorer_list.tsx";
import { link } from "./format.ts";
import { type Histogram, HistogramChart } from "./histogram.tsx";
import { Notice, type PageContext, ProjectLayout } from "./layout.tsx";
import { SavedViewList, SaveViewForm } from "./views.tsx";
import type { SavedView } from "../../db/views.ts";

/** Data of the explorer page. */
export interface ExplorerData {
  project: { id: string; name: string; levels: string[] };
  state: ExplorerState;
  /** The window shown; `live` when it includes the newest entries. */
  window: { since: number; until: number; live: boolean };
  /** Problems with the URL or the query, shown above the list. */
  problems: string[];
  /** A malformed query: the message and the 1-based column. */
  queryError?: { message: string; column: number };
  /** The list, newest first. */
  records: LogRecord[];
  /** Cursor of the next (older) page, `null` at the end. */
  cursor: string | null;
  /** The page ran out of its time budget: searched back to this time. */
  searchedTo?: number;
  histogram: Histogram | null;
  /** The "show in context" view, when `state.around` is set. */
  context?: {
    before: LogRecord[];
    entry: LogRecord | null;
    after: LogRecord[];
  };
  /** The expanded entry when it is not in the list (filtered out, or far down). */
  pinned?: LogRecord | null;
  /** The pinned entry matches this view: it is only too far down the list. */
  pinnedInView?: boolean;
  /** Id the live tail continues after. */
  tailAfter: string;
  /** The project's saved views. */
  views?: SavedView[];
  /** The rows of the query's pipe, shown instead of the list. */
  aggregation?: RowsData;
  /** The facets beside the list. */
  facets?: Facets;
}

function ContextView(
  props: { ctx: PageContext; data: ExplorerData; budget: PreviewBudget },
) {
  const { ctx, data, budget } = props;
  const view = data.context!;
  const links = entryLinks(ctx.base, data.project.id, data.state);
  const back: ExplorerState = { ...data.state };
  delete back.around;
  return (
    <section class="context">
      <p class="context-head">
        {view.entry
          ? `Entries received around ${view.entry.id}, unfiltered, newest first.`
          : "That entry no longer exists (it may have expired)."}{" "}
        <a href={explorerHref(ctx.base, data.project.id, back)}>
          Back to the list
        </a>
      </p>
      <div id="entries" class="entries">
        <EntryRows
          records={[...view.after].reverse()}
          links={links}
          open={data.state.open}
          budget={budget}
        />
        {view.entry && (
          <EntryRow
            record={view.entry}
            links={links}
            open
            focus
            budget={budget}
          />
        )}
        <EntryRows
          records={[...view.before].reverse()}
          links={links}
          open={data.state.open}
          budget={budget}
        />
      </div>
    </section>
  );
}

/** The search box; the hidden fields keep the levels and the time range. */
function SearchForm(
  props: { ctx: PageContext; projectId: string; state: ExplorerState },
) {
  const { ctx, projectId, state } = props;
  return (
    <form
      class="search"
      method="get"
      action={link(ctx.base, `/projects/${projectId}`)}
    >
      <input
        type="search"
        name="q"
        id="q"
        value={state.q}
        placeholder='Search: words, "phrases", context.userId:42, -device.os:iOS, level>=warning'
        aria-label="Query"
        autocomplete="off"
        spellcheck={false}
      />
      {state.levels.length > 0 && (
        <input type="hidden" name="level" value={state.levels.join(",")} />
      )}
      {state.since !== undefined && (
        <input type="hidden" name="since" value={formatUtc(state.since)} />
      )}
      {state.until !== undefined && (
        <input type="hidden" name="until" value={formatUtc(state.until)} />
      )}
      {state.since === undefined && (
        <input type="hidden" name="range" value={state.range} />
      )}
      {state.paused && <input type="hidden" name="live" value="off" />}
      <button type="submit">Search</button>
    </form>
  );
}

/** The live-tail switch, which the script drives. */
function LiveTail(props: { ctx: PageContext; data: ExplorerData }) {
  const { ctx, data } = props;
  const { state } = data;
  const tailState: ExplorerState = { ...state };
  delete tailState.open;
  return (
    <div
      class="live"
      id="live"
      data-tail={explorerHref(ctx.base, data.project.id, tailState, "/tail")}
      data-after={data.tailAfter}
      data-paused={state.paused ? "true" : "false"}
    >
      <span class="dot" aria-hidden="true"></span>
      <span id="live-status">
        {state.paused ? "Live tail paused" : "Live tail"}
      </span>
      <button type="button" id="live-toggle" hidden>
        {state.paused ? "Resume" : "Pause"}
      </button>
    </div>
  );
}

/** Levels, time range, exports, the time zone and the live tail. */
function Toolbar(props: { ctx: PageContext; data: ExplorerData }) {
  const { ctx, data } = props;
  const { state, project } = data;
  return (
    <div class="toolbar">
      <LevelChips ctx={ctx} project={project} state={state} />
      <TimeControls
        ctx={ctx}
        projectId={project.id}
        state={state}
        since={data.window.since}
      />
      {!data.queryError && (
        <ExportLinks
          ctx={ctx}
          projectId={project.id}
          state={state}
          window={data.window}
        />
      )}
      <span class="zone">
        Times in <span class="tz-label">UTC</span>{" "}
        <button type="button" class="tz-toggle link" hidden>
          Show local time
        </button>
      </span>
      {data.window.live && !data.queryError && !data.aggregation && (
        <LiveTail ctx={ctx} data={data} />
      )}
    </div>
  );
}

/** A malformed query's message, a caret under its column. */
function QueryError(
  props: { q: string; error: { message: string; column: number } },
) {
  const { q, error } = props;
  return (
    <div class="notice error" role="alert">
      <p>{error.message}</p>
      <pre class="caret">{`${q}\n${" ".repeat(Math.max(0, error.column - 1))}^`}</pre>
    </div>
  );
}

/** The linked entry, shown on its own when the list does not hold it. */
function PinnedEntry(
  props: {
    record: LogRecord;
    inView?: boolean;
    links: EntryLinks;
    budget: PreviewBudget;
  },
) {
  return (
    <section class="pinned">
      <p class="hint">
        {props.inView
          ? "The linked entry is too far down this list to list it in its place; it is shown here on its own."
          : "The linked entry does not match this view; it is shown here on its own."}
      </p>
      <EntryRow
        record={props.record}
        links={props.links}
        open
        budget={props.budget}
      />
    </section>
  );
}

/** The list of entries, or what to do when none match. */
function Entries(
  props: { ctx: PageContext; data: ExplorerData; budget: PreviewBudget },
) {
  const { ctx, data } = props;
  const { project } = data;
  return (
    <>
      <div id="entries" class="entries" aria-live="polite">
        <EntryList
          ctx={ctx}
          projectId={project.id}
          state={data.state}
          records={data.records}
          cursor={data.cursor}
          {...(data.searchedTo === undefined
            ? {}
            : { searchedTo: data.searchedTo })}
          budget={props.budget}
        />
      </div>
      {data.records.length === 0 && !data.queryError && (
        <p class="empty">
          No entries match in this time range. New ones appear here as they
          arrive; see {ctx.opens(`/projects/${project.id}/settings`) && (
            <>
              <a
                href={link(
                  ctx.base,
                  `/projects/${project.id}/settings#first-entry`,
                )}
              >
                Send your first entry
              </a>{" "}
              or{" "}
            </>
          )}
          the{" "}
          <a href={link(ctx.base, `/projects/${project.id}/rejections`)}>
            rejections
          </a>.
        </p>
      )}
    </>
  );
}

/**
 * The field the histogram is split by: a select of level and the facet
 * fields; the page's script sends the form on change.
 */
function SplitControl(
  props: { ctx: PageContext; projectId: string; state: ExplorerState },
) {
  const { ctx, projectId, state } = props;
  const rest: ExplorerState = { ...state };
  delete rest.split;
  delete rest.cursor;
  delete rest.open;
  const fields = facetFields(state);
  if (state.split !== undefined && !fields.includes(state.split)) {
    fields.push(state.split);
  }
  return (
    <form
      class="split"
      id="split"
      method="get"
      action={link(ctx.base, `/projects/${projectId}`)}
    >
      {[...new URLSearchParams(stateQuery(rest))].map(([name, value]) => (
        <input type="hidden" name={name} value={value} />
      ))}
      <label>
        Histogram by{" "}
        <select name="split">
          {fields.map((f) => (
            <option value={f} selected={(state.split ?? "level") === f}>
              {f === "level" ? "level" : `top 5 ${f}`}
            </option>
          ))}
        </select>
      </label>{" "}
      <button type="submit" class="split-go">Split</button>
    </form>
  );
}

/** The list, and the facets beside it. */
function ListAndFacets(
  props: { ctx: PageContext; data: ExplorerData; budget: PreviewBudget },
) {
  const { ctx, data, budget } = props;
  const { project, state } = data;
  return (
    <div class={data.facets ? "with-facets" : ""}>
      <div class="list">
        {data.histogram && (
          <SplitControl ctx={ctx} projectId={project.id} state={state} />
        )}
        {data.pinned && (
          <PinnedEntry
            record={data.pinned}
            inView={data.pinnedInView}
            links={entryLinks(ctx.base, project.id, state)}
            budget={budget}
          />
        )}
        {data.context
          ? <ContextView ctx={ctx} data={data} budget={budget} />
          : <Entries ctx={ctx} data={data} budget={budget} />}
      </div>
      {data.facets && (
        <FacetPanel
          ctx={ctx}
          projectId={project.id}
          state={state}
          facets={data.facets}
        />
      )}
    </div>
  );
}

/** The explorer page. */
export function ExplorerPage(props: { ctx: PageContext; data: ExplorerData }) {
  const { ctx, data } = props;
  const { state, project } = data;
  const zoomBase: ExplorerState = { ...state };
  delete zoomBase.cursor;
  delete zoomBase.open;
  delete zoomBase.around;
  // One preview budget for every entry this page shows.
  const budget = pageBudget();
  return (
    <ProjectLayout
      ctx={ctx}
      project={project}
      tab="explorer"
      scripts={["explorer.js"]}
      styles={["explorer.css"]}
    >
      <SearchForm ctx={ctx} projectId={project.id} state={state} />
      <Toolbar ctx={ctx} data={data} />
      <div class="saved-views">
        <SavedViewList
          ctx={ctx}
          projectId={project.id}
          views={data.views ?? []}
          removable={ctx.posts(`/projects/${project.id}/views/delete`)}
          back="explorer"
        />
        {ctx.posts(`/projects/${project.id}/views`) && (
          <SaveViewForm ctx={ctx} projectId={project.id} state={state} />
        )}
      </div>
      {data.queryError && <QueryError q={state.q} error={data.queryError} />}
      {data.problems.map((p) => <Notice key={p} kind="error">{p}</Notice>)}
      {data.histogram && (
        <HistogramChart
          histogram={data.histogram}
          zoom={(start, end) =>
            explorerHref(ctx.base, project.id, {
              ...zoomBase,
              since: start,
              until: end,
            })}
        />
      )}
      {data.queryError ? null : data.aggregation
        ? (
          <AggregationView
            ctx={ctx}
            projectId={project.id}
            state={state}
            window={data.window}
            data={data.aggregation}
          />
        )
        : <ListAndFacets ctx={ctx} data={data} budget={budget} />}
      <p class="keys">
        <kbd>j</kbd>/<kbd>k</kbd> move · <kbd>Enter</kbd> expand · <kbd>/</kbd>
        {" "}
        search
      </p>
    </ProjectLayout>
  );
}

/**
 * The explorer's list of entries and its links: the URL of a view, the
 * links of a row, the rows with the link to the next page (also the answer
 * to a page request from the script), and one row as live tail sends it.
 *
 * @module
 */
import { formatTime } from "./format.ts";
import type { LogRecord } from "../../domain/entry.ts";
import {
  addTerm,
  type ExplorerState,
  fieldTerm,
  stateQuery,
} from "../explorer_state.ts";
import {
  type EntryLinks,
  EntryRow,
  pageBudget,
  type PreviewBudget,
} from "./entry.tsx";
import { link } from "./format.ts";
import type { PageContext } from "./layout.tsx";

/** URL of the explorer of `projectId` showing `state`. */
export function explorerHref(
  base: string,
  projectId: string,
  state: ExplorerState,
  suffix = "",
): string {
  return link(base, `/projects/${projectId}${suffix}`) + stateQuery(state);
}

/** The links of entry rows shown in `state`. */
export function entryLinks(
  base: string,
  projectId: string,
  state: ExplorerState,
): EntryLinks {
  const list: ExplorerState = { ...state };
  delete list.open;
  delete list.around;
  delete list.cursor;
  return {
    filter: ({ path, value, exclude }) =>
      explorerHref(base, projectId, {
        ...list,
        q: addTerm(state.q, fieldTerm(path, value, exclude)),
      }),
    around: (id) =>
      explorerHref(base, projectId, { ...list, around: id, open: id }),
    permalink: (id) => explorerHref(base, projectId, { ...state, open: id }),
    entry: (id) => {
      const page = explorerHref(base, projectId, list, `/entries/${id}`);
      return {
        page,
        detail: `${page}${page.includes("?") ? "&" : "?"}part=detail`,
      };
    },
  };
}

/** One row as live tail sends it, with the links of the view it was asked for. */
export function TailRow(
  props: {
    ctx: PageContext;
    projectId: string;
    state: ExplorerState;
    record: LogRecord;
  },
) {
  const links = entryLinks(props.ctx.base, props.projectId, props.state);
  return <EntryRow record={props.record} links={links} />;
}

/** Entries as rows, newest first; the one the view names as `open` open. */
export function EntryRows(
  props: {
    records: LogRecord[];
    links: EntryLinks;
    open: string | undefined;
    budget: PreviewBudget;
  },
) {
  return (
    <>
      {props.records.map((record) => (
        <EntryRow
          key={record.id}
          record={record}
          links={props.links}
          open={record.id === props.open}
          budget={props.budget}
        />
      ))}
    </>
  );
}

/** Rows of entries plus the link to the next page (also the fragment answer). */
export function EntryList(
  props: {
    ctx: PageContext;
    projectId: string;
    state: ExplorerState;
    records: LogRecord[];
    cursor: string | null;
    /**
     * Set when the search ran out of the time a page may take
     * (db/query/query.ts): it searched back to this receipt time.
     */
    searchedTo?: number;
    /** The page's preview budget. @default a fresh one */
    budget?: PreviewBudget;
  },
) {
  const { ctx, projectId, state } = props;
  const links = entryLinks(ctx.base, projectId, state);
  const budget = props.budget ?? pageBudget();
  const next: ExplorerState = { ...state, cursor: props.cursor ?? undefined };
  delete next.open;
  return (
    <>
      <EntryRows
        records={props.records}
        links={links}
        open={state.open}
        budget={budget}
      />
      {props.searchedTo !== undefined && (
        <p class="partial" id="partial">
          {`Searched back to ${
            formatTime(props.searchedTo, false)
          } UTC in the time one page may take; older entries are searched when you go on.`}
        </p>
      )}
      {props.cursor !== null
        ? (
          <a
            class="more"
            id="more"
            href={explorerHref(ctx.base, projectId, next)}
            data-fragment={explorerHref(ctx.base, projectId, next, "/entries")}
          >
            Older entries
          </a>
        )
        : <p class="end" id="more-end">No older entries in this range</p>}
    </>
  );
}

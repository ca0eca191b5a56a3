/**
 * What the explorer counts rather than lists: the rows of a query that ends
 * with a pipe (on the page, and as CSV at `GET /projects/:id/rows.csv` for
 * a signed-in reader, as the read API would answer with a token), the
 * facets beside the list, and the histogram split by a field. Each stays
 * within a time budget and answers what it counted.
 *
 * @module
 */
import { rowsCsv } from "../../domain/csv.ts";
import { BODY_PIECE_CHARS, heldBody } from "../query_slots.ts";
import type { Project } from "../../db/projects.ts";
import {
  type ExplorerState,
  readState,
  stateSearch,
} from "../explorer_state.ts";
import { explorerHistogram, splitHistogram } from "../histogram.ts";
import type { ExplorerHistogram } from "../histogram.ts";
import { facetFields } from "../pages/explorer_facets.tsx";
import type { RowsData } from "../pages/explorer_rows.tsx";
import type { ExplorerData } from "../pages/explorer.tsx";
import {
  type Facets,
  type Filter,
  InvalidQueryError,
  type Pipe,
  QuerySyntaxError,
} from "../source.ts";
import type { DashboardDeps, DashContext } from "./common.ts";

/**
 * The rows of `pipe` over `filter`, or the reason it cannot count them
 * (too many groups).
 */
export async function aggregationRows(
  deps: DashboardDeps,
  projectId: string,
  filter: Filter,
  pipe: Pipe,
): Promise<RowsData | string> {
  try {
    const answer = await deps.reads.aggregate(projectId, {
      filter,
      pipe,
      ...(deps.queryBudget?.ms === undefined
        ? {}
        : { budget: { ms: deps.queryBudget.ms } }),
    });
    return {
      pipe,
      columns: answer.columns,
      rows: answer.rows,
      groups: answer.groups,
      total: answer.total,
      ...(answer.estimate ? { estimate: true as const } : {}),
      ...(answer.searchedTo === undefined
        ? {}
        : { searchedTo: answer.searchedTo }),
    };
  } catch (error) {
    if (!(error instanceof InvalidQueryError)) throw error;
    return error.message;
  }
}

/**
 * Puts the rows of `pipe` in the page's data, or the reason it cannot
 * count them in its problems (then `false`).
 */
export async function showRows(
  deps: DashboardDeps,
  projectId: string,
  data: ExplorerData,
  search: { filter: Filter; pipe: Pipe },
): Promise<boolean> {
  const rows = await aggregationRows(
    deps,
    projectId,
    search.filter,
    search.pipe,
  );
  if (typeof rows === "string") {
    data.problems.push(rows);
    return false;
  }
  data.aggregation = rows;
  return true;
}

/** The facets of a view, in their own time budget. */
export async function viewFacets(
  deps: DashboardDeps,
  projectId: string,
  state: ExplorerState,
  filter: Filter,
): Promise<Facets> {
  return await deps.reads.facets(projectId, {
    filter,
    fields: facetFields(state),
    budget: { ms: deps.facetsBudgetMs },
  });
}

/** The view's histogram: by level, or split by `state.split`. */
export async function viewHistogram(
  deps: DashboardDeps,
  projectId: string,
  view: {
    state: ExplorerState;
    filter: Filter;
    window: { since: number; until: number };
    startedAt: number;
  },
): Promise<ExplorerHistogram> {
  const { state, filter, window } = view;
  if (state.split !== undefined) {
    return await splitHistogram(deps.reads, projectId, {
      since: window.since,
      until: window.until,
      filter,
      field: state.split,
      budgetMs: deps.histogramBudgetMs,
    });
  }
  return await explorerHistogram(deps.reads, projectId, {
    since: window.since,
    until: window.until,
    filter,
    budgetMs: deps.histogramBudgetMs,
    startedAt: view.startedAt,
  });
}

/**
 * `GET /projects/:id/rows.csv`: the rows of the view's pipe as CSV, with
 * `X-Searched-Back-To` when the budget ran out; `400` with the reason when
 * the query is malformed or has no pipe.
 */
export async function rowsCsvResponse(
  c: DashContext,
  deps: DashboardDeps,
  project: Project,
): Promise<Response> {
  const now = deps.now();
  const { state } = readState(new URL(c.req.url).searchParams);
  let search;
  try {
    search = stateSearch(state, now);
  } catch (error) {
    if (!(error instanceof QuerySyntaxError)) throw error;
    return c.text(error.message, 400);
  }
  if (search.pipe === null) {
    return c.text(
      "Cannot download rows: the query has no aggregation (| count, | top, | uniq)",
      400,
    );
  }
  const rows = await aggregationRows(
    deps,
    project.id,
    search.filter,
    search.pipe,
  );
  if (typeof rows === "string") return c.text(rows, 400);
  c.header("Content-Type", "text/csv; charset=utf-8");
  c.header("Content-Disposition", 'attachment; filename="rows.csv"');
  if (rows.searchedTo !== undefined) {
    c.header("X-Searched-Back-To", new Date(rows.searchedTo).toISOString());
  }
  const text = rowsCsv(rows.columns, rows.rows);
  const keep = c.get("keepQuerySlot");
  if (text.length <= BODY_PIECE_CHARS || c.req.method === "HEAD" || !keep) {
    return c.body(text);
  }
  // Held until sent, as the read API's pages are: a reader that stops
  // reading keeps its slot, not a slot's worth of rows for free.
  const { body, bytes } = heldBody([text], keep(), deps.querySlots);
  c.header("Content-Length", String(bytes));
  return c.body(body);
}

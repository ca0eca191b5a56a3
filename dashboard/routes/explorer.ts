/**
 * The explorer's routes: `GET /projects/:id` (the page), `…/entries` (the
 * rows of a further page, as an HTML fragment) and `…/tail` (live tail as
 * server-sent events). All three read the view's state from the query
 * string and entries only through dashboard/source.ts.
 *
 * @module
 */
import { getCookie } from "hono/cookie";
import type { LogRecord } from "../../domain/entry.ts";
import { mayRead } from "../access.ts";
import { getProject } from "../../db/projects.ts";
import { listViews } from "../../db/views.ts";
import {
  type ExplorerState,
  readState,
  stateFilter,
  timeWindow,
} from "../explorer_state.ts";
import { explorerHistogram } from "../histogram.ts";
import { type ExplorerData, ExplorerPage } from "../pages/explorer.tsx";
import { EntryList, TailRow } from "../pages/explorer_list.tsx";
import {
  aroundEntry,
  type Filter,
  getEntry,
  matches,
  queryLogs,
  QuerySyntaxError,
} from "../source.ts";
import {
  type DashApp,
  type DashboardDeps,
  type DashContext,
  idParam,
  pageContext,
  render,
} from "./common.ts";
import { projectNotFound } from "./settings.ts";
import { tailStream } from "./tail.ts";
import { SESSION_COOKIE } from "./auth.ts";

/** Entries per page of the list. */
export const PAGE_SIZE = 50;
/**
 * Rows listed at most to reach the expanded entry of a permalink in its
 * place; further down, it is shown pinned above the list. (At 500 the page
 * weighed 4 MB and took 300–500 ms on the benchmark store.)
 */
const MAX_ROWS_TO_OPEN = 4 * PAGE_SIZE;
/** Entries shown on each side in "show in context". */
export const CONTEXT_SIZE = 20;

/** The smallest id of time `ms`: where a tail with nothing shown starts. */
function idAt(ms: number): string {
  return Math.max(0, Math.floor(ms)).toString(16).padStart(12, "0") +
    "0".repeat(16);
}

/** Reads the state; a malformed query becomes `queryError`. */
function readView(
  c: DashContext,
  now: number,
): {
  state: ExplorerState;
  problems: string[];
  filter: Filter | null;
  queryError?: { message: string; column: number };
} {
  const { state, problems } = readState(new URL(c.req.url).searchParams);
  try {
    return { state, problems, filter: stateFilter(state, now) };
  } catch (error) {
    if (!(error instanceof QuerySyntaxError)) throw error;
    return {
      state,
      problems,
      filter: null,
      queryError: { message: error.message, column: error.column },
    };
  }
}

/** Adds the explorer routes. */
export function explorerRoutes(app: DashApp, deps: DashboardDeps): void {
  const { base, kv } = deps;

  app.get(`${base}/projects/:id`, async (c) => {
    const project = await getProject(kv, idParam(c));
    if (project === null) return await projectNotFound(c, deps);
    const now = deps.now();
    const { state, problems, filter, queryError } = readView(c, now);
    const window = timeWindow(state, now);
    const data: ExplorerData = {
      project: { id: project.id, name: project.name, levels: project.levels },
      state,
      window,
      problems,
      ...(queryError ? { queryError } : {}),
      records: [],
      cursor: null,
      histogram: null,
      tailAfter: idAt(now - 60_000),
      views: await listViews(kv, project.id),
    };
    if (filter !== null && state.around !== undefined) {
      data.context = await aroundEntry(
        kv,
        project.id,
        state.around,
        CONTEXT_SIZE,
      );
    } else if (filter !== null) {
      const began = performance.now();
      const first = await queryLogs(kv, project.id, {
        filter,
        limit: PAGE_SIZE,
        ...(state.cursor ? { cursor: state.cursor } : {}),
      });
      const records: LogRecord[] = [...first.records];
      let cursor = first.cursor;
      const found = () => records.some((r) => r.id === state.open);
      // A permalink to an entry further down: the rows down to it, in one
      // more read.
      if (state.open !== undefined && !found() && cursor !== null) {
        const next = await queryLogs(kv, project.id, {
          filter,
          limit: MAX_ROWS_TO_OPEN - records.length,
          cursor,
        });
        if (next.records.some((r) => r.id === state.open)) {
          records.push(...next.records);
          cursor = next.cursor;
        }
      }
      if (state.open !== undefined && !found()) {
        data.pinned = await getEntry(kv, project.id, state.open);
        data.pinnedInView = data.pinned !== null &&
          matches(data.pinned, filter);
      }
      // Last, in what is left of the page's time budget.
      data.histogram = await explorerHistogram(kv, project.id, {
        since: window.since,
        until: window.until,
        filter,
        budgetMs: deps.histogramBudgetMs,
        startedAt: began,
      });
      data.records = records;
      data.cursor = cursor;
      if (records[0] && state.cursor === undefined) {
        data.tailAfter = records[0].id;
      }
    }
    return await render(c, ExplorerPage({ ctx: pageContext(c, deps), data }));
  });

  app.get(`${base}/projects/:id/entries`, async (c) => {
    const project = await getProject(kv, idParam(c));
    if (project === null) return c.text("No such project", 404);
    const { state, filter, queryError } = readView(c, deps.now());
    if (filter === null) return c.text(queryError!.message, 400);
    const page = await queryLogs(kv, project.id, {
      filter,
      limit: PAGE_SIZE,
      ...(state.cursor ? { cursor: state.cursor } : {}),
    });
    const html = await EntryList({
      ctx: pageContext(c, deps),
      projectId: project.id,
      state,
      records: page.records,
      cursor: page.cursor,
    }).toString();
    return c.html(html);
  });

  app.get(`${base}/projects/:id/tail`, async (c) => {
    const project = await getProject(kv, idParam(c));
    if (project === null) return c.text("No such project", 404);
    const { state, filter, queryError } = readView(c, deps.now());
    if (filter === null) return c.text(queryError!.message, 400);
    const ID = /^[0-9a-f]{28}$/;
    const resumed = c.req.header("last-event-id");
    const after = resumed !== undefined && ID.test(resumed)
      ? resumed
      : ID.test(c.req.query("after") ?? "")
      ? c.req.query("after")!
      : idAt(deps.now() - 60_000);
    return tailStream({
      kv,
      projectId: project.id,
      filter,
      after,
      now: deps.now,
      timing: deps.tail,
      alive: async () =>
        mayRead(
          await deps.sessions.verify(getCookie(c, SESSION_COOKIE)),
          project.id,
        ),
      row: (record) =>
        TailRow({
          ctx: pageContext(c, deps),
          projectId: project.id,
          state,
          record,
        }).toString(),
    });
  });
}

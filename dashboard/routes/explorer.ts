/**
 * The explorer's routes: `GET /projects/:id` (the page), `…/entries` (the
 * rows of a further page, as an HTML fragment), `…/entries/:entryId` (one
 * entry in full: a page, or with `part=detail` the fragment that replaces a
 * cut preview) and `…/tail` (live tail as server-sent events, bounded per
 * session and in all). All read the view's state from the query string and
 * entries only through dashboard/source.ts; a cursor the query functions
 * cannot read is answered `400` with the reason.
 *
 * @module
 */
import type { ScanBudget } from "../../db/query/scan.ts";
import type { Reads } from "../../db/query/reads.ts";
import { getCookie } from "hono/cookie";
import { firstIdAt } from "../../domain/ids.ts";
import type { LogRecord } from "../../domain/entry.ts";
import { mayRead } from "../access.ts";
import { getProject, type Project } from "../../db/projects.ts";
import { listViews } from "../../db/views.ts";
import {
  type ExplorerState,
  isEntryId,
  readState,
  stateSearch,
  timeWindow,
} from "../explorer_state.ts";
import { type ExplorerData, ExplorerPage } from "../pages/explorer.tsx";
import { EntryDetail } from "../pages/entry.tsx";
import { ExplorerEntryPage } from "../pages/explorer_entry.tsx";
import { entryLinks, EntryList, TailRow } from "../pages/explorer_list.tsx";
import {
  aroundEntry,
  type Filter,
  getEntry,
  InvalidQueryError,
  matches,
  type Pipe,
  QuerySyntaxError,
} from "../source.ts";
import {
  rowsCsvResponse,
  showRows,
  viewFacets,
  viewHistogram,
} from "./explorer_rows.ts";
import {
  type DashApp,
  type DashboardDeps,
  type DashContext,
  idParam,
  message,
  pageContext,
  render,
  renderPage,
  withProject,
} from "./common.ts";
import { TailSlots, type TailSlotsOptions, tailStream } from "./tail.ts";
import { SESSION_COOKIE } from "./auth.ts";

/** Entries per page of the list. */
export const PAGE_SIZE = 50;
/**
 * Rows listed at most to reach the expanded entry of a permalink in its
 * place; further down, it is shown pinned above the list, since listing
 * every row above a deep entry makes a page too heavy to send and to draw
 * (BENCHMARKS.md#dashboard has the measured pages).
 */
const MAX_ROWS_TO_OPEN = 4 * PAGE_SIZE;
/** Entries shown on each side in "show in context". */
export const CONTEXT_SIZE = 20;

/**
 * Reads the state; a malformed query becomes `queryError`, and so does a
 * pipe unless `pipes` (only the page counts rows).
 */
function readView(
  c: DashContext,
  now: number,
  pipes = false,
): {
  state: ExplorerState;
  problems: string[];
  filter: Filter | null;
  pipe?: Pipe | null;
  queryError?: { message: string; column: number };
} {
  const { state, problems } = readState(new URL(c.req.url).searchParams);
  const window = timeWindow(state, now);
  if (state.since !== undefined && window.since >= window.until) {
    problems.push(
      `Cannot show a time range that starts after it ends: "since" is later than now`,
    );
    delete state.since;
  }
  try {
    const { filter, pipe } = stateSearch(state, now, pipes);
    return { state, problems, filter, pipe };
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

/**
 * The project and the view of a request the explorer's script makes (a
 * page of entries, the tail), or the plain-text answer refusing it.
 */
async function readScriptRequest(
  c: DashContext,
  kv: Deno.Kv,
  now: number,
): Promise<
  { project: Project; state: ExplorerState; filter: Filter } | Response
> {
  const project = await getProject(kv, idParam(c));
  if (project === null) return c.text("No such project", 404);
  const { state, filter, queryError } = readView(c, now);
  if (filter === null) return c.text(queryError!.message, 400);
  return { project, state, filter };
}

/**
 * The first page of a view; with a permalink to an entry further down, the
 * rows down to it, in one more read.
 */
async function listDownTo(
  reads: Reads,
  projectId: string,
  filter: Filter,
  state: ExplorerState,
  budget?: ScanBudget,
): Promise<
  { records: LogRecord[]; cursor: string | null; searchedTo?: number }
> {
  const first = await reads.queryLogs(projectId, {
    filter,
    limit: PAGE_SIZE,
    ...(state.cursor ? { cursor: state.cursor } : {}),
    ...(budget ? { budget } : {}),
  });
  const records: LogRecord[] = [...first.records];
  let cursor = first.cursor;
  if (
    state.open !== undefined && cursor !== null &&
    !records.some((r) => r.id === state.open)
  ) {
    const next = await reads.queryLogs(projectId, {
      filter,
      limit: MAX_ROWS_TO_OPEN - records.length,
      cursor,
    });
    if (next.records.some((r) => r.id === state.open)) {
      records.push(...next.records);
      cursor = next.cursor;
    }
  }
  return first.searchedTo === undefined || cursor !== first.cursor
    ? { records, cursor }
    : { records, cursor, searchedTo: first.searchedTo };
}

/**
 * The explorer of a project: the page of entries the view lists (or those
 * around one), the entry of a permalink pinned when it is further down, the
 * histogram, in what is left of the page's time budget, and the facets, in
 * a budget of their own; or, for a query with a pipe, its rows.
 */
async function explorerPage(
  c: DashContext,
  deps: DashboardDeps,
  project: Project,
): Promise<Response> {
  const { kv } = deps;
  const now = deps.now();
  const { state, problems, filter, pipe, queryError } = readView(c, now, true);
  const window = timeWindow(state, now);
  let status: 200 | 400 = 200;
  const data: ExplorerData = {
    project: { id: project.id, name: project.name, levels: project.levels },
    state,
    window,
    problems,
    ...(queryError ? { queryError } : {}),
    records: [],
    cursor: null,
    histogram: null,
    tailAfter: firstIdAt(now - 60_000),
    views: await listViews(kv, project.id),
  };
  if (filter !== null && pipe) {
    if (!await showRows(deps, project.id, data, { filter, pipe })) status = 400;
  } else if (filter !== null && state.around !== undefined) {
    data.context = await aroundEntry(
      kv,
      project.id,
      state.around,
      CONTEXT_SIZE,
    );
  } else if (filter !== null) {
    const began = performance.now();
    const list = () =>
      listDownTo(deps.reads, project.id, filter, state, deps.queryBudget);
    let listed: Awaited<ReturnType<typeof listDownTo>>;
    try {
      listed = await list();
    } catch (error) {
      // A cursor the query functions cannot read (made up, or of another
      // order): said on the page, and the list starts from the top.
      if (!(error instanceof InvalidQueryError)) throw error;
      problems.push(error.message);
      status = 400;
      delete state.cursor;
      listed = await list();
    }
    const { records, cursor } = listed;
    if (
      state.open !== undefined && !records.some((r) => r.id === state.open)
    ) {
      data.pinned = await getEntry(kv, project.id, state.open);
      data.pinnedInView = data.pinned !== null &&
        matches(data.pinned, filter);
    }
    // Then, in what is left of the page's time budget.
    try {
      data.histogram = await viewHistogram(deps, project.id, {
        state,
        filter,
        window,
        startedAt: began,
      });
    } catch (error) {
      if (!(error instanceof InvalidQueryError)) throw error;
      problems.push(`Cannot chart this time range: ${error.message}`);
    }
    data.facets = await viewFacets(deps, project.id, state, filter);
    data.records = records;
    data.cursor = cursor;
    if (listed.searchedTo !== undefined) data.searchedTo = listed.searchedTo;
    if (records[0] && state.cursor === undefined) {
      data.tailAfter = records[0].id;
    }
  }
  return await renderPage(c, deps, ExplorerPage, data, status);
}

/** One entry in full: a page, or with `part=detail` its detail alone. */
async function entryPage(
  c: DashContext,
  deps: DashboardDeps,
  project: Project,
): Promise<Response> {
  const { kv } = deps;
  const entryId = c.req.param("entryId") ?? "";
  const record = isEntryId(entryId)
    ? await getEntry(kv, project.id, entryId)
    : null;
  const detail = c.req.query("part") === "detail";
  if (record === null) {
    if (detail) return c.text("No such entry: it may have expired", 404);
    return await message(
      c,
      deps,
      "No such entry",
      "This project has no entry with this id. It may have expired.",
      404,
    );
  }
  const { state } = readState(new URL(c.req.url).searchParams);
  const ctx = pageContext(c, deps);
  const resolved = await deps.reads.shownStack(project.id, record);
  if (detail) {
    const links = entryLinks(ctx.base, project.id, state);
    return c.html(
      await EntryDetail({ record, links, full: true, resolved }).toString(),
    );
  }
  return await render(
    c,
    ExplorerEntryPage({
      ctx,
      project: { id: project.id, name: project.name },
      state,
      record,
      resolved,
    }),
  );
}

/** Options of {@linkcode explorerRoutes}. */
export interface ExplorerRoutesOptions {
  /** Live tails open at once. @default 4 per session, 8 per account, 64 in all */
  tailLimits?: TailSlotsOptions;
}

/** Adds the explorer routes. */
export function explorerRoutes(
  app: DashApp,
  deps: DashboardDeps,
  options: ExplorerRoutesOptions = {},
): void {
  const { kv } = deps;
  const tails = new TailSlots(options.tailLimits);

  app.get(
    `/projects/:id`,
    withProject(deps, (c, project) => explorerPage(c, deps, project)),
  );

  app.get(`/projects/:id/entries`, async (c) => {
    const read = await readScriptRequest(c, kv, deps.now());
    if (read instanceof Response) return read;
    const { project, state, filter } = read;
    let page;
    try {
      page = await deps.reads.queryLogs(project.id, {
        filter,
        limit: PAGE_SIZE,
        ...(state.cursor ? { cursor: state.cursor } : {}),
        ...(deps.queryBudget ? { budget: deps.queryBudget } : {}),
      });
    } catch (error) {
      if (!(error instanceof InvalidQueryError)) throw error;
      return c.text(error.message, 400);
    }
    const html = await EntryList({
      ctx: pageContext(c, deps),
      projectId: project.id,
      state,
      records: page.records,
      cursor: page.cursor,
      ...(page.searchedTo === undefined ? {} : { searchedTo: page.searchedTo }),
    }).toString();
    return c.html(html);
  });

  // One entry in full: a page, or with `part=detail` the detail the script
  // puts in place of a cut preview.
  app.get(
    `/projects/:id/entries/:entryId`,
    withProject(deps, (c, project) => entryPage(c, deps, project)),
  );

  app.get("/projects/:id/tail", (c) => liveTail(c, deps, tails));

  app.get(
    `/projects/:id/rows.csv`,
    withProject(deps, (c, project) => rowsCsvResponse(c, deps, project)),
  );
}

/** A live tail of a project, if a slot is free: past a bound, `429`. */
async function liveTail(
  c: DashContext,
  deps: DashboardDeps,
  tails: TailSlots,
): Promise<Response> {
  const { kv } = deps;
  const read = await readScriptRequest(c, kv, deps.now());
  if (read instanceof Response) return read;
  const { project, state, filter } = read;
  const resumed = c.req.header("last-event-id");
  const after = resumed !== undefined && isEntryId(resumed)
    ? resumed
    : isEntryId(c.req.query("after") ?? "")
    ? c.req.query("after")!
    : firstIdAt(deps.now() - 60_000);
  if (c.req.method === "HEAD") {
    // No stream to hold a slot: nobody would read it or end it.
    return c.body(null, 200, { "Content-Type": "text/event-stream" });
  }
  const session = c.get("session")!;
  const slot = tails.take(session.id, session.account.email);
  if (typeof slot === "string") {
    c.header("Retry-After", "60");
    return c.text(slot, 429);
  }
  return tailStream({
    onClose: slot,
    reads: deps.reads,
    projectId: project.id,
    filter,
    after,
    now: deps.now,
    timing: deps.tail,
    // Ended by the project's deletion too: what its deletion has not yet
    // deleted is read no more.
    alive: async () =>
      mayRead(
        await deps.sessions.verify(getCookie(c, SESSION_COOKIE)),
        project.id,
      ) && await getProject(kv, project.id) !== null,
    row: (record) =>
      TailRow({
        ctx: pageContext(c, deps),
        projectId: project.id,
        state,
        record,
      }).toString(),
  });
}

/**
 * What the dashboard's routes share: their dependencies, the Hono
 * environment (the answer's nonce and the session), the page context built
 * from a request, rendering a page to an HTML answer, reading forms, and
 * recording what the signed-in account changed in the audit log.
 *
 * @module
 */
import type { QuerySlots } from "../query_slots.ts";
import type { ScanBudget } from "../../db/query/scan.ts";
import type { Reads } from "../../db/query/reads.ts";
import type { Context, Hono } from "hono";
import type { BlankSchema } from "hono/types";
import { recordAudit } from "../../db/audit.ts";
import { getProject, type Project } from "../../db/projects.ts";
import { type Flash, setFlash, takeFlash } from "../flash.ts";
import { mayOpen, mayPost } from "../page_table.ts";
import { MessagePage } from "../pages/message.tsx";
import type { PageContext } from "../pages/layout.tsx";
import type { LoginLimiter } from "../security.ts";
import type { Session, SessionStore } from "../session.ts";

/** The Hono environment of the dashboard. */
export interface DashEnv {
  Bindings: { remoteAddr?: Deno.NetAddr };
  Variables: {
    nonce: string;
    session: Session | null;
    /**
     * Takes over the query slot a query page runs in: the caller gives it
     * back (once its body is sent), not the page's end. Absent outside query
     * pages.
     */
    keepQuerySlot?: () => () => void;
  };
}

/** The dashboard's app type. */
export type DashApp = Hono<DashEnv, BlankSchema, string>;

/** A request's context. */
export type DashContext = Context<DashEnv>;

/** Live tail timing. */
export interface TailTiming {
  /** Time between two reads of new entries. */
  intervalMs: number;
  /** A stream ends after this long; the browser reconnects where it was. */
  maxMs: number;
  /** Comment lines that keep idle connections open. */
  heartbeatMs: number;
}

/** Everything the routes need. */
export interface DashboardDeps {
  kv: Deno.Kv;
  /** What searches, aggregations, facets and histograms read with. */
  reads: Reads;
  /** `""` standalone, `/dashboard` when mounted. */
  base: string;
  now: () => number;
  sessions: SessionStore;
  limiter: LoginLimiter;
  trustProxy: number;
  /** The service's `…/api/v1/logs` as seen from a request to the dashboard. */
  endpoint: (url: URL) => string;
  assetUrls: Record<string, string>;
  tail: TailTiming;
  /**
   * Server time an explorer page may take, listing included, before its
   * histogram leaves older bars uncounted.
   */
  histogramBudgetMs: number;
  /** Server time the explorer's facets may take (db/query/facets.ts). */
  facetsBudgetMs: number;
  /** Time a source map's bytes may take to arrive whole. */
  uploadTimeMs: number;
  /** Work one page of entries may do (db/query/query.ts). @default 2 s */
  queryBudget?: ScanBudget;
  /** Queries running at once, per reader and in all. */
  querySlots: QuerySlots;
}

/** The page context of a request. */
export function pageContext(c: DashContext, deps: DashboardDeps): PageContext {
  const account = c.get("session")?.account ?? null;
  return {
    base: deps.base,
    nonce: c.get("nonce"),
    csrf: c.get("session")?.csrf ?? null,
    assets: deps.assetUrls,
    opens: (path) => mayOpen(account, path),
    posts: (path) => mayPost(account, path),
    ...(c.get("session")
      ? {
        account: {
          email: c.get("session")!.account.email,
          role: c.get("session")!.account.role,
        },
      }
      : {}),
  };
}

/** The statuses a dashboard page is sent with. */
type PageStatus =
  | 200
  | 400
  | 401
  | 403
  | 404
  | 408
  | 409
  | 413
  | 415
  | 421
  | 429
  | 500
  | 503;

/** Anything JSX renders to. */
export interface Renderable {
  toString(): string | Promise<string>;
}

/**
 * Renders a page to an HTML answer.
 *
 * @example
 * ```ts
 * return await render(c, ProjectsPage({ ctx, data }));
 * ```
 */
export async function render(
  c: DashContext,
  page: Renderable,
  status: PageStatus = 200,
): Promise<Response> {
  return c.html(`<!DOCTYPE html>${await page.toString()}`, status);
}

/**
 * Renders `Page` with the request's page context and `data`.
 *
 * @example
 * ```ts
 * return await renderPage(c, deps, ErrorsPage, { project, groups, now });
 * ```
 */
export async function renderPage<D>(
  c: DashContext,
  deps: DashboardDeps,
  Page: (props: { ctx: PageContext; data: D }) => Renderable,
  data: D,
  status: PageStatus = 200,
): Promise<Response> {
  return await render(c, Page({ ctx: pageContext(c, deps), data }), status);
}

/**
 * A page of a title and a sentence, such as an error's; below the base's
 * `/api/`, whose callers are programs, `{"error": text}` instead.
 */
export async function message(
  c: DashContext,
  deps: DashboardDeps,
  title: string,
  text: string,
  status: PageStatus,
): Promise<Response> {
  if (isApiPath(c, deps)) return c.json({ error: text }, status);
  return await render(
    c,
    MessagePage({ ctx: pageContext(c, deps), title, text }),
    status,
  );
}

/** Whether the request is to the read or upload API below the base. */
export function isApiPath(c: DashContext, deps: DashboardDeps): boolean {
  return c.req.path.startsWith(`${deps.base}/api/`);
}

/** A text field of the request's form (`""` when absent). */
export async function formField(c: DashContext, name: string): Promise<string> {
  const body = await c.req.parseBody();
  const value = body[name];
  return typeof value === "string" ? value : "";
}

/**
 * The notice of a `done=` code after a redirect, from a fixed list, as
 * page data to spread: `{}` when there is none.
 *
 * @example
 * ```ts
 * showUsers(c, deps, { ...doneNotice(c, { added: "User added." }) });
 * ```
 */
export function doneNotice(
  c: DashContext,
  messages: Record<string, string>,
): { notice?: { kind: "ok"; text: string } } {
  const code = c.req.query("done");
  const text = code === undefined ? undefined : messages[code];
  return text === undefined ? {} : { notice: { kind: "ok", text } };
}

/**
 * Takes the signed-in session's flash of `kind` (for `projectId`, if
 * given): what the redirect before this page left to show once.
 */
export function sessionFlash<K extends Flash["kind"]>(
  c: DashContext,
  deps: DashboardDeps,
  kind: K,
  projectId?: string,
): Promise<Flash & { kind: K } | null> {
  return takeFlash(deps.kv, c.get("session")!.id, kind, projectId);
}

/** Keeps `flash` for the signed-in session's next page. */
export function keepFlash(
  c: DashContext,
  deps: DashboardDeps,
  flash: Flash,
): Promise<void> {
  return setFlash(deps.kv, c.get("session")!.id, flash);
}

/** What a project id may look like (db/projects.ts makes 22 characters). */
export const PROJECT_ID = /^[\w-]{1,128}$/;

/** The `:id` of a project route. */
export function idParam(c: DashContext): string {
  return c.req.param("id") ?? "";
}

/**
 * The project named by the path's `:id`, or the {@linkcode projectNotFound}
 * answer where there is none.
 */
export async function pathProject(
  c: DashContext,
  deps: DashboardDeps,
): Promise<Project | Response> {
  const project = await getProject(deps.kv, idParam(c));
  return project ?? await projectNotFound(c, deps);
}

/**
 * A handler that runs `handle` with the project named by the path's `:id`,
 * or answers with {@linkcode projectNotFound} where there is none.
 */
export function withProject(
  deps: DashboardDeps,
  handle: (c: DashContext, project: Project) => Promise<Response>,
): (c: DashContext) => Promise<Response> {
  return async (c) => {
    const project = await pathProject(c, deps);
    return project instanceof Response ? project : await handle(c, project);
  };
}

/**
 * The GET handler of a project's page that a form redirects to: `show` gets
 * the notice of its `done=` code (from `done`, as {@linkcode doneNotice}
 * gives it) and the session's flash of `kind` for the project, taken once.
 */
export function projectPageAfterForm<K extends Flash["kind"]>(
  deps: DashboardDeps,
  kind: K,
  done: Record<string, string>,
  show: (
    c: DashContext,
    project: Project,
    after: {
      notice: ReturnType<typeof doneNotice>;
      flash: Flash & { kind: K } | null;
    },
  ) => Promise<Response>,
): (c: DashContext) => Promise<Response> {
  return withProject(deps, async (c, project) => {
    const flash = await sessionFlash(c, deps, kind, project.id);
    return await show(c, project, { notice: doneNotice(c, done), flash });
  });
}

/** The 404 page of a project id that names no project. */
export async function projectNotFound(
  c: DashContext,
  deps: DashboardDeps,
): Promise<Response> {
  return await message(
    c,
    deps,
    "No such project",
    "No project has this id. It may have been deleted.",
    404,
  );
}

/**
 * Records in the audit log that the signed-in account made a change:
 * `projectId` is the project's log, `null` the service's.
 *
 * @example
 * ```ts
 * await audit(c, deps, { projectId, action: "alert.remove", detail: ruleId });
 * ```
 */
export async function audit(
  c: DashContext,
  deps: DashboardDeps,
  event: { projectId: string | null; action: string; detail: string },
): Promise<void> {
  await recordAudit(deps.kv, {
    ...event,
    actor: c.get("session")!.account.email,
    now: deps.now,
  });
}

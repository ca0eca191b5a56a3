/**
 * What the dashboard's routes share: their dependencies, the Hono
 * environment (the answer's nonce and the session), the page context built
 * from a request, rendering a page to an HTML answer, and reading forms.
 *
 * @module
 */
import type { ScanBudget } from "../../db/query/scan.ts";
import type { Context, Hono } from "hono";
import type { PageContext } from "../pages/layout.tsx";
import type { LoginLimiter } from "../security.ts";
import type { Session, SessionStore } from "../session.ts";

/** The Hono environment of the dashboard. */
export interface DashEnv {
  Bindings: { remoteAddr?: Deno.NetAddr };
  Variables: { nonce: string; session: Session | null };
}

/** The dashboard's app type. */
export type DashApp = Hono<DashEnv>;

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
  /** Server time the histogram of a word or field query may take. */
  histogramBudgetMs: number;
  /** Work one page of entries may do (db/query/query.ts). @default 2 s */
  queryBudget?: ScanBudget;
}

/** The page context of a request. */
export function pageContext(c: DashContext, deps: DashboardDeps): PageContext {
  return {
    base: deps.base,
    nonce: c.get("nonce"),
    csrf: c.get("session")?.csrf ?? null,
    assets: deps.assetUrls,
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
  status: 200 | 400 | 401 | 403 | 404 | 409 | 429 | 500 = 200,
): Promise<Response> {
  return c.html(`<!DOCTYPE html>${await page.toString()}`, status);
}

/** A text field of the request's form (`""` when absent). */
export async function formField(c: DashContext, name: string): Promise<string> {
  const body = await c.req.parseBody();
  const value = body[name];
  return typeof value === "string" ? value : "";
}

/** The notice of a `done=` code after a redirect, from a fixed list. */
export function doneNotice(
  c: DashContext,
  messages: Record<string, string>,
): { kind: "ok"; text: string } | undefined {
  const code = c.req.query("done");
  const text = code === undefined ? undefined : messages[code];
  return text === undefined ? undefined : { kind: "ok", text };
}

/** The `:id` of a project route. */
export function idParam(c: DashContext): string {
  return c.req.param("id") ?? "";
}

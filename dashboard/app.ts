/**
 * The dashboard as one Hono app: sign-in, projects, settings, the log
 * explorer, rejections and dead letters, with its assets. It opens nothing
 * and reads no environment — KV, password and clock are passed in — so it
 * runs standalone (`deno task dashboard`, dashboard/main.ts), mounted under
 * `/dashboard/` by the main server, and in tests through `app.request`.
 *
 * Every answer carries the security headers and a fresh script nonce; a
 * request naming a host the dashboard does not serve (DNS rebinding) is
 * refused with `421`, and a state-changing request from another origin with
 * `403`, before anything else; a form is read only up to the form limit
 * (`413` past it); every page but sign-in needs a session; every form post
 * needs the session's CSRF token. The bounds are listed in docs/limits.md.
 *
 * @module
 */
import { QuerySlots, type QuerySlotsOptions } from "./query_slots.ts";
import type { ScanBudget } from "../db/query/scan.ts";
import { Hono } from "hono";
import { isLockedError } from "../db/kv.ts";
import { localReads, type Reads } from "../db/query/reads.ts";
import { ThreadStalledError } from "../db/own_thread.ts";
import { errorLine, lockedAsLine } from "../db/locked.ts";
import { isDiskFullError } from "../db/disk.ts";
import { getCookie } from "hono/cookie";
import { accessRefusal, forbidden } from "./access.ts";
import { type Asset, assetResponse, assetUrls, loadAssets } from "./assets.ts";
import { HISTOGRAM_BUDGET_MS } from "./histogram.ts";
import { FACETS_BUDGET_MS } from "./source.ts";
import { findPage } from "./page_table.ts";
import { authRoutes, SESSION_COOKIE, signInFirst } from "./routes/auth.ts";
import {
  type DashApp,
  type DashboardDeps,
  type DashContext,
  type DashEnv,
  formField,
  isApiPath,
  message,
  PROJECT_ID,
  type TailTiming,
} from "./routes/common.ts";
import { errorsRoutes } from "./routes/errors.ts";
import { triageRoutes } from "./routes/errors_triage.ts";
import { viewsRoutes } from "./routes/views.ts";
import { explorerRoutes } from "./routes/explorer.ts";
import { projectsRoutes } from "./routes/projects.ts";
import { rejectionsRoutes } from "./routes/rejections.ts";
import { settingsRoutes } from "./routes/settings.ts";
import { deadLettersRoutes } from "./routes/dead_letters.ts";
import { alertsRoutes } from "./routes/alerts.ts";
import { apiRoutes } from "./routes/api.ts";
import {
  sourceMapRoutes,
  UPLOAD_PATH,
  UPLOAD_TIME_MS,
} from "./routes/sourcemaps.ts";
import { auditRoutes } from "./routes/audit.ts";
import { usageRoutes } from "./routes/usage.ts";
import { tokensRoutes } from "./routes/tokens.ts";
import { usersRoutes } from "./routes/users.ts";
import {
  BODY_TIME_MS,
  BodyIncompleteError,
  BodyTimeoutError,
  createNonce,
  crossOriginRefusal,
  hostName,
  hostRefusal,
  isHttps,
  LoginLimiter,
  type LoginLimiterOptions,
  readBodyWithin,
  securityHeaders,
} from "./security.ts";
import { SessionStore } from "./session.ts";

/** Options of {@linkcode createDashboard}. */
export interface DashboardOptions {
  kv: Deno.Kv;
  /** `ADMIN_PASSWORD`. */
  password: string;
  /** Clock. @default {Date.now} */
  now?: () => number;
  /** Path the app is mounted under, without a trailing slash. @default {""} */
  base?: string;
  /**
   * The service's endpoint as seen from a request to the dashboard, for the
   * snippets. @default the request's own origin + `/api/v1/logs`
   */
  endpoint?: (url: URL) => string;
  /** Trusted proxy hops for the sign-in limit's client address. @default {0} */
  trustProxy?: number;
  /**
   * Sign-in attempts per address, per network and, those that cost a
   * password hash, in all (shared out by turns).
   * @default 5 at once, then one per 12 s; 20, then one per 6 s; 300, then one per 200 ms
   */
  loginLimit?: Omit<LoginLimiterOptions, "now">;
  /** Session lifetime. @default 12 h */
  sessionTtlMs?: number;
  /** Live tail timing. @default 500 ms polls, 5 min streams, 15 s heartbeats */
  tail?: Partial<TailTiming>;
  /**
   * Server time an explorer page may have taken, from the start of its
   * listing, before the histogram of a word or field query leaves older bars
   * uncounted (dashboard/histogram.ts).
   * @default {HISTOGRAM_BUDGET_MS}
   */
  histogramBudgetMs?: number;
  /**
   * Server time the explorer's facets may read (db/query/facets.ts).
   * @default {FACETS_BUDGET_MS}
   */
  facetsBudgetMs?: number;
  /** Work one page of entries may do. @default 2 s of time */
  queryBudget?: ScanBudget;
  /** `ALERT_PRIVATE_TARGETS=allow`: alert webhooks on private addresses. @default {false} */
  allowPrivateTargets?: boolean;
  /**
   * Host names served besides loopback ones (`DASHBOARD_PUBLIC_HOST`); any
   * other `Host` is answered `421`.
   * @default {[]}
   */
  publicHosts?: string[];
  /** Largest form body accepted; past it, `413`. @default {FORM_LIMIT_BYTES} */
  formLimitBytes?: number;
  /** Time a form body may take to arrive whole; past it, `408`. @default {BODY_TIME_MS} */
  bodyTimeMs?: number;
  /** Time a source map's bytes may take to arrive whole; past it, `408`. @default {UPLOAD_TIME_MS} */
  uploadTimeMs?: number;
  /** Live tails open at once, per session, per account and in all. @default 4, 8 and 64 */
  tailLimits?: { perSession?: number; perAccount?: number; total?: number };
  /** Queries running at once, per account or token and in all. @default 4 and 16 */
  queryLimits?: QuerySlotsOptions;
  /**
   * What searches, aggregations, facets and histograms read with: a query
   * thread of the database file (db/query/thread.ts), so that they never hold
   * the thread that answers the endpoint.
   * @default the reads of `kv` in this thread
   */
  reads?: Reads;
}

/** Largest form body accepted by default: the forms are a few fields. */
export const FORM_LIMIT_BYTES = 64 * 1024;

/** What a request answered `503` for a locked database is told. */
const LOCKED_ANSWER =
  "The database was held by another process for too long. Try again in a moment.";

/** What a request answered `503` for a full disk is told. */
const DISK_FULL_ANSWER =
  "The database's disk is full: nothing can be saved until space is freed. Try again in a moment.";

/** What a request answered `503` for a stalled query thread is told. */
const STALLED_ANSWER =
  "The search's thread stopped answering and was restarted. Try again in a moment.";

/** What a request whose Host header makes no URL is answered (`400`). */
const BAD_HOST =
  "Cannot read the request's address: its Host header is no host";

/** What a request to no path of the API is answered (`404` JSON). */
const NO_API_PATH =
  "Cannot find this API path: see GET /api/v1/projects/:id/logs and POST /api/v1/projects/:id/sourcemaps";

/** The one form encoding the dashboard's forms send. */
const FORM_TYPE = /^application\/x-www-form-urlencoded\s*(;|$)/i;

/** Methods whose requests carry no form to read. */
const BODILESS = new Set(["GET", "HEAD"]);

/**
 * Builds the dashboard app.
 *
 * @example
 * ```ts
 * const app = createDashboard({ kv, password: "correct horse battery" });
 * Deno.serve((req, info) => app.fetch(req, { remoteAddr: info.remoteAddr }));
 * ```
 */
export function createDashboard(options: DashboardOptions): DashApp {
  const assets: Map<string, Asset> = loadAssets();
  const deps = dashboardDeps(options, assets);
  // Not strict about a trailing slash: under a base, the home page `/` is
  // `${base}/` (a bare `${base}` is redirected there first, below).
  const root = new Hono<DashEnv>({ strict: false });
  guardRequests(root, deps, {
    publicHosts: (options.publicHosts ?? [])
      .map(hostName).filter((h) => h !== null),
    formLimit: options.formLimitBytes ?? FORM_LIMIT_BYTES,
    bodyTimeMs: options.bodyTimeMs ?? BODY_TIME_MS,
  });
  // Every route below is written relative to the base.
  const app: DashApp = root.basePath(deps.base);
  app.get("/assets/:name", (c) => {
    const asset = assets.get(c.req.param("name"));
    if (!asset) return c.text("Not found", 404);
    return assetResponse(
      asset,
      c.req.header("accept-encoding") ?? null,
      c.req.query("v") === asset.hash,
    );
  });
  requireSession(app, deps);
  guardProjectIds(app, deps);
  boundQueries(app, deps);
  authRoutes(app, deps);
  projectsRoutes(app, deps);
  settingsRoutes(app, deps);
  explorerRoutes(app, deps, {
    ...(options.tailLimits ? { tailLimits: options.tailLimits } : {}),
  });
  rejectionsRoutes(app, deps);
  errorsRoutes(app, deps);
  triageRoutes(app, deps);
  viewsRoutes(app, deps);
  deadLettersRoutes(app, deps);
  alertsRoutes(app, deps, {
    allowPrivate: options.allowPrivateTargets ?? false,
  });
  usersRoutes(app, deps);
  tokensRoutes(app, deps);
  auditRoutes(app, deps);
  usageRoutes(app, deps);
  apiRoutes(app, deps);
  sourceMapRoutes(app, deps);

  app.notFound(async (c) =>
    await message(
      c,
      deps,
      "Not found",
      "There is no page at this address.",
      404,
    )
  );
  app.onError(async (error, c) => {
    if (isLockedError(error)) {
      return await busyAnswer(c, deps, lockedAsLine(error), LOCKED_ANSWER);
    }
    if (error instanceof ThreadStalledError) {
      return await busyAnswer(c, deps, error.message, STALLED_ANSWER);
    }
    if (isDiskFullError(error)) {
      return await busyAnswer(c, deps, errorLine(error), DISK_FULL_ANSWER);
    }
    console.error("Dashboard error:", error);
    return await message(
      c,
      deps,
      "Something went wrong",
      "The dashboard could not answer this request. Try again in a moment.",
      500,
    );
  });
  return app;
}

/**
 * A project id is short URL-safe text: anything else names no project, and
 * is never made into a database key (whose size is limited).
 */
function guardProjectIds(app: DashApp, deps: DashboardDeps): void {
  for (const path of ["/projects/:id", "/projects/:id/*"]) {
    app.use(path, async (c, next) => {
      if (PROJECT_ID.test(c.req.param("id") ?? "")) return await next();
      return await message(
        c,
        deps,
        "Not found",
        "There is no project at this address.",
        404,
      );
    });
  }
}

/**
 * Another process held the database past the retries (db/locked.ts), or the
 * query thread stopped answering (db/query/thread.ts): one line, and an
 * answer that says to retry, never a 500.
 */
async function busyAnswer(
  c: DashContext,
  deps: DashboardDeps,
  line: unknown,
  answer: string,
): Promise<Response> {
  console.error(
    `Dashboard: cannot answer ${c.req.method} ${c.req.path}:`,
    line,
  );
  c.header("Retry-After", "5");
  return await message(c, deps, "Busy, try again", answer, 503);
}

/** The dependencies every route is given, from the options. */
function dashboardDeps(
  options: DashboardOptions,
  assets: Map<string, Asset>,
): DashboardDeps {
  const base = (options.base ?? "").replace(/\/+$/, "");
  const now = options.now ?? Date.now;
  return {
    kv: options.kv,
    reads: options.reads ?? localReads(options.kv),
    base,
    now,
    querySlots: new QuerySlots(options.queryLimits),
    sessions: new SessionStore({
      kv: options.kv,
      password: options.password,
      now,
      ...(options.sessionTtlMs ? { ttlMs: options.sessionTtlMs } : {}),
    }),
    limiter: new LoginLimiter({ ...options.loginLimit, now }),
    trustProxy: options.trustProxy ?? 0,
    endpoint: options.endpoint ??
      ((url) => `${url.origin}/api/v1/logs`),
    assetUrls: assetUrls(base, assets),
    tail: {
      intervalMs: 500,
      maxMs: 300_000,
      heartbeatMs: 15_000,
      ...options.tail,
    },
    histogramBudgetMs: options.histogramBudgetMs ?? HISTOGRAM_BUDGET_MS,
    facetsBudgetMs: options.facetsBudgetMs ?? FACETS_BUDGET_MS,
    uploadTimeMs: options.uploadTimeMs ?? UPLOAD_TIME_MS,
    ...(options.queryBudget ? { queryBudget: options.queryBudget } : {}),
  };
}

/**
 * What every request meets first: the Host and cross-origin checks, the
 * form limit, and the security headers on every answer.
 */
function guardRequests(
  app: DashApp,
  deps: DashboardDeps,
  options: { publicHosts: string[]; formLimit: number; bodyTimeMs: number },
): void {
  const { base } = deps;
  const { publicHosts, formLimit, bodyTimeMs } = options;
  app.use("*", async (c, next) => {
    // A Host header that makes no URL (`localhost:99999`): nothing below
    // could read the request's address.
    if (!URL.canParse(c.req.url)) {
      return c.json({ error: BAD_HOST }, 400);
    }
    const nonce = createNonce();
    c.set("nonce", nonce);
    c.set("session", null);
    const misdirected = hostRefusal(c.req.raw, publicHosts);
    const refusal = misdirected ?? crossOriginRefusal(c.req.raw);
    if (misdirected !== null) {
      c.res = await message(c, deps, "Misdirected request", misdirected, 421);
    } else if (base !== "" && new URL(c.req.url).pathname === base) {
      c.res = c.redirect(`${base}/`, 301);
    } else if (refusal !== null) {
      c.res = await forbidden(c, deps, refusal);
    } else if (
      BODILESS.has(c.req.method) ||
      (c.req.path.startsWith(base) &&
        UPLOAD_PATH.test(c.req.path.slice(base.length)))
    ) {
      await next();
    } else {
      const refused = await takeForm(c, deps, formLimit, bodyTimeMs);
      if (refused !== null) c.res = refused;
      else await next();
    }
    const headers = securityHeaders(nonce, isHttps(c.req.raw));
    for (const [name, value] of Object.entries(headers)) {
      c.res.headers.set(name, value);
    }
    if (!c.req.path.startsWith(`${base}/assets/`)) {
      c.res.headers.set("Cache-Control", "no-store");
    }
  });
}

/** The pages that query a project's entries (the read API takes its own). */
const QUERY_PAGE =
  /^\/projects\/[^/]+(?:\/(?:errors(?:\/[^/]+)?|entries(?:\/[^/]+)?|rows\.csv|releases))?\/?$/;

/**
 * A query page of a signed-in account runs in one of its account's query
 * slots ({@linkcode QuerySlots}): past them, `429` saying so. The slot is
 * given back when the page ends, unless the page took it over to hold it
 * while its body is sent (`keepQuerySlot`).
 */
function boundQueries(app: DashApp, deps: DashboardDeps): void {
  app.use("*", async (c, next) => {
    const session = c.get("session");
    if (
      session === null || (c.req.method !== "GET" && c.req.method !== "HEAD") ||
      !QUERY_PAGE.test(c.req.path.slice(deps.base.length))
    ) {
      return await next();
    }
    const slot = deps.querySlots.take(`account:${session.account.email}`);
    if (typeof slot === "string") {
      c.header("Retry-After", "1");
      return await message(c, deps, "Too many queries", slot, 429);
    }
    let kept = false;
    c.set("keepQuerySlot", () => {
      kept = true;
      return slot;
    });
    try {
      await next();
    } finally {
      if (!kept) slot();
    }
  });
}

/**
 * Past the public pages of the page table, a signed-in session, a form's
 * token and the account's access to what the path names; a path the table
 * does not name answers `404`.
 */
function requireSession(app: DashApp, deps: DashboardDeps): void {
  const { base } = deps;
  app.use("*", async (c, next) => {
    const session = await deps.sessions.verify(getCookie(c, SESSION_COOKIE));
    c.set("session", session);
    // Hono's path has no trailing slash (not strict): `${base}/` is `/`.
    const found = c.req.path.startsWith(base)
      ? findPage(c.req.method, c.req.path.slice(base.length) || "/")
      : null;
    if (found?.page.need === "public") return await next();
    if (found === null && isApiPath(c, deps)) {
      // A program is never sent to sign in: the API's paths are all public
      // (a token is checked by their routes).
      return await message(c, deps, "Not found", NO_API_PATH, 404);
    }
    if (session === null) return await signInFirst(c, deps);
    if (c.req.method !== "GET" && c.req.method !== "HEAD") {
      if (!deps.sessions.checkCsrf(session, await formField(c, "_csrf"))) {
        return await forbidden(
          c,
          deps,
          "Cannot accept this form: its token is missing or expired. Go back, reload the page and try again.",
        );
      }
    }
    const refusal = await accessRefusal(c, deps, session, found);
    if (refusal !== null) return refusal;
    await next();
  });
}

/**
 * Reads the request's form within `limit` bytes and `timeMs` and puts it
 * back as the request every route reads; `null` then, else the answer: `413`
 * when it is larger (never read whole), `408` when it is not whole in time,
 * `400` when its client cut it short, `415` when it is not URL-encoded
 * (none of them logged).
 */
async function takeForm(
  c: DashContext,
  deps: DashboardDeps,
  limit: number,
  timeMs: number,
): Promise<Response | null> {
  const raw = c.req.raw;
  const type = raw.headers.get("content-type");
  if (type !== null && !FORM_TYPE.test(type)) {
    // Multipart and the rest: no form here is sent so, and a malformed one
    // would throw in the form's parser.
    return await message(
      c,
      deps,
      "Form not readable",
      `Cannot read a form sent as "${
        type.slice(0, 100)
      }": expected application/x-www-form-urlencoded`,
      415,
    );
  }
  let bytes;
  try {
    bytes = await readBodyWithin(raw, limit, timeMs);
  } catch (error) {
    if (error instanceof BodyTimeoutError) {
      return await message(c, deps, "Form too slow", error.message, 408);
    }
    if (error instanceof BodyIncompleteError) {
      return await message(c, deps, "Form cut short", error.message, 400);
    }
    throw error;
  }
  if (bytes === null) {
    return await message(
      c,
      deps,
      "Form too large",
      `Cannot accept a form of more than ${limit} bytes`,
      413,
    );
  }
  c.req.raw = new Request(raw.url, {
    method: raw.method,
    headers: raw.headers,
    body: bytes,
  });
  return null;
}

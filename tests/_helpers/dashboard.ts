/**
 * Fixtures of the dashboard tests: a dashboard on the harness's in-memory
 * KV and fake clock, signing in as a browser would (form token cookie,
 * then password), requests that carry the session and the CSRF token, and
 * entries stored through the real pipeline.
 *
 * @module
 */
import assert from "node:assert/strict";
import { fixtureTest, withNewProject } from "./fixture.ts";
import type { LogRecord } from "../../domain/entry.ts";
import type { Project } from "../../db/projects.ts";
import { createDashboard, type DashboardOptions } from "../../dashboard/app.ts";
import type { DashApp } from "../../dashboard/routes/common.ts";
import {
  type Harness,
  type HarnessOptions,
  randomEntry,
  withHarness,
} from "./harness.ts";

/** The administrator password of the tests. */
export const PASSWORD = "correct horse battery";

/** A signed-in browser: its session cookie and the forms' token. */
export interface Browser {
  cookie: string;
  csrf: string;
  /** GETs a path of the dashboard it signed in to, as {@linkcode get}. */
  get(path: string, headers?: Record<string, string>): Promise<Response>;
  /** POSTs a form to the dashboard it signed in to, as {@linkcode post}. */
  post(
    path: string,
    form: Form,
    headers?: Record<string, string>,
  ): Promise<Response>;
}

/** The session cookie and forms' token of a browser. */
export type Session = Pick<Browser, "cookie" | "csrf">;

/**
 * A browser signed in to `app` with `session`; its methods send what the
 * object holds when called, so a copy with another `csrf` sends that one.
 */
export function browserOn(app: DashApp, session: Session): Browser {
  return {
    ...session,
    get(path, headers = {}) {
      return get(app, this, path, headers);
    },
    post(path, form, headers = {}) {
      return post(app, this, path, form, headers);
    },
  };
}

/** The service harness plus a dashboard on the same KV and clock. */
export interface DashHarness extends Harness {
  dash: DashApp;
  /** Base path of the dashboard (`""` unless mounted). */
  base: string;
}

/** Options of {@linkcode withDashboard}. */
export interface DashHarnessOptions extends HarnessOptions {
  dashboard?: Partial<DashboardOptions>;
}

/** Runs `fn` with a harness and a dashboard, then closes both. */
export async function withDashboard(
  fn: (h: DashHarness) => Promise<void>,
  options: DashHarnessOptions = {},
): Promise<void> {
  await withHarness(async (h) => {
    const dash = createDashboard({
      kv: h.kv,
      password: PASSWORD,
      now: h.clock.now,
      tail: { intervalMs: 5, maxMs: 60_000, heartbeatMs: 60_000 },
      ...options.dashboard,
    });
    await fn(Object.assign(h, { dash, base: options.dashboard?.base ?? "" }));
  }, options);
}

/** Runs `fn` with a dashboard harness and a browser signed in to it. */
export async function withSignedIn(
  fn: (h: DashHarness, browser: Browser) => Promise<void>,
  options: DashHarnessOptions = {},
): Promise<void> {
  await withDashboard(async (h) => fn(h, await signIn(h.dash)), options);
}

/** The peer address of test requests. */
export const PEER = {
  remoteAddr: {
    transport: "tcp" as const,
    hostname: "198.51.100.9",
    port: 50000,
  },
};

/**
 * A request to the dashboard's API from {@linkcode PEER}, carrying `token`
 * as its bearer token when one is given.
 *
 * @example
 * ```ts
 * const res = await apiRequest(h, `/api/v1/projects/${id}/logs`, token);
 * ```
 */
export async function apiRequest(
  h: DashHarness,
  path: string,
  token?: string,
  init: RequestInit = {},
): Promise<Response> {
  return await h.dash.request(path, {
    ...init,
    headers: token === undefined ? {} : { authorization: `Bearer ${token}` },
  }, PEER);
}

/** Cookies set by an answer, as `name=value` pairs. */
export function setCookies(res: Response): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of res.headers.getSetCookie()) {
    const pair = line.split(";")[0]!;
    const eq = pair.indexOf("=");
    out[pair.slice(0, eq)] = pair.slice(eq + 1);
  }
  return out;
}

/** The first `_csrf` value of a page. */
export function csrfOf(html: string): string {
  const match = /name="_csrf" value="([^"]+)"/.exec(html);
  if (!match) throw new Error("Expected a form with a _csrf field");
  return match[1]!;
}

/**
 * Opens the sign-in form under `base` and posts it back the way a browser
 * does (the form's token cookie, its `_csrf` field), with `fields` after
 * the token and `headers` on both requests; returns the answer.
 */
export async function submitLoginForm(
  app: DashApp,
  fields: Record<string, string>,
  options: {
    base?: string;
    peer?: typeof PEER;
    headers?: Record<string, string>;
  } = {},
): Promise<Response> {
  const { base = "", peer = PEER, headers = {} } = options;
  const form = await app.request(`${base}/login`, { headers }, peer);
  const html = await form.text();
  const token = setCookies(form)["dash_login"]!;
  return await app.request(`${base}/login`, {
    method: "POST",
    headers: {
      cookie: `dash_login=${token}`,
      origin: "http://localhost",
      "sec-fetch-site": "same-origin",
      ...headers,
    },
    body: new URLSearchParams({ _csrf: csrfOf(html), ...fields }),
  }, peer);
}

/** Submits the sign-in form with `password`; returns the answer. */
export function submitLogin(
  app: DashApp,
  password: string,
  options: { base?: string; peer?: typeof PEER; next?: string } = {},
): Promise<Response> {
  const base = options.base ?? "";
  return submitLoginForm(
    app,
    { password, next: options.next ?? `${base}/` },
    { base, ...(options.peer === undefined ? {} : { peer: options.peer }) },
  );
}

/** Signs in and returns the session cookie and the forms' token. */
export async function signIn(app: DashApp, base = ""): Promise<Browser> {
  const res = await submitLogin(app, PASSWORD, { base });
  if (res.status !== 303) {
    throw new Error(`Expected 303 after sign-in, got ${res.status}`);
  }
  const cookie = `dash_session=${setCookies(res)["dash_session"]}`;
  const home = await app.request(`${base}/`, { headers: { cookie } }, PEER);
  return browserOn(app, { cookie, csrf: csrfOf(await home.text()) });
}

/** GETs a dashboard path as the signed-in browser. */
export async function get(
  app: DashApp,
  browser: Session,
  path: string,
  headers: Record<string, string> = {},
): Promise<Response> {
  return await app.request(path, {
    headers: { cookie: browser.cookie, ...headers },
  }, PEER);
}

/** A form's fields; a list is sent as the field once per value, in order. */
export type Form = Record<string, string | string[]>;

/** POSTs a form (with the CSRF token) as the signed-in browser, same origin. */
export async function post(
  app: DashApp,
  browser: Session,
  path: string,
  form: Form,
  headers: Record<string, string> = {},
): Promise<Response> {
  return await app.request(path, {
    method: "POST",
    headers: {
      cookie: browser.cookie,
      origin: "http://localhost",
      "sec-fetch-site": "same-origin",
      ...headers,
    },
    body: formBody({ _csrf: browser.csrf, ...form }),
  }, PEER);
}

function formBody(form: Form): URLSearchParams {
  const body = new URLSearchParams();
  for (const [name, values] of Object.entries(form)) {
    for (const value of [values].flat()) body.append(name, value);
  }
  return body;
}

/** Text of an HTML page with tags removed and entities decoded, for matching. */
export function textOf(html: string): string {
  return html.replace(/<[^>]+>/g, " ").replace(/&lt;/g, "<").replace(
    /&gt;/g,
    ">",
  )
    .replace(/&quot;/g, '"').replace(/&#39;/g, "'").replace(/&amp;/g, "&")
    .replace(/\s+/g, " ");
}

/**
 * Stores one entry per item of `bodies` (members over a random entry),
 * `stepMs` apart, sent from an allowed origin; returns the project's
 * entries, oldest first.
 */
export async function store(
  h: Harness,
  projectId: string,
  bodies: Record<string, unknown>[],
  stepMs = 1000,
): Promise<LogRecord[]> {
  for (const body of bodies) {
    await h.post(randomEntry({ projectId, ...body }), {
      Origin: "https://app.example.com",
    });
    h.clock.advance(stepMs);
  }
  await h.process();
  return await h.logs(projectId);
}

/**
 * A new project of the harness (allowing `allow`, or the harness's default
 * origins) and the dashboard path of its `page`: `settings`, `alerts`.
 */
export async function projectPage(
  h: Harness,
  page: string,
  allow?: string[],
): Promise<{ project: Project; path: string }> {
  const project = await h.project(allow);
  return { project, path: `/projects/${project.id}/${page}` };
}

/** Ids of the rows of a page or fragment, top to bottom. */
export function rowIds(html: string): string[] {
  return [
    ...html.matchAll(/<details class="entry[^"]*" id="e-([0-9a-f]{28})"/g),
  ]
    .map((m) => m[1]!);
}

/** Ids of the expanded rows. */
export function openIds(html: string): string[] {
  return [
    ...html.matchAll(
      /<details class="entry[^"]*" id="e-([0-9a-f]{28})"[^>]* open/g,
    ),
  ]
    .map((m) => m[1]!);
}

/** A test run inside {@linkcode withDashboard}. */
/**
 * Creates a token on a project's settings page as `admin`: asserts the page
 * answers 200 and shows the new token; returns the token and the page.
 *
 * @example
 * ```ts
 * const { token } = await createTokenOnPage(admin, project.id, { name: "ci" });
 * ```
 */
export async function createTokenOnPage(
  admin: Browser,
  projectId: string,
  form: Record<string, string>,
): Promise<{ token: string; html: string }> {
  const created = await admin.post(
    `/projects/${projectId}/settings/tokens`,
    form,
  );
  assert.equal(created.status, 200);
  const html = await created.text();
  const token = /id="token-value"[^>]*>(lgr_[\w-]{43})</.exec(html)?.[1];
  assert.ok(token, "the new token is shown");
  return { token, html };
}

export const dashboardTest = fixtureTest(withDashboard);
/** A test run inside {@linkcode withDashboard}, given a new project: `async (h, project) => …`. */
export const dashboardProjectTest = fixtureTest(withNewProject(withDashboard));
/** A test run inside {@linkcode withSignedIn}. */
export const signedInTest = fixtureTest(withSignedIn);
/** A test run inside {@linkcode withSignedIn}, given a new project: `async (h, browser, project) => …`. */
export const signedInProjectTest = fixtureTest(withNewProject(withSignedIn));

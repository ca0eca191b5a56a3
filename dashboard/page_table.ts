/**
 * The dashboard's page table: every route the dashboard answers, with who
 * may open it and, for the pages of the navigation, their label
 * (docs/dashboard.md#access). It is the one source of both the access
 * check (dashboard/access.ts) and the navigation (pages/layout.tsx), and
 * it denies by default: a request that matches no row answers `404` to a
 * signed-in account (anyone else is sent to sign in first), whatever route a
 * module registered, and a link to a page the account may not open is not
 * shown.
 *
 * Paths are relative to the dashboard's base and written as Hono writes
 * them: `:name` stands for one segment.
 *
 * @module
 */
import { type Account, canConfigure, canRead } from "../db/users.ts";

/**
 * Who may make a request:
 * - `public`: anyone, signed in or not (the read API checks its own
 *   credentials);
 * - `signed-in`: any account;
 * - `admin`: the `admin` role;
 * - `read`: an account that may read the project `:id`;
 * - `configure`: one that may change it (`member` of it, or `admin`);
 * - `delete`: only the `admin` role, on a project it may read.
 */
export type Need =
  | "public"
  | "signed-in"
  | "admin"
  | "read"
  | "configure"
  | "delete";

/** The project tabs, as the layout marks the current one. */
export type ProjectTab =
  | "explorer"
  | "errors"
  | "releases"
  | "rejections"
  | "settings"
  | "alerts"
  | "audit";

/** One row of the page table. */
export interface Page {
  method: "GET" | "POST";
  /** Relative to the base; `:id` is always a project's id. */
  path: string;
  need: Need;
  /** Label of a page of the top navigation. */
  nav?: string;
  /** The project tab a page is, with its label. */
  tab?: { name: ProjectTab; label: string };
}

function get(path: string, need: Need, nav?: string): Page {
  return { method: "GET", path, need, ...(nav ? { nav } : {}) };
}

function post(path: string, need: Need): Page {
  return { method: "POST", path, need };
}

/** A project tab, at `/projects/:id/<name>` unless `path` says otherwise. */
function tab(
  name: ProjectTab,
  label: string,
  need: Need,
  path = `/projects/:id/${name}`,
): Page {
  return { method: "GET", path, need, tab: { name, label } };
}

/** Every route of the dashboard; tabs and navigation in their order. */
export const PAGES: readonly Page[] = [
  // Signing in, and what needs no session.
  get("/login", "public"),
  post("/login", "public"),
  get("/assets/:name", "public"),
  get("/api/v1/projects/:id/logs", "public"),
  post("/api/v1/projects/:id/sourcemaps", "public"),
  post("/logout", "signed-in"),
  // The top navigation.
  get("/", "signed-in", "Projects"),
  get("/usage", "signed-in", "Usage"),
  get("/dead-letters", "admin", "Dead letters"),
  get("/users", "admin", "Users"),
  // The project tabs.
  tab("explorer", "Explorer", "read", "/projects/:id"),
  tab("errors", "Errors", "read"),
  tab("releases", "Releases", "read"),
  tab("rejections", "Rejections", "read"),
  // Settings hold the secret, alert rules their webhook URLs (often
  // credentials themselves): both are for those who configure.
  tab("settings", "Settings", "configure"),
  tab("alerts", "Alerts", "configure"),
  tab("audit", "Audit", "read"),
  // A project's other pages and streams.
  ...[
    "/projects/:id/errors/:fingerprint",
    "/projects/:id/entries",
    "/projects/:id/entries/:entryId",
    "/projects/:id/tail",
    "/projects/:id/rows.csv",
  ].map((path) => get(path, "read")),
  // Every change to a project is for those who configure it.
  // Triage too: a viewer reads errors, a member works on them.
  ...[
    "/projects/:id/errors/triage",
    "/projects/:id/views",
    "/projects/:id/views/delete",
    "/projects/:id/rejections/replay",
    "/projects/:id/settings/allow",
    "/projects/:id/settings/disallow",
    "/projects/:id/settings/levels/add",
    "/projects/:id/settings/levels/remove",
    "/projects/:id/settings/retention",
    "/projects/:id/settings/rotate",
    "/projects/:id/settings/tokens",
    "/projects/:id/settings/tokens/revoke",
    "/projects/:id/alerts/add",
    "/projects/:id/alerts/remove",
  ].map((path) => post(path, "configure")),
  // Deleting a project is the administrators' alone.
  post("/projects/:id/settings/delete", "delete"),
  // So are a project's quota and spike protection: they decide what it costs.
  post("/projects/:id/settings/quota", "delete"),
  post("/projects/:id/settings/spike", "delete"),
  // And what is scrubbed and how long what is stored is kept: they decide
  // what personal data the service holds.
  ...[
    "/projects/:id/settings/scrub/add",
    "/projects/:id/settings/scrub/remove",
    "/projects/:id/settings/scrub/dry-run",
    "/projects/:id/settings/retention-rules/add",
    "/projects/:id/settings/retention-rules/remove",
  ].map((path) => post(path, "delete")),
  // The service-wide changes.
  ...[
    "/projects",
    "/dead-letters/replay",
    "/dead-letters/delete",
    "/users",
    "/users/update",
    "/users/remove",
  ].map((path) => post(path, "admin")),
];

/** A row of the table that a request matched, with the project it names. */
export interface PageMatch {
  page: Page;
  /** The `:id` of the path, decoded; `null` when it has none. */
  projectId: string | null;
}

/** The rows compiled to patterns, once. */
const COMPILED = PAGES.map((page) => {
  const names: string[] = [];
  const source = page.path.split("/").map((part) => {
    if (!part.startsWith(":")) {
      return part.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
    }
    names.push(part.slice(1));
    return "([^/]+)";
  }).join("/");
  return { page, names, pattern: new RegExp(`^${source}$`) };
});

/**
 * The row of the table a request of `method` to `path` (relative to the
 * base, without query) matches, or `null`: a `HEAD` is its `GET`. A
 * project id that cannot be decoded matches nothing.
 *
 * @example
 * ```ts
 * findPage("POST", "/projects/abc/settings/allow");
 * // { page: { …, need: "configure" }, projectId: "abc" }
 * ```
 */
export function findPage(method: string, path: string): PageMatch | null {
  const wanted = method === "HEAD" ? "GET" : method;
  for (const { page, names, pattern } of COMPILED) {
    if (page.method !== wanted) continue;
    const match = pattern.exec(path);
    if (!match) continue;
    const at = names.indexOf("id");
    if (at < 0) return { page, projectId: null };
    try {
      return { page, projectId: decodeURIComponent(match[at + 1]!) };
    } catch {
      return null;
    }
  }
  return null;
}

/** Whether `account` (or nobody, when `null`) meets `need` on `projectId`. */
export function meets(
  account: Account | null,
  need: Need,
  projectId: string | null,
): boolean {
  if (need === "public") return true;
  if (account === null) return false;
  if (need === "signed-in") return true;
  if (need === "admin") return account.role === "admin";
  if (projectId === null || !canRead(account, projectId)) return false;
  if (need === "read") return true;
  if (need === "configure") return canConfigure(account, projectId);
  return account.role === "admin";
}

/**
 * Whether `account` may open the page a link leads to: `href` is a path
 * relative to the base, with or without query and fragment. A path in no
 * row of the table is opened by nobody.
 *
 * @example
 * ```ts
 * mayOpen(viewer, "/projects/abc/settings#tokens"); // false
 * ```
 */
export function mayOpen(account: Account | null, href: string): boolean {
  const path = href.replace(/[?#].*$/s, "");
  const found = findPage("GET", path);
  return found !== null && meets(account, found.page.need, found.projectId);
}

/**
 * Whether `account` may send a form to `action`, a path relative to the
 * base: a form it may not send is not shown.
 *
 * @example
 * ```ts
 * mayPost(viewer, "/projects/abc/views"); // false
 * ```
 */
export function mayPost(account: Account | null, action: string): boolean {
  const found = findPage("POST", action.replace(/[?#].*$/s, ""));
  return found !== null && meets(account, found.page.need, found.projectId);
}

/**
 * The path of a table row for project `projectId`.
 *
 * @example
 * ```ts
 * pathOf("/projects/:id/errors", "abc"); // "/projects/abc/errors"
 * ```
 */
export function pathOf(pattern: string, projectId: string): string {
  return pattern.replace(":id", encodeURIComponent(projectId));
}

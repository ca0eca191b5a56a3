/**
 * The dashboard's page table: every route the dashboard answers, with who
 * may open it and, for the pages of the navigation, their label
 * (docs/dashboard.md#access). It is the one source of both the access
 * check (dashboard/access.ts) and the navigation (pages/layout.tsx), and
 * it denies by default: a request that matches no row answers `404` to
 * everyone, whatever route a module registered, and a link to a page the
 * account may not open is not shown.
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

/** Every route of the dashboard; tabs and navigation in their order. */
export const PAGES: readonly Page[] = [
  // Signing in, and what needs no session.
  { method: "GET", path: "/login", need: "public" },
  { method: "POST", path: "/login", need: "public" },
  { method: "GET", path: "/assets/:name", need: "public" },
  { method: "GET", path: "/api/v1/projects/:id/logs", need: "public" },
  { method: "POST", path: "/logout", need: "signed-in" },
  // The top navigation.
  { method: "GET", path: "/", need: "signed-in", nav: "Projects" },
  { method: "GET", path: "/dead-letters", need: "admin", nav: "Dead letters" },
  { method: "GET", path: "/users", need: "admin", nav: "Users" },
  // The project tabs.
  {
    method: "GET",
    path: "/projects/:id",
    need: "read",
    tab: { name: "explorer", label: "Explorer" },
  },
  {
    method: "GET",
    path: "/projects/:id/errors",
    need: "read",
    tab: { name: "errors", label: "Errors" },
  },
  {
    method: "GET",
    path: "/projects/:id/releases",
    need: "read",
    tab: { name: "releases", label: "Releases" },
  },
  {
    method: "GET",
    path: "/projects/:id/rejections",
    need: "read",
    tab: { name: "rejections", label: "Rejections" },
  },
  // Settings hold the secret, alert rules their webhook URLs (often
  // credentials themselves): both are for those who configure.
  {
    method: "GET",
    path: "/projects/:id/settings",
    need: "configure",
    tab: { name: "settings", label: "Settings" },
  },
  {
    method: "GET",
    path: "/projects/:id/alerts",
    need: "configure",
    tab: { name: "alerts", label: "Alerts" },
  },
  {
    method: "GET",
    path: "/projects/:id/audit",
    need: "read",
    tab: { name: "audit", label: "Audit" },
  },
  // A project's other pages and streams.
  { method: "GET", path: "/projects/:id/errors/:fingerprint", need: "read" },
  { method: "GET", path: "/projects/:id/entries", need: "read" },
  { method: "GET", path: "/projects/:id/entries/:entryId", need: "read" },
  { method: "GET", path: "/projects/:id/tail", need: "read" },
  { method: "GET", path: "/projects/:id/rows.csv", need: "read" },
  // Every change to a project is for those who configure it.
  // Triage too: a viewer reads errors, a member works on them.
  { method: "POST", path: "/projects/:id/errors/triage", need: "configure" },
  { method: "POST", path: "/projects/:id/views", need: "configure" },
  { method: "POST", path: "/projects/:id/views/delete", need: "configure" },
  {
    method: "POST",
    path: "/projects/:id/rejections/replay",
    need: "configure",
  },
  { method: "POST", path: "/projects/:id/settings/allow", need: "configure" },
  {
    method: "POST",
    path: "/projects/:id/settings/disallow",
    need: "configure",
  },
  {
    method: "POST",
    path: "/projects/:id/settings/levels/add",
    need: "configure",
  },
  {
    method: "POST",
    path: "/projects/:id/settings/levels/remove",
    need: "configure",
  },
  {
    method: "POST",
    path: "/projects/:id/settings/retention",
    need: "configure",
  },
  { method: "POST", path: "/projects/:id/settings/rotate", need: "configure" },
  { method: "POST", path: "/projects/:id/settings/tokens", need: "configure" },
  {
    method: "POST",
    path: "/projects/:id/settings/tokens/revoke",
    need: "configure",
  },
  { method: "POST", path: "/projects/:id/alerts/add", need: "configure" },
  { method: "POST", path: "/projects/:id/alerts/remove", need: "configure" },
  // Deleting a project is the administrators' alone.
  { method: "POST", path: "/projects/:id/settings/delete", need: "delete" },
  // The service-wide changes.
  { method: "POST", path: "/projects", need: "admin" },
  { method: "POST", path: "/dead-letters/replay", need: "admin" },
  { method: "POST", path: "/users", need: "admin" },
  { method: "POST", path: "/users/update", need: "admin" },
  { method: "POST", path: "/users/remove", need: "admin" },
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

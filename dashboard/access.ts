/**
 * Who may do what in the dashboard, checked in one place before any route
 * runs (docs/accounts.md#roles). Every path is classified by
 * {@linkcode requiredAccess}: a project's pages need read access to it (a
 * project the account does not have answers `404`, as if it did not
 * exist), its settings, its alert rules and every change to it need
 * configure access (a
 * viewer gets `403`), and the service-wide pages (accounts, dead letters,
 * creating a project) need the `admin` role (`403`). A route added later
 * under `/projects/:id/` is covered by the same rule.
 *
 * @module
 */
import { canConfigure, canRead } from "../db/users.ts";
import {
  type DashboardDeps,
  type DashContext,
  message,
  projectNotFound,
} from "./routes/common.ts";
import type { Session } from "./session.ts";

/** What a request needs. */
export type Access =
  | { kind: "any" }
  | { kind: "admin" }
  | {
    kind: "project";
    projectId: string;
    need: "read" | "configure" | "admin";
  };

const PROJECT_PATH = /^\/projects\/([^/]+)(\/.*)?$/;
/** A project's pages that reading it does not open. */
const CONFIGURE_PAGES = ["/settings", "/alerts"];

/**
 * What a request of `method` to `path` (relative to the dashboard's base)
 * needs.
 *
 * @example
 * ```ts
 * requiredAccess("POST", "/projects/abc/settings/allow");
 * // { kind: "project", projectId: "abc", need: "configure" }
 * ```
 */
export function requiredAccess(method: string, path: string): Access {
  const read = method === "GET" || method === "HEAD";
  if (path === "/projects") return read ? { kind: "any" } : { kind: "admin" };
  const project = PROJECT_PATH.exec(path);
  if (project) {
    const rest = project[2] ?? "";
    // Settings hold the secret, alert rules their webhook URLs (often
    // credentials themselves): both are for those who configure.
    const configure = !read ||
      CONFIGURE_PAGES.some((page) =>
        rest === page || rest.startsWith(`${page}/`)
      );
    return {
      kind: "project",
      projectId: decodeURIComponent(project[1]!),
      // Deleting a project is the administrators' alone.
      need: rest === "/settings/delete" && !read
        ? "admin"
        : configure
        ? "configure"
        : "read",
    };
  }
  if (
    path === "/users" || path.startsWith("/users/") ||
    path === "/dead-letters" || path.startsWith("/dead-letters/")
  ) {
    return { kind: "admin" };
  }
  return { kind: "any" };
}

/**
 * Whether `session` may still read `projectId`: the live tail asks this on
 * every poll, so that signing out, expiry, removing the account or taking
 * the project away ends the stream.
 */
export function mayRead(session: Session | null, projectId: string): boolean {
  return session !== null && canRead(session.account, projectId);
}

/**
 * The refusal of a request its session may not make, or `null` when it may
 * proceed. `path` is relative to the dashboard's base.
 */
export async function accessRefusal(
  c: DashContext,
  deps: DashboardDeps,
  session: Session,
  path: string,
): Promise<Response | null> {
  let access: Access;
  try {
    access = requiredAccess(c.req.method, path);
  } catch {
    return await projectNotFound(c, deps);
  }
  const account = session.account;
  if (access.kind === "any") return null;
  if (access.kind === "admin") {
    return account.role === "admin" ? null : await forbidden(
      c,
      deps,
      `Your role (${account.role}) cannot open this page: it is for administrators.`,
    );
  }
  if (!canRead(account, access.projectId)) {
    return await projectNotFound(c, deps);
  }
  if (access.need === "admin" && account.role !== "admin") {
    return await forbidden(
      c,
      deps,
      `Your role (${account.role}) cannot delete a project: ask an administrator.`,
    );
  }
  if (access.need === "configure" && !canConfigure(account, access.projectId)) {
    return await forbidden(
      c,
      deps,
      `Your role (${account.role}) can read this project but not change its settings.`,
    );
  }
  return null;
}

/** The page of a request its account may not make, with `403`. */
export async function forbidden(
  c: DashContext,
  deps: DashboardDeps,
  text: string,
): Promise<Response> {
  return await message(c, deps, "Forbidden", text, 403);
}

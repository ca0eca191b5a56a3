/**
 * Who may do what in the dashboard, checked in one place before any route
 * runs (docs/accounts.md#accounts-and-roles), from the page table
 * (dashboard/page_table.ts): a request that matches no row of it answers
 * `404` to a signed-in account (anyone else is sent to sign in first); a project
 * the account cannot read answers `404`, as if it did not exist; a page
 * that needs more than the account's role answers `403`. A route added
 * later is open to nobody until the table names it.
 *
 * @module
 */
import { canRead } from "../db/users.ts";
import {
  type DashboardDeps,
  type DashContext,
  message,
  projectNotFound,
} from "./routes/common.ts";
import { meets, type PageMatch } from "./page_table.ts";
import type { Session } from "./session.ts";

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
 * proceed. `found` is the row of the page table the request matched.
 */
export async function accessRefusal(
  c: DashContext,
  deps: DashboardDeps,
  session: Session,
  found: PageMatch | null,
): Promise<Response | null> {
  if (found === null) {
    return await message(
      c,
      deps,
      "Not found",
      "There is no page at this address.",
      404,
    );
  }
  const { page, projectId } = found;
  const account = session.account;
  if (meets(account, page.need, projectId)) return null;
  if (page.need === "admin") {
    return await forbidden(
      c,
      deps,
      `Your role (${account.role}) cannot open this page: it is for administrators.`,
    );
  }
  if (projectId === null || !canRead(account, projectId)) {
    return await projectNotFound(c, deps);
  }
  return await forbidden(
    c,
    deps,
    page.need === "delete"
      ? `Your role (${account.role}) cannot delete a project: ask an administrator.`
      : `Your role (${account.role}) can read this project but not change its settings.`,
  );
}

/** The page of a request its account may not make, with `403`. */
export async function forbidden(
  c: DashContext,
  deps: DashboardDeps,
  text: string,
): Promise<Response> {
  return await message(c, deps, "Forbidden", text, 403);
}

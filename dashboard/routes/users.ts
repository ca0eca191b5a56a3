/**
 * The accounts page, for administrators only (dashboard/access.ts):
 * `GET /users`, `POST /users` (add), `POST /users/update` (role and
 * projects), `POST /users/remove` (its sessions and live tails end at
 * once: every request and every poll of a tail reads the account again).
 * Every change is written to the service's audit log and to the log of
 * each project it concerns. A change that takes from an account the right
 * to configure a project revokes the tokens it created there, and the page
 * says how many.
 *
 * @module
 */
import { listAudit, recordAuditIn } from "../../db/audit.ts";
import { listProjects } from "../../db/projects.ts";
import { ProjectNotFoundError } from "../../db/projects.ts";
import {
  accountOf,
  addUser,
  getUser,
  listUsers,
  parseRole,
  removeUser,
  updateUser,
  UserExistsError,
  UserNotFoundError,
} from "../../db/users.ts";
import { revokeTokensOf } from "../../db/tokens.ts";
import { InvalidValueError } from "../../db/validation.ts";
import { type UsersData, UsersPage } from "../pages/users.tsx";
import {
  type DashApp,
  type DashboardDeps,
  type DashContext,
  doneNotice,
  formField,
  renderPage,
} from "./common.ts";

async function showUsers(
  c: DashContext,
  deps: DashboardDeps,
  extra: Partial<UsersData> = {},
  status: 200 | 400 | 404 | 409 = 200,
): Promise<Response> {
  const [users, projects, events] = await Promise.all([
    listUsers(deps.kv),
    listProjects(deps.kv),
    listAudit(deps.kv, null, 100),
  ]);
  const data: UsersData = {
    users: users.map((u) => ({
      email: u.email,
      role: u.role,
      projects: u.projects,
      createdAt: u.createdAt,
    })),
    projects: projects.map((p) => ({ id: p.id, name: p.name }))
      .sort((a, b) => a.name.localeCompare(b.name)),
    events,
    ...extra,
  };
  return await renderPage(c, deps, UsersPage, data, status);
}

/** The project ids ticked in a form (`project_<id>` checkboxes). */
async function chosenProjects(c: DashContext): Promise<string[]> {
  const body = await c.req.parseBody();
  return Object.keys(body).filter((k) => k.startsWith("project_"))
    .map((k) => k.slice("project_".length));
}

/** The status that answers a refused change, or 0 for an unexpected error. */
function refusalStatus(error: unknown): 0 | 400 | 404 | 409 {
  return error instanceof UserNotFoundError ||
      error instanceof ProjectNotFoundError
    ? 404
    : error instanceof UserExistsError
    ? 409
    : error instanceof InvalidValueError
    ? 400
    : 0;
}

/**
 * A change of the accounts: made and audited, it returns the `done`
 * notice's name and the number of tokens it revoked.
 */
type UserChange = (
  c: DashContext,
  deps: DashboardDeps,
  actor: string,
) => Promise<{ done: string; revoked?: number }>;

/** The account changes by path. */
const CHANGES: Record<string, UserChange> = {
  async "/users"(c, { kv, now }, actor) {
    const user = await addUser(kv, {
      email: await formField(c, "email"),
      role: parseRole(await formField(c, "role")),
      projects: await chosenProjects(c),
      password: await formField(c, "password"),
      now,
    });
    await recordAuditIn(kv, [null, ...user.projects], {
      actor,
      action: "user.add",
      detail: `${user.email} as ${user.role}`,
      now,
    });
    return { done: "added" };
  },
  async "/users/update"(c, { kv, now }, actor) {
    const email = await formField(c, "email");
    const before = await getUser(kv, email);
    if (before === null) throw new UserNotFoundError(email);
    const user = await updateUser(kv, email, {
      role: parseRole(await formField(c, "role")),
      projects: await chosenProjects(c),
      now,
    });
    await recordAuditIn(kv, [null, ...before.projects, ...user.projects], {
      actor,
      action: "user.update",
      detail:
        `${user.email} as ${user.role} of ${user.projects.length} project(s)`,
      now,
    });
    const revoked = await revokeTokensOf(
      kv,
      accountOf(before),
      accountOf(user),
      { actor, now },
    );
    return { done: "updated", revoked: revoked.length };
  },
  async "/users/remove"(c, { kv, now }, actor) {
    const user = await removeUser(kv, await formField(c, "email"));
    await recordAuditIn(kv, [null, ...user.projects], {
      actor,
      action: "user.remove",
      detail: user.email,
      now,
    });
    const revoked = await revokeTokensOf(kv, accountOf(user), null, {
      actor,
      now,
    });
    return { done: "removed", revoked: revoked.length };
  },
};

/**
 * What the notice adds for `revoked` tokens (a count in the redirect's
 * query), or nothing.
 */
function revokedNote(revoked: string | undefined): string {
  if (revoked === undefined || !/^[1-9]\d{0,5}$/.test(revoked)) return "";
  return ` ${revoked} token(s) they created stopped working and were revoked.`;
}

/** Answers a change: a redirect once made, or the page with the refusal. */
function changeHandler(deps: DashboardDeps, apply: UserChange) {
  return async (c: DashContext) => {
    const actor = c.get("session")!.account.email;
    try {
      const { done, revoked } = await apply(c, deps, actor);
      const tokens = revoked ? `&revoked=${revoked}` : "";
      return c.redirect(`${deps.base}/users?done=${done}${tokens}`, 303);
    } catch (error) {
      const status = refusalStatus(error);
      if (status === 0) throw error;
      return await showUsers(c, deps, {
        notice: { kind: "error", text: (error as Error).message },
        form: {
          email: await formField(c, "email"),
          role: await formField(c, "role"),
        },
      }, status);
    }
  };
}

/** Adds the users routes. */
export function usersRoutes(app: DashApp, deps: DashboardDeps): void {
  app.get(`/users`, async (c) => {
    const revoked = revokedNote(c.req.query("revoked"));
    return await showUsers(
      c,
      deps,
      doneNotice(c, {
        added: "User added.",
        updated: `User saved: it applies to their next request.${revoked}`,
        removed:
          `User removed: their sessions and live tails have ended.${revoked}`,
      }),
    );
  });
  for (const [path, apply] of Object.entries(CHANGES)) {
    app.post(path, changeHandler(deps, apply));
  }
}

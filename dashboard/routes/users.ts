/**
 * The accounts page, for administrators only (dashboard/access.ts):
 * `GET /users`, `POST /users` (add), `POST /users/update` (role and
 * projects), `POST /users/remove` (its sessions and live tails end at
 * once: every request and every poll of a tail reads the account again).
 * Every change is written to the service's audit log and to the log of
 * each project it concerns.
 *
 * @module
 */
import { listAudit, recordAuditIn } from "../../db/audit.ts";
import { listProjects } from "../../db/projects.ts";
import { ProjectNotFoundError } from "../../db/projects.ts";
import {
  addUser,
  getUser,
  listUsers,
  parseRole,
  removeUser,
  updateUser,
  UserExistsError,
  UserNotFoundError,
} from "../../db/users.ts";
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

/** A change of the accounts: made and audited, it returns the `done` notice's name. */
type UserChange = (
  c: DashContext,
  deps: DashboardDeps,
  actor: string,
) => Promise<string>;

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
    return "added";
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
    return "updated";
  },
  async "/users/remove"(c, { kv, now }, actor) {
    const user = await removeUser(kv, await formField(c, "email"));
    await recordAuditIn(kv, [null, ...user.projects], {
      actor,
      action: "user.remove",
      detail: user.email,
      now,
    });
    return "removed";
  },
};

/** Answers a change: a redirect once made, or the page with the refusal. */
function changeHandler(deps: DashboardDeps, apply: UserChange) {
  return async (c: DashContext) => {
    const actor = c.get("session")!.account.email;
    try {
      const done = await apply(c, deps, actor);
      return c.redirect(`${deps.base}/users?done=${done}`, 303);
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
    return await showUsers(
      c,
      deps,
      doneNotice(c, {
        added: "User added.",
        updated: "User saved: it applies to their next request.",
        removed: "User removed: their sessions and live tails have ended.",
      }),
    );
  });
  for (const [path, apply] of Object.entries(CHANGES)) {
    app.post(path, changeHandler(deps, apply));
  }
}

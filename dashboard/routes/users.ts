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

/** Adds the users routes. */
export function usersRoutes(app: DashApp, deps: DashboardDeps): void {
  const { base, kv } = deps;

  app.get(`/users`, async (c) => {
    const notice = doneNotice(c, {
      added: "User added.",
      updated: "User saved: it applies to their next request.",
      removed: "User removed: their sessions and live tails have ended.",
    });
    return await showUsers(c, deps, notice ? { notice } : {});
  });

  /** Runs one change; a refusal re-renders the page with its reason. */
  const change = (
    path: string,
    apply: (c: DashContext, actor: string) => Promise<string>,
  ) => {
    app.post(path, async (c) => {
      const actor = c.get("session")!.account.email;
      try {
        const done = await apply(c, actor);
        return c.redirect(`${base}/users?done=${done}`, 303);
      } catch (error) {
        const status = error instanceof UserNotFoundError ||
            error instanceof ProjectNotFoundError
          ? 404
          : error instanceof UserExistsError
          ? 409
          : error instanceof InvalidValueError
          ? 400
          : 0;
        if (status === 0) throw error;
        return await showUsers(c, deps, {
          notice: { kind: "error", text: (error as Error).message },
          form: {
            email: await formField(c, "email"),
            role: await formField(c, "role"),
          },
        }, status as 400 | 404 | 409);
      }
    });
  };

  change("/users", async (c, actor) => {
    const user = await addUser(kv, {
      email: await formField(c, "email"),
      role: parseRole(await formField(c, "role")),
      projects: await chosenProjects(c),
      password: await formField(c, "password"),
      now: deps.now,
    });
    await recordAuditIn(kv, [null, ...user.projects], {
      actor,
      action: "user.add",
      detail: `${user.email} as ${user.role}`,
      now: deps.now,
    });
    return "added";
  });

  change("/users/update", async (c, actor) => {
    const email = await formField(c, "email");
    const before = await getUser(kv, email);
    if (before === null) throw new UserNotFoundError(email);
    const user = await updateUser(kv, email, {
      role: parseRole(await formField(c, "role")),
      projects: await chosenProjects(c),
      now: deps.now,
    });
    await recordAuditIn(kv, [null, ...before.projects, ...user.projects], {
      actor,
      action: "user.update",
      detail:
        `${user.email} as ${user.role} of ${user.projects.length} project(s)`,
      now: deps.now,
    });
    return "updated";
  });

  change("/users/remove", async (c, actor) => {
    const user = await removeUser(kv, await formField(c, "email"));
    await recordAuditIn(kv, [null, ...user.projects], {
      actor,
      action: "user.remove",
      detail: user.email,
      now: deps.now,
    });
    return "removed";
  });
}

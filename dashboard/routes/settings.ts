/**
 * A project's settings: `GET /projects/:id/settings` and one `POST` per
 * change (allow, disallow, levels/add, levels/remove, retention, rotate,
 * delete). A change that works redirects back (a reload repeats nothing);
 * a refused value answers `400` with the page and the reason beside the
 * form; after a rotation the page shows the new secret this once
 * (dashboard/flash.ts).
 *
 * @module
 */
import { recordAudit } from "../../db/audit.ts";
import { listReadTokens } from "../../db/tokens.ts";
import { InvalidValueError } from "../../db/validation.ts";
import { deleteProject } from "../../db/deletion.ts";
import {
  addLevel,
  allowValue,
  disallowValue,
  getProject,
  type Project,
  ProjectNotFoundError,
  removeLevel,
  rotateSecret,
  setRetention,
} from "../../db/projects.ts";
import {
  GRACE_CHOICES,
  type SettingsData,
  SettingsPage,
} from "../pages/settings.tsx";
import {
  type DashApp,
  type DashboardDeps,
  type DashContext,
  doneNotice,
  formField,
  idParam,
  keepFlash,
  projectNotFound,
  renderPage,
  sessionFlash,
  withProject,
} from "./common.ts";

const DONE: Record<string, string> = {
  allow: "Added to the allow-list.",
  disallow: "Removed from the allow-list.",
  "level-add": "Level added.",
  "level-remove": "Level removed.",
  retention: "Retention saved.",
  rotate: "Secret rotated.",
  "token-revoke": "Token revoked: it no longer reads this project.",
};

/** Renders a project's settings page (with its read tokens). */
export async function showSettings(
  c: DashContext,
  deps: DashboardDeps,
  project: Project,
  extra: Partial<SettingsData> = {},
  status: 200 | 400 = 200,
): Promise<Response> {
  const tokens = await listReadTokens(deps.kv, project.id);
  const data: SettingsData = {
    project: {
      id: project.id,
      name: project.name,
      allowedOrigin: project.settings.allowedOrigin,
      levels: project.levels,
      retentionDays: project.retentionDays,
      createdAt: project.createdAt,
      ...(project.previousSecretExpiresAt === undefined
        ? {}
        : { previousSecretExpiresAt: project.previousSecretExpiresAt }),
    },
    now: deps.now(),
    endpoint: deps.endpoint(new URL(c.req.url)),
    tokens: tokens.map((t) => ({
      id: t.id,
      name: t.name,
      createdAt: t.createdAt,
      createdBy: t.createdBy,
    })),
    ...extra,
  };
  return await renderPage(c, deps, SettingsPage, data, status);
}

/** Adds the settings routes. */
export function settingsRoutes(app: DashApp, deps: DashboardDeps): void {
  const { base, kv } = deps;
  const path = "/projects/:id/settings";
  const back = (id: string, done: string, anchor: string) =>
    `${base}/projects/${id}/settings?done=${done}#${anchor}`;

  app.get(
    path,
    withProject(deps, async (c, project) => {
      const flash = await sessionFlash(c, deps, "rotated", project.id);
      const notice = doneNotice(c, DONE);
      return await showSettings(c, deps, project, {
        ...(notice ? { notice } : {}),
        ...(flash ? { newSecret: flash.secret } : {}),
      });
    }),
  );

  /** Runs one change; a refused value re-renders the page with its reason. */
  const change = (
    action: string,
    field: string,
    errorKey: keyof NonNullable<SettingsData["errors"]>,
    apply: (id: string, value: string, c: DashContext) => Promise<Response>,
  ) => {
    app.post(`${path}/${action}`, async (c) => {
      const id = idParam(c);
      const value = (await formField(c, field)).trim();
      try {
        const answer = await apply(id, value, c);
        const deleted = action === "delete";
        await recordAudit(kv, {
          projectId: deleted ? null : id,
          actor: c.get("session")!.account.email,
          action: deleted
            ? "project.delete"
            : action === "rotate"
            ? "secret.rotate"
            : `settings.${action.replace("/", ".")}`,
          detail: deleted ? `${value} (${id})` : value,
          now: deps.now,
        });
        return answer;
      } catch (error) {
        if (error instanceof ProjectNotFoundError) {
          return await projectNotFound(c, deps);
        }
        if (!(error instanceof InvalidValueError)) throw error;
        const project = await getProject(kv, id);
        if (project === null) return await projectNotFound(c, deps);
        return await showSettings(c, deps, project, {
          errors: { [errorKey]: { value, message: error.message } },
        }, 400);
      }
    });
  };

  change("allow", "value", "allow", async (id, value, c) => {
    await allowValue(kv, id, value);
    if (await formField(c, "back") === "rejections") {
      return c.redirect(`${base}/projects/${id}/rejections?done=allow`, 303);
    }
    return c.redirect(back(id, "allow", "allow"), 303);
  });
  change("disallow", "value", "allow", async (id, value, c) => {
    await disallowValue(kv, id, value);
    return c.redirect(back(id, "disallow", "allow"), 303);
  });
  change("levels/add", "level", "level", async (id, value, c) => {
    await addLevel(kv, id, value);
    return c.redirect(back(id, "level-add", "levels"), 303);
  });
  change("levels/remove", "level", "level", async (id, value, c) => {
    await removeLevel(kv, id, value);
    return c.redirect(back(id, "level-remove", "levels"), 303);
  });
  change("retention", "days", "retention", async (id, value, c) => {
    if (!/^\d{1,6}$/.test(value)) {
      throw new InvalidValueError(
        `Cannot keep entries for "${value}" days: expected a whole number from 1 to 3650`,
      );
    }
    await setRetention(kv, id, Number(value));
    return c.redirect(back(id, "retention", "retention"), 303);
  });
  change("rotate", "grace", "rotate", async (id, value, c) => {
    const grace = GRACE_CHOICES.find(([, ms]) => String(ms) === value);
    if (grace === undefined) {
      throw new InvalidValueError(`Cannot use a grace period of "${value}" ms`);
    }
    const project = await rotateSecret(kv, id, {
      graceMs: grace[1],
      now: deps.now,
    });
    await keepFlash(c, deps, {
      kind: "rotated",
      projectId: project.id,
      name: project.name,
      secret: project.secret,
    });
    return c.redirect(back(id, "rotate", "secret"), 303);
  });
  change("delete", "confirm", "delete", async (id, value, c) => {
    const project = await getProject(kv, id);
    if (project === null) throw new ProjectNotFoundError(id);
    if (value !== project.name) {
      throw new InvalidValueError(
        `Cannot delete: type the project's name "${project.name}" exactly to confirm`,
      );
    }
    await deleteProject(kv, id);
    return c.redirect(`${base}/?done=deleted`, 303);
  });
}

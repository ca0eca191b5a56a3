/**
 * A project's alert rules: `GET /projects/:id/alerts`,
 * `POST /projects/:id/alerts/add` and `POST /projects/:id/alerts/remove`.
 * Adding redirects to the page, which shows the new rule's secret once; a
 * refused value answers `400` with the page, the form as sent and the
 * reason (docs/alerts.md).
 *
 * @module
 */
import {
  deleteAlertRule,
  listAlertRules,
  readAlertHistory,
} from "../../db/alerts.ts";
import { type Project } from "../../db/projects.ts";
import { InvalidValueError } from "../../db/validation.ts";
import { addAlertRule, parseAlertDuration } from "../../alerts/rules.ts";
import {
  type AlertForm,
  type AlertsData,
  AlertsPage,
} from "../pages/alerts.tsx";
import {
  audit,
  type DashApp,
  type DashboardDeps,
  type DashContext,
  formField,
  keepFlash,
  projectPageAfterForm,
  renderPage,
  withProject,
} from "./common.ts";

const DONE: Record<string, string> = {
  added: "Alert rule added.",
  removed: "Alert rule removed.",
};

async function showAlerts(
  c: DashContext,
  deps: DashboardDeps,
  project: Project,
  extra: Partial<AlertsData> = {},
  status: 200 | 400 | 404 = 200,
): Promise<Response> {
  const rules = await Promise.all(
    (await listAlertRules(deps.kv, project.id)).map(async (rule) => ({
      rule,
      history: await readAlertHistory(deps.kv, project.id, rule.id),
    })),
  );
  return await renderPage(c, deps, AlertsPage, {
    project: { id: project.id, name: project.name },
    rules,
    ...extra,
  }, status);
}

function duration(name: string, text: string): number | undefined {
  if (text === "") return undefined;
  const ms = parseAlertDuration(text);
  if (ms === undefined) {
    throw new InvalidValueError(
      `Cannot read ${name} "${text}": expected a duration such as "30s", "5m" or "1h"`,
    );
  }
  return ms;
}

/** The rule-adding form as sent, each field trimmed. */
async function alertForm(c: DashContext): Promise<AlertForm> {
  return {
    query: (await formField(c, "query")).trim(),
    webhook: (await formField(c, "webhook")).trim(),
    threshold: (await formField(c, "threshold")).trim(),
    window: (await formField(c, "window")).trim(),
    every: (await formField(c, "every")).trim(),
    on: (await formField(c, "on")).trim(),
    factor: (await formField(c, "factor")).trim(),
  };
}

/**
 * Adds the rule of the form, audited, its secret kept for the next page
 * only; a refused field shows the form again with the reason.
 */
async function addRule(
  c: DashContext,
  deps: DashboardDeps,
  project: Project,
  allowPrivate: boolean,
): Promise<Response> {
  const form = await alertForm(c);
  try {
    if (form.threshold !== "" && !/^\d{1,10}$/.test(form.threshold)) {
      throw new InvalidValueError(
        `Cannot use threshold "${form.threshold}": expected a whole number`,
      );
    }
    if (form.factor && !/^\d{1,6}(\.\d{1,3})?$/.test(form.factor)) {
      throw new InvalidValueError(
        `Cannot use factor "${form.factor}": expected a number such as 10`,
      );
    }
    const windowMs = duration("window", form.window);
    const everyMs = duration("every", form.every);
    const rule = await addAlertRule(deps.kv, {
      projectId: project.id,
      query: form.query,
      webhook: form.webhook,
      ...(form.threshold === "" ? {} : { threshold: Number(form.threshold) }),
      ...(windowMs === undefined ? {} : { windowMs }),
      ...(everyMs === undefined ? {} : { everyMs }),
      ...(form.on ? { on: form.on } : {}),
      ...(form.factor ? { factor: Number(form.factor) } : {}),
    }, { allowPrivate, now: deps.now });
    await audit(c, deps, {
      projectId: project.id,
      action: "alert.add",
      detail: `${rule.id}: ${form.on ? `on ${form.on}` : form.query} -> ${
        new URL(form.webhook).host
      }`,
    });
    await keepFlash(c, deps, {
      kind: "alert",
      projectId: project.id,
      ruleId: rule.id,
      secret: rule.secret,
    });
    return c.redirect(
      `${deps.base}/projects/${project.id}/alerts?done=added`,
      303,
    );
  } catch (error) {
    if (!(error instanceof InvalidValueError)) throw error;
    return await showAlerts(c, deps, project, {
      form,
      notice: { kind: "error", text: error.message },
    }, 400);
  }
}

/** Removes the rule named by the form, audited. */
async function removeRule(
  c: DashContext,
  deps: DashboardDeps,
  project: Project,
): Promise<Response> {
  const ruleId = await formField(c, "rule");
  if (!await deleteAlertRule(deps.kv, project.id, ruleId)) {
    return await showAlerts(c, deps, project, {
      notice: { kind: "error", text: `Cannot find alert rule "${ruleId}"` },
    }, 404);
  }
  await audit(c, deps, {
    projectId: project.id,
    action: "alert.remove",
    detail: ruleId,
  });
  return c.redirect(
    `${deps.base}/projects/${project.id}/alerts?done=removed`,
    303,
  );
}

/** Adds the alerts routes. */
export function alertsRoutes(
  app: DashApp,
  deps: DashboardDeps,
  options: { allowPrivate: boolean },
): void {
  const path = "/projects/:id/alerts";
  app.get(
    path,
    projectPageAfterForm(deps, "alert", DONE, (c, project, after) => {
      const { notice, flash } = after;
      return showAlerts(c, deps, project, {
        ...notice,
        ...(flash
          ? { created: { ruleId: flash.ruleId, secret: flash.secret } }
          : {}),
      });
    }),
  );
  app.post(
    `${path}/add`,
    withProject(
      deps,
      (c, project) => addRule(c, deps, project, options.allowPrivate),
    ),
  );
  app.post(
    `${path}/remove`,
    withProject(deps, (c, project) => removeRule(c, deps, project)),
  );
}

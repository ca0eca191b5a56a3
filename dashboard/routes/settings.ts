/**
 * A project's settings: `GET /projects/:id/settings` and one `POST` per
 * change (allow, disallow, levels/add, levels/remove, retention, rotate,
 * delete, the scrubbing and retention rules). A change that works redirects back (a reload repeats nothing);
 * a refused value answers `400` with the page and the reason beside the
 * form; after a rotation the page shows the new secret this once
 * (dashboard/flash.ts).
 *
 * @module
 */
import {
  addScrubRule,
  dryRunRule,
  removeScrubRule,
  ruleAuditDetail,
  type ScrubRuleInput,
  scrubRules,
} from "../../db/scrub.ts";
import {
  addRetentionRule,
  removeRetentionRule,
} from "../../db/retention_rules.ts";
import { listReadTokens, scopeOf } from "../../db/tokens.ts";
import { InvalidValueError } from "../../db/validation.ts";
import { deleteProject } from "../../db/deletion.ts";
import { setQuota, setSpikeProtection } from "../../db/quota.ts";
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
  audit,
  type DashApp,
  type DashboardDeps,
  type DashContext,
  formField,
  idParam,
  keepFlash,
  projectNotFound,
  projectPageAfterForm,
  renderPage,
} from "./common.ts";

const DONE: Record<string, string> = {
  allow: "Added to the allow-list.",
  disallow: "Removed from the allow-list.",
  "level-add": "Level added.",
  "level-remove": "Level removed.",
  retention: "Retention saved.",
  rotate: "Secret rotated.",
  quota: "Quota saved.",
  spike: "Spike protection saved.",
  "token-revoke": "Token revoked: it no longer reads this project.",
  "scrub-add":
    "Scrubbing rule saved: it applies to entries stored from now on.",
  "scrub-remove": "Scrubbing rule removed.",
  "retention-rule-add": "Retention rule saved.",
  "retention-rule-remove": "Retention rule removed.",
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
      scrubRules: scrubRules(project),
      ...(project.quota ? { quota: project.quota } : {}),
      ...(project.spike ? { spike: project.spike } : {}),
      ...(project.retentionRules
        ? {
          retentionRules: project.retentionRules.map((r) => ({
            filter: r.filter,
            days: r.days,
          })),
        }
        : {}),
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
      scope: scopeOf(t),
    })),
    ...extra,
  };
  return await renderPage(c, deps, SettingsPage, data, status);
}

/** Where a change sends the browser back to: the card it was made on. */
function back(deps: DashboardDeps, id: string, done: string, anchor: string) {
  return `${deps.base}/projects/${id}/settings?done=${done}#${anchor}`;
}

/** One change of a project's settings, posted to `settings/<action>`. */
interface Change {
  /** The form field holding the value. */
  field: string;
  /** The card whose field shows a refusal. */
  errorKey: keyof NonNullable<SettingsData["errors"]>;
  /** The change writes its own audit row (or changes nothing). */
  selfAudited?: true;
  /** Makes the change; throws {@linkcode InvalidValueError} to refuse it. */
  apply(
    deps: DashboardDeps,
    id: string,
    value: string,
    c: DashContext,
  ): Promise<Response>;
}

/**
 * A change that stores the value of `field` with `store`, then sends the
 * browser back to the card `anchor` with the notice `done`.
 */
function storing(
  field: string,
  errorKey: Change["errorKey"],
  store: (kv: Deno.Kv, id: string, value: string) => Promise<unknown>,
  done: keyof typeof DONE,
  anchor: string,
): Change {
  return {
    field,
    errorKey,
    async apply(deps, id, value, c) {
      await store(deps.kv, id, value);
      return c.redirect(back(deps, id, done, anchor), 303);
    },
  };
}

/** A form's whole number (none for an empty field), or a refusal naming `what`. */
function wholeNumber(what: string, text: string): number | undefined {
  if (text === "") return undefined;
  if (!/^\d{1,12}$/.test(text)) {
    throw new InvalidValueError(
      `Cannot set the ${what} to "${text}": expected a whole number`,
    );
  }
  return Number(text);
}

/** A form's number of days, or a refusal (1 to 3650 is checked on saving). */
function daysOf(text: string): number {
  if (!/^\d{1,6}$/.test(text)) {
    throw new InvalidValueError(
      `Cannot keep entries for "${text}" days: expected a whole number from 1 to 3650`,
    );
  }
  return Number(text);
}

/** The scrubbing rule of the Scrubbing card's form, its `value` given. */
async function scrubInput(
  c: DashContext,
  value: string,
): Promise<ScrubRuleInput> {
  const kind = await formField(c, "kind");
  const action = await formField(c, "action") as ScrubRuleInput["action"];
  const acted = action ? { action } : {};
  if (kind === "key") return { kind, key: value, ...acted };
  if (kind === "detector") return { kind, detector: value, ...acted };
  if (kind === "pattern") return { kind, pattern: value, ...acted };
  throw new InvalidValueError(
    `Cannot add a rule of kind "${kind}": expected key, detector or pattern`,
  );
}

/**
 * A change of a rule list: `change` makes it and names the audit log's
 * action and detail, then back to the card `anchor` with the notice `done`.
 */
function ruleChange(
  field: string,
  errorKey: Change["errorKey"],
  done: keyof typeof DONE,
  anchor: string,
  change: (
    c: DashContext,
    deps: DashboardDeps,
    id: string,
    value: string,
  ) => Promise<{ action: string; detail: string }>,
): Change {
  return {
    field,
    errorKey,
    selfAudited: true,
    async apply(deps, id, value, c) {
      const event = await change(c, deps, id, value);
      await audit(c, deps, { projectId: id, ...event });
      return c.redirect(back(deps, id, done, anchor), 303);
    },
  };
}

/** Saves the quota card's first form: empty fields remove their bound. */
async function saveQuota(
  kv: Deno.Kv,
  id: string,
  perDay: string,
  perMinute: string,
) {
  await setQuota(kv, id, {
    perDay: wholeNumber("per-day quota", perDay),
    perMinute: wholeNumber("per-minute quota", perMinute),
  });
}

/** Saves the quota card's second form: both fields empty turn it off. */
async function saveSpike(
  kv: Deno.Kv,
  id: string,
  multiple: string,
  keep: string,
) {
  if (multiple === "" && keep === "") {
    await setSpikeProtection(kv, id, null);
    return;
  }
  const times = Number(multiple);
  if (multiple === "" || keep === "" || !Number.isFinite(times)) {
    throw new InvalidValueError(
      `Cannot set spike protection to "${multiple}" and "${keep}": expected a multiple (a number) and k (a whole number)`,
    );
  }
  await setSpikeProtection(kv, id, {
    multiple: times,
    keep: wholeNumber("spike's k", keep)!,
  });
}

/**
 * A change of the quota card: the fields `field` and `second` saved by
 * `save`, then back to the card with the notice `done`.
 */
function quotaCardChange(
  field: string,
  second: string,
  done: "quota" | "spike",
  save: (kv: Deno.Kv, id: string, a: string, b: string) => Promise<void>,
): Change {
  return {
    field,
    errorKey: done,
    async apply(deps, id, value, c) {
      await save(deps.kv, id, value, (await formField(c, second)).trim());
      return c.redirect(back(deps, id, done, "quota"), 303);
    },
  };
}

/** The settings changes by action, each answered by a redirect. */
const CHANGES: Record<string, Change> = {
  allow: {
    field: "value",
    errorKey: "allow",
    async apply(deps, id, value, c) {
      await allowValue(deps.kv, id, value);
      if (await formField(c, "back") === "rejections") {
        return c.redirect(
          `${deps.base}/projects/${id}/rejections?done=allow`,
          303,
        );
      }
      return c.redirect(back(deps, id, "allow", "allow"), 303);
    },
  },
  disallow: storing("value", "allow", disallowValue, "disallow", "allow"),
  "levels/add": storing("level", "level", addLevel, "level-add", "levels"),
  "levels/remove": storing(
    "level",
    "level",
    removeLevel,
    "level-remove",
    "levels",
  ),
  retention: {
    field: "days",
    errorKey: "retention",
    async apply(deps, id, value, c) {
      await setRetention(deps.kv, id, daysOf(value));
      return c.redirect(back(deps, id, "retention", "retention"), 303);
    },
  },
  "retention-rules/add": ruleChange(
    "filter",
    "retentionRule",
    "retention-rule-add",
    "retention",
    async (c, deps, id, filter) => {
      const days = daysOf((await formField(c, "days")).trim());
      const project = await addRetentionRule(deps.kv, id, filter, days);
      const rule = project.retentionRules!.at(-1)!;
      return {
        action: "settings.retention_rule.add",
        detail: `${rule.filter} ${rule.days}`,
      };
    },
  ),
  "retention-rules/remove": ruleChange(
    "filter",
    "retentionRule",
    "retention-rule-remove",
    "retention",
    async (_c, deps, id, filter) => {
      await removeRetentionRule(deps.kv, id, filter);
      return { action: "settings.retention_rule.remove", detail: filter };
    },
  ),
  "scrub/add": ruleChange(
    "value",
    "scrub",
    "scrub-add",
    "scrubbing",
    async (c, deps, id, value) => {
      const input = await scrubInput(c, value);
      const { rule } = await addScrubRule(deps.kv, id, input);
      return { action: "scrub.add", detail: ruleAuditDetail(rule) };
    },
  ),
  "scrub/remove": ruleChange(
    "rule",
    "scrub",
    "scrub-remove",
    "scrubbing",
    async (_c, deps, id, name) => {
      const { rule } = await removeScrubRule(deps.kv, id, name);
      return { action: "scrub.remove", detail: ruleAuditDetail(rule) };
    },
  ),
  "scrub/dry-run": {
    field: "value",
    errorKey: "scrub",
    selfAudited: true,
    async apply(deps, id, value, c) {
      const project = await getProject(deps.kv, id);
      if (project === null) throw new ProjectNotFoundError(id);
      const input = await scrubInput(c, value);
      const { rule, run } = await dryRunRule(deps.kv, project, input);
      return await showSettings(c, deps, project, {
        dryRun: { rule: rule!, run, value },
      });
    },
  },
  quota: quotaCardChange("per_day", "per_minute", "quota", saveQuota),
  spike: quotaCardChange("multiple", "keep", "spike", saveSpike),
  rotate: {
    field: "grace",
    errorKey: "rotate",
    async apply(deps, id, value, c) {
      const grace = GRACE_CHOICES.find(([, ms]) => String(ms) === value);
      if (grace === undefined) {
        throw new InvalidValueError(
          `Cannot use a grace period of "${value}" ms`,
        );
      }
      const project = await rotateSecret(deps.kv, id, {
        graceMs: grace[1],
        now: deps.now,
      });
      await keepFlash(c, deps, {
        kind: "rotated",
        projectId: project.id,
        name: project.name,
        secret: project.secret,
      });
      return c.redirect(back(deps, id, "rotate", "secret"), 303);
    },
  },
  delete: {
    field: "confirm",
    errorKey: "delete",
    async apply(deps, id, value, c) {
      const project = await getProject(deps.kv, id);
      if (project === null) throw new ProjectNotFoundError(id);
      if (value !== project.name) {
        throw new InvalidValueError(
          `Cannot delete: type the project's name "${project.name}" exactly to confirm`,
        );
      }
      await deleteProject(deps.kv, id);
      return c.redirect(`${deps.base}/?done=deleted`, 303);
    },
  },
};

/** The audit log's name of a change. */
function auditAction(action: string): string {
  return action === "delete"
    ? "project.delete"
    : action === "rotate"
    ? "secret.rotate"
    : `settings.${action.replace("/", ".")}`;
}

/**
 * Answers a change: made and audited, or refused, the page shown again with
 * the reason beside the value.
 */
function changeHandler(deps: DashboardDeps, action: string, change: Change) {
  return async (c: DashContext) => {
    const id = idParam(c);
    const value = (await formField(c, change.field)).trim();
    try {
      const answer = await change.apply(deps, id, value, c);
      if (change.selfAudited) return answer;
      const deleted = action === "delete";
      await audit(c, deps, {
        projectId: deleted ? null : id,
        action: auditAction(action),
        detail: deleted ? `${value} (${id})` : value,
      });
      return answer;
    } catch (error) {
      if (error instanceof ProjectNotFoundError) {
        return await projectNotFound(c, deps);
      }
      if (!(error instanceof InvalidValueError)) throw error;
      const project = await getProject(deps.kv, id);
      if (project === null) return await projectNotFound(c, deps);
      return await showSettings(c, deps, project, {
        errors: { [change.errorKey]: { value, message: error.message } },
      }, 400);
    }
  };
}

/** Adds the settings routes. */
export function settingsRoutes(app: DashApp, deps: DashboardDeps): void {
  const path = "/projects/:id/settings";
  app.get(
    path,
    projectPageAfterForm(
      deps,
      "rotated",
      DONE,
      (c, project, after) =>
        showSettings(c, deps, project, {
          ...after.notice,
          ...(after.flash ? { newSecret: after.flash.secret } : {}),
        }),
    ),
  );
  for (const [action, change] of Object.entries(CHANGES)) {
    app.post(`${path}/${action}`, changeHandler(deps, action, change));
  }
}

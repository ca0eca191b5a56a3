/**
 * `POST /projects/:id/errors/triage`: resolves, ignores, reopens or assigns
 * the groups the form names (`fp`, one or the checked ones of the errors
 * list, at most a page), each change in the project's audit log; then back
 * to the list (with its status filter) or the group's page. A refused value
 * answers `400` with the reason. `GET /projects/:id/releases`: the
 * project's releases (db/releases.ts).
 *
 * @module
 */
import {
  changeTriage,
  GroupNotFoundError,
  STATUS_FILTERS,
  type TriageChange,
} from "../../db/error_group_triage.ts";
import { checkFingerprint } from "../../db/error_group_detail.ts";
import type { Project } from "../../db/projects.ts";
import { listReleases } from "../../db/releases.ts";
import { InvalidValueError } from "../../db/validation.ts";
import { DAY_MS } from "../../domain/entry.ts";
import { ReleasesPage } from "../pages/releases.tsx";
import {
  audit,
  type DashApp,
  type DashboardDeps,
  type DashContext,
  message,
  renderPage,
  withProject,
} from "./common.ts";

/** Groups one bulk action changes at most: a page of the errors list. */
export const MAX_BULK_GROUPS = 100;

/** The notices of `done=` after a change. */
export const TRIAGE_DONE: Record<string, string> = {
  resolve: "Resolved.",
  ignore: "Ignored.",
  reopen: "Reopened.",
  assign: "Assignee changed.",
};

function field(body: Record<string, unknown>, name: string): string {
  const value = body[name];
  return typeof value === "string" ? value.trim() : "";
}

/** A full date (`YYYY-MM-DD`, midnight UTC) or ISO 8601 date and time. */
const FULL_DATE =
  /^(\d{4})-(\d{2})-(\d{2})(?:T\d{2}:\d{2}(?::\d{2}(?:\.\d{1,3})?)?(?:Z|[+-]\d{2}:\d{2})?)?$/;

/**
 * The time of the "until" field, Unix ms: a full date that exists, not the
 * partial forms `Date.parse` also takes (`"1"` is the year 2001); else
 * throws `InvalidValueError`. The range is checked with the change.
 */
function dateOf(text: string): number {
  const m = FULL_DATE.exec(text);
  const ms = m ? Date.parse(text) : NaN;
  const day = m ? new Date(Date.UTC(+m[1]!, +m[2]! - 1, +m[3]!)) : null;
  if (
    Number.isNaN(ms) || day === null ||
    day.toISOString().slice(0, 10) !== text.slice(0, 10)
  ) {
    throw new InvalidValueError(
      `Cannot read date "${
        text.slice(0, 40)
      }": expected YYYY-MM-DD or an ISO 8601 date and time`,
    );
  }
  return ms;
}

/** The change the form asks for; throws `InvalidValueError` for a bad value. */
function changeOf(body: Record<string, unknown>): TriageChange {
  const action = field(body, "action");
  switch (action) {
    case "resolve": {
      const inRelease = field(body, "in_release");
      return { action, ...(inRelease === "" ? {} : { inRelease }) };
    }
    case "ignore": {
      const until = field(body, "until");
      const count = field(body, "until_count");
      if (until !== "" && count !== "") {
        throw new InvalidValueError(
          "Cannot ignore until a date and a count at once: give one",
        );
      }
      const untilMs = until === "" ? undefined : dateOf(until);
      if (count !== "" && !/^\d{1,10}$/.test(count)) {
        throw new InvalidValueError(
          `Cannot read count "${count.slice(0, 40)}": expected a whole number`,
        );
      }
      return {
        action,
        ...(untilMs === undefined ? {} : { untilMs }),
        ...(count === "" ? {} : { untilCount: Number(count) }),
      };
    }
    case "reopen":
      return { action };
    case "assign": {
      const email = field(body, "assignee");
      return { action, email: email === "" ? null : email };
    }
    default:
      throw new InvalidValueError(
        `Cannot do "${
          action.slice(0, 40)
        }": expected resolve, ignore, reopen or assign`,
      );
  }
}

/** The fingerprints the form names, checked. */
function fingerprintsOf(body: Record<string, unknown>): string[] {
  const raw = body["fp"];
  const list = (Array.isArray(raw) ? raw : raw === undefined ? [] : [raw])
    .filter((v): v is string => typeof v === "string");
  if (list.length === 0) {
    throw new InvalidValueError("Cannot change no group: check one or more");
  }
  if (list.length > MAX_BULK_GROUPS) {
    throw new InvalidValueError(
      `Cannot change ${list.length} groups at once: at most ${MAX_BULK_GROUPS}`,
    );
  }
  return [...new Set(list.map(checkFingerprint))];
}

async function triage(
  c: DashContext,
  deps: DashboardDeps,
  project: Project,
): Promise<Response> {
  const body = await c.req.parseBody({ all: true });
  const actor = c.get("session")!.account.email;
  let fps: string[];
  let change: TriageChange;
  try {
    fps = fingerprintsOf(body);
    change = changeOf(body);
    for (const fp of fps) {
      const done = await changeTriage(deps.kv, project.id, fp, change, {
        now: deps.now(),
        actor,
      });
      await audit(c, deps, {
        projectId: project.id,
        action: `error.${change.action}`,
        detail: done.detail,
      });
    }
  } catch (error) {
    if (
      !(error instanceof InvalidValueError ||
        error instanceof GroupNotFoundError ||
        error instanceof Error && error.name === "FingerprintError")
    ) throw error;
    return await message(
      c,
      deps,
      "Cannot change the group",
      error.message,
      400,
    );
  }
  const back = field(body, "back");
  const base = `${deps.base}/projects/${encodeURIComponent(project.id)}/errors`;
  const to = back === "group" && fps.length === 1
    ? `${base}/${fps[0]}?done=${change.action}`
    : `${base}?status=${
      (STATUS_FILTERS as readonly string[]).includes(back) ? back : "unresolved"
    }&done=${change.action}`;
  return c.redirect(to, 303);
}

/** Adds the triage route and the releases page. */
export function triageRoutes(app: DashApp, deps: DashboardDeps): void {
  app.post(
    "/projects/:id/errors/triage",
    withProject(deps, (c, project) => triage(c, deps, project)),
  );
  app.get(
    "/projects/:id/releases",
    withProject(deps, async (c, project) => {
      const now = deps.now();
      return await renderPage(c, deps, ReleasesPage, {
        project: { id: project.id, name: project.name },
        releases: await listReleases(deps.kv, project.id, {
          now,
          retentionMs: project.retentionDays * DAY_MS,
        }),
        now,
      });
    }),
  );
}

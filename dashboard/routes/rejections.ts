/**
 * "Why are my entries missing?": `GET /projects/:id/rejections` (counters,
 * kept rejected entries, optionally of one `?reason=`, and the recent
 * rejections) and `POST /projects/:id/rejections/replay` (`entry` = an
 * entry id, or `all`), which authenticates kept entries again on the
 * project's current settings with the consumer's own authentication, then
 * redirects back; the page shows what became of each entry once
 * (dashboard/flash.ts), so a reload replays nothing.
 *
 * @module
 */
import { readBacklog } from "../../db/backlog.ts";
import { ProjectNotFoundError } from "../../db/projects.ts";
import { listRejected } from "../../db/rejected.ts";
import { replayRejected } from "../../queue/replay.ts";
import { REJECT_REASONS, type RejectReason } from "../../domain/entry.ts";
import { isIdForm } from "../../domain/ids.ts";
import { lastDayByReason, readStats, recentCount } from "../data.ts";
import { replayable } from "../pages/rejected_entry.tsx";
import { RejectionsPage } from "../pages/rejections.tsx";
import {
  type DashApp,
  type DashboardDeps,
  type DashContext,
  doneNotice,
  formField,
  keepFlash,
  message,
  projectNotFound,
  renderPage,
  sessionFlash,
  withProject,
} from "./common.ts";

function reasonParam(text: string | undefined): RejectReason | undefined {
  return (REJECT_REASONS as readonly string[]).includes(text ?? "")
    ? text as RejectReason
    : undefined;
}

/** Adds the rejections routes. */
export function rejectionsRoutes(app: DashApp, deps: DashboardDeps): void {
  const { base, kv } = deps;

  app.get(
    `/projects/:id/rejections`,
    withProject(deps, async (c, project) => {
      const now = deps.now();
      const [stats, kept, flash, backlog] = await Promise.all([
        readStats(kv, project.id),
        listRejected(kv, project.id),
        sessionFlash(c, deps, "replayed", project.id),
        readBacklog(kv, project.id, now),
      ]);
      const reason = reasonParam(c.req.query("reason"));
      const notice = doneNotice(c, {
        allow:
          "Added to the allow-list: entries from there are stored from now on, and the kept ones can be replayed.",
      });
      return await renderPage(c, deps, RejectionsPage, {
        project: {
          id: project.id,
          name: project.name,
          allowedOrigin: project.settings.allowedOrigin,
        },
        accepted: stats.accepted,
        replayed: stats.replayed,
        backlog,
        rejected: stats.rejected,
        lastDay: lastDayByReason(stats.recent, now),
        lastDayAtLeast: recentCount(stats.recent, now).atLeast,
        recent: stats.recent,
        kept: reason === undefined
          ? kept
          : kept.filter((k) => k.reason === reason),
        keptReplayable: kept.filter(replayable).length,
        ...(reason === undefined ? {} : { reason }),
        ...(flash ? { results: flash.results } : {}),
        ...notice,
      });
    }),
  );

  app.post(
    `/projects/:id/rejections/replay`,
    withProject(deps, async (c, project) => {
      const entry = await formField(c, "entry");
      // An id or "all": anything else names no entry, and is never kept in
      // the page's message (a value of its own, bounded by KV).
      if (entry !== "all" && !isIdForm(entry)) return await notAnId(c, deps);
      try {
        // "all" replays only the entries a replay can store.
        const ids = entry === "all"
          ? (await listRejected(kv, project.id)).filter(replayable)
            .map((k) => k.entryId)
          : [entry];
        const results = await replayRejected(
          kv,
          project.id,
          ids,
          { now: deps.now },
        );
        await keepFlash(c, deps, {
          kind: "replayed",
          projectId: project.id,
          results,
        });
      } catch (error) {
        if (!(error instanceof ProjectNotFoundError)) throw error;
        return await projectNotFound(c, deps);
      }
      return c.redirect(
        `${base}/projects/${project.id}/rejections#replay-results`,
        303,
      );
    }),
  );
}

/** The answer to a replay of something that is no entry id nor "all". */
function notAnId(c: DashContext, deps: DashboardDeps): Promise<Response> {
  return message(
    c,
    deps,
    "No such entry",
    'Replay takes the id of a kept entry (28 hexadecimal digits) or "all".',
    400,
  );
}

/**
 * The pages about entries that did not make it: a project's rejections
 * (`GET /projects/:id/rejections`) and the dead letters (`GET /dead-letters`,
 * `POST /dead-letters/replay` with an id or `all`).
 *
 * @module
 */
import { getProject } from "../../db/projects.ts";
import {
  DeadLetterConflictError,
  DeadLetterNotFoundError,
  listDeadLetters,
  replayAllDeadLetters,
  replayDeadLetter,
} from "../../queue/dead_letters.ts";
import { readStats } from "../data.ts";
import { DeadLettersPage } from "../pages/dead_letters.tsx";
import { RejectionsPage } from "../pages/rejections.tsx";
import {
  type DashApp,
  type DashboardDeps,
  doneNotice,
  formField,
  idParam,
  pageContext,
  render,
} from "./common.ts";
import { projectNotFound } from "./settings.ts";

/** Adds the rejections and dead letters routes. */
export function statusRoutes(app: DashApp, deps: DashboardDeps): void {
  const { base, kv } = deps;

  app.get(`${base}/projects/:id/rejections`, async (c) => {
    const project = await getProject(kv, idParam(c));
    if (project === null) return await projectNotFound(c, deps);
    const stats = await readStats(kv, project.id);
    const notice = doneNotice(c, {
      allow:
        "Added to the allow-list: entries from there are stored from now on.",
    });
    return await render(
      c,
      RejectionsPage({
        ctx: pageContext(c, deps),
        data: {
          project: {
            id: project.id,
            name: project.name,
            allowedOrigin: project.settings.allowedOrigin,
          },
          accepted: stats.accepted,
          rejected: stats.rejected,
          recent: stats.recent,
          ...(notice ? { notice } : {}),
        },
      }),
    );
  });

  app.get(`${base}/dead-letters`, async (c) => {
    const letters = await listDeadLetters(kv);
    const n = Number(c.req.query("n") ?? "0");
    const notice = doneNotice(c, {
      replayed: `Replayed ${
        Number.isInteger(n) ? n : 0
      } batch(es): a running server processes them within seconds.`,
    });
    return await render(
      c,
      DeadLettersPage({
        ctx: pageContext(c, deps),
        data: { letters, ...(notice ? { notice } : {}) },
      }),
    );
  });

  app.post(`${base}/dead-letters/replay`, async (c) => {
    const id = await formField(c, "id");
    try {
      const replayed = id === "all"
        ? (await replayAllDeadLetters(kv)).length
        : (await replayDeadLetter(kv, id), 1);
      return c.redirect(
        `${base}/dead-letters?done=replayed&n=${replayed}`,
        303,
      );
    } catch (error) {
      if (
        !(error instanceof DeadLetterNotFoundError ||
          error instanceof DeadLetterConflictError)
      ) {
        throw error;
      }
      return await render(
        c,
        DeadLettersPage({
          ctx: pageContext(c, deps),
          data: {
            letters: await listDeadLetters(kv),
            notice: { kind: "error", text: error.message },
          },
        }),
        error instanceof DeadLetterNotFoundError ? 404 : 409,
      );
    }
  });
}

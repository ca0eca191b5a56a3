/**
 * The dead letters: batches whose processing kept failing
 * (`GET /dead-letters`, `POST /dead-letters/replay` with an id or `all`).
 *
 * @module
 */
import {
  DeadLetterConflictError,
  DeadLetterNotFoundError,
  listDeadLetters,
  replayAllDeadLetters,
  replayDeadLetter,
} from "../../queue/dead_letters.ts";
import { DeadLettersPage } from "../pages/dead_letters.tsx";
import {
  type DashApp,
  type DashboardDeps,
  doneNotice,
  formField,
  renderPage,
} from "./common.ts";

/** Adds the dead letters routes. */
export function deadLettersRoutes(app: DashApp, deps: DashboardDeps): void {
  const { base, kv } = deps;

  app.get(`/dead-letters`, async (c) => {
    const letters = await listDeadLetters(kv);
    const n = Number(c.req.query("n") ?? "0");
    return await renderPage(c, deps, DeadLettersPage, {
      letters,
      ...doneNotice(c, {
        replayed: `Replayed ${
          Number.isInteger(n) ? n : 0
        } batch(es): a running server processes them within seconds.`,
      }),
    });
  });

  app.post(`/dead-letters/replay`, async (c) => {
    const id = await formField(c, "id");
    try {
      // No batch id is this long; as a database key it could not be read.
      if (id.length > 512) throw new DeadLetterNotFoundError(id.slice(0, 40));
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
      return await renderPage(c, deps, DeadLettersPage, {
        letters: await listDeadLetters(kv),
        notice: { kind: "error", text: error.message },
      }, error instanceof DeadLetterNotFoundError ? 404 : 409);
    }
  });
}

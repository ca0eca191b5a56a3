/**
 * The dead letters: batches whose processing kept failing
 * (`GET /dead-letters`, `POST /dead-letters/replay` with an id or `all`,
 * `POST /dead-letters/delete` with an id: one at a time, as its entries go
 * for good).
 *
 * @module
 */
import {
  type DeadLetter,
  DeadLetterConflictError,
  DeadLetterNotFoundError,
  deleteDeadLetter,
  letterIds,
  listDeadLetters,
  replayAllDeadLetters,
  replayDeadLetter,
} from "../../queue/dead_letters.ts";
import { DeadLettersPage } from "../pages/dead_letters.tsx";
import {
  audit,
  type DashApp,
  type DashboardDeps,
  type DashContext,
  doneNotice,
  formField,
  renderPage,
} from "./common.ts";

/** Records in the service's audit log what was done to `letters`. */
async function auditLetters(
  c: DashContext,
  deps: DashboardDeps,
  action: string,
  letters: DeadLetter[],
): Promise<void> {
  if (letters.length === 0) return;
  await audit(c, deps, {
    projectId: null,
    action,
    detail: letterIds(letters),
  });
}

/** What a replay of all said when some dead letters' ids were pending. */
function conflictText(replayed: DeadLetter[], conflicts: string[]): string {
  return `Replayed ${replayed.length}; cannot replay ${conflicts.length}: a batch with the same id is pending (${
    conflicts.slice(0, 20).join(", ")
  })`;
}

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
        deleted: "Dead letter deleted: its entries cannot be replayed.",
      }),
    });
  });

  app.post(`/dead-letters/replay`, async (c) => {
    const id = await formField(c, "id");
    return await answering(c, async () => {
      const conflicts: string[] = [];
      const replayed = id === "all"
        ? await replayAllDeadLetters(kv, conflicts)
        : [await replayDeadLetter(kv, id)];
      await auditLetters(c, deps, "deadletter.replay", replayed);
      if (conflicts.length > 0) {
        return await renderPage(c, deps, DeadLettersPage, {
          letters: await listDeadLetters(kv),
          notice: { kind: "error", text: conflictText(replayed, conflicts) },
        }, 409);
      }
      return c.redirect(
        `${base}/dead-letters?done=replayed&n=${replayed.length}`,
        303,
      );
    });
  });

  app.post(`/dead-letters/delete`, async (c) => {
    const id = await formField(c, "id");
    return await answering(c, async () => {
      // One named id: "all" names no batch (the command line deletes all).
      await auditLetters(c, deps, "deadletter.delete", [
        await deleteDeadLetter(kv, id),
      ]);
      return c.redirect(`${base}/dead-letters?done=deleted`, 303);
    });
  });

  /** `act`'s answer, or the page with why the letter could not be had. */
  async function answering(
    c: DashContext,
    act: () => Promise<Response>,
  ): Promise<Response> {
    try {
      return await act();
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
  }
}

/**
 * A project's read tokens on its settings page:
 * `POST /projects/:id/settings/tokens` creates one and answers the page
 * with the token shown this once (it is not kept anywhere to show later,
 * so the answer is not a redirect); `POST /projects/:id/settings/tokens/revoke`
 * revokes one by id or name and redirects back. Both need configure access
 * to the project (dashboard/access.ts) and are written to its audit log.
 *
 * @module
 */
import {
  createReadToken,
  revokeReadToken,
  TokenNotFoundError,
  type TokenScope,
} from "../../db/tokens.ts";
import { InvalidValueError } from "../../db/validation.ts";
import {
  audit,
  type DashApp,
  type DashboardDeps,
  formField,
  withProject,
} from "./common.ts";
import { showSettings } from "./settings.ts";

/** Adds the read token routes. */
export function tokensRoutes(app: DashApp, deps: DashboardDeps): void {
  const { base, kv } = deps;
  const path = "/projects/:id/settings/tokens";

  app.post(
    path,
    withProject(deps, async (c, project) => {
      const name = (await formField(c, "name")).trim();
      const scope = (await formField(c, "scope")) || "read";
      const actor = c.get("session")!.account.email;
      try {
        const { token, record } = await createReadToken(kv, {
          projectId: project.id,
          name,
          scope: scope as TokenScope,
          createdBy: actor,
          now: deps.now,
        });
        await audit(c, deps, {
          projectId: project.id,
          action: "token.create",
          detail: `${record.name} (${record.id})`,
        });
        return await showSettings(c, deps, project, {
          newToken: { name: record.name, token },
        });
      } catch (error) {
        if (!(error instanceof InvalidValueError)) throw error;
        return await showSettings(c, deps, project, {
          errors: { token: { value: name, message: error.message } },
        }, 400);
      }
    }),
  );

  app.post(
    `${path}/revoke`,
    withProject(deps, async (c, project) => {
      const which = await formField(c, "token");
      try {
        const record = await revokeReadToken(kv, project.id, which);
        await audit(c, deps, {
          projectId: project.id,
          action: "token.revoke",
          detail: `${record.name} (${record.id})`,
        });
      } catch (error) {
        if (!(error instanceof TokenNotFoundError)) throw error;
        return await showSettings(c, deps, project, {
          errors: { token: { value: "", message: error.message } },
        }, 400);
      }
      return c.redirect(
        `${base}/projects/${project.id}/settings?done=token-revoke#tokens`,
        303,
      );
    }),
  );
}

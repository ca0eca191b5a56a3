/**
 * `deno task token …`: a project's read tokens (db/tokens.ts). `create`
 * prints the token once; only its hash is stored, so it cannot be shown
 * again (revoke it and create another). Every change goes to the project's
 * audit log, as done by `cli`.
 *
 * @module
 */
import { projectIdOf } from "./resolve.ts";
import { recordCliChange } from "./audit.ts";
import {
  createReadToken,
  listReadTokens,
  type ReadToken,
  revokeReadToken,
  scopeOf,
  TOKEN_SCOPES,
  TokenNotFoundError,
} from "../db/tokens.ts";
import { choiceFlag, type CommandContext, requiredFlag } from "./command.ts";
import { printResult } from "./output.ts";
import {
  dispatch,
  JSON_FLAG,
  projectList,
  subcommand,
  type Subcommands,
} from "./subcommands.ts";
import { formatTime, inert } from "./format.ts";
import { CLI_ACTOR } from "./user.ts";

const USAGE: Record<string, string> = {
  "": `Manage a project's read tokens (for GET /api/v1/projects/ID/logs).

Usage: deno task token <command> [options]

Commands:
  create PROJECT --name NAME [--scope read|upload]
                                   Create a token; prints it this once
  list PROJECT                     List the project's tokens (names, ids)
  revoke PROJECT NAME_OR_ID        Revoke a token: it stops working at once

Every command takes --json (machine output) and --help.`,
  create: `Create a read token of a project and print it, this once.

Usage: deno task token create PROJECT --name NAME [--scope read|upload] [--json]

Options:
  --name NAME   Unique within the project, 1 to 64 characters
  --scope S     read (the read API, the default) or upload (source maps)
  --json        Print one JSON object: id, name, projectId, token, createdAt`,
  list: `List a project's read tokens (never the tokens themselves).

Usage: deno task token list PROJECT [--json]`,
  revoke: `Revoke a read token by its name or id.

Usage: deno task token revoke PROJECT NAME_OR_ID [--json]`,
};

/** A token as printed by `--json` (never the token, never its hash). */
export function tokenJson(token: ReadToken): Record<string, unknown> {
  return {
    id: token.id,
    name: token.name,
    scope: scopeOf(token),
    projectId: token.projectId,
    createdBy: token.createdBy,
    createdAt: new Date(token.createdAt).toISOString(),
  };
}

const SUBCOMMANDS: Subcommands = {
  create: subcommand({
    positionals: ["PROJECT"],
    options: {
      ...JSON_FLAG,
      name: { type: "string" },
      scope: { type: "string" },
    },
    async run(ctx, parsed, [named]) {
      const projectId = await projectIdOf(ctx.kv, named);
      const name = requiredFlag(parsed, "token create", "name", "NAME");
      const scope = choiceFlag(parsed, "scope", TOKEN_SCOPES);
      const { token, record } = await createReadToken(ctx.kv, {
        projectId,
        name,
        createdBy: CLI_ACTOR,
        ...(scope === undefined ? {} : { scope }),
        now: ctx.now,
      });
      await recordCliChange(ctx, {
        projectId,
        action: "token.create",
        detail: `${record.name} (${record.id})`,
      });
      return printResult(ctx, parsed, {
        json: { ...tokenJson(record), token },
        text: [
          `Created ${scopeOf(record)} token "${
            inert(record.name)
          }" (${record.id}) of project "${projectId}":`,
          "",
          `  ${token}`,
          "",
          "Keep it somewhere safe: it is shown now and never again (only its hash is stored).",
        ],
      });
    },
  }),
  list: projectList(listReadTokens, (projectId) => ({
    toJson: tokenJson,
    empty:
      `No read tokens: create one with "deno task token create ${projectId} --name NAME"`,
    header: ["ID", "NAME", "CREATED BY", "CREATED"],
    row: (t) => [
      t.id,
      inert(t.name),
      inert(t.createdBy),
      formatTime(t.createdAt),
    ],
  })),
  revoke: subcommand({
    positionals: ["PROJECT", "NAME_OR_ID"],
    options: JSON_FLAG,
    async run(ctx, parsed, [named, which]) {
      const projectId = await projectIdOf(ctx.kv, named);
      const record = await revokeReadToken(ctx.kv, projectId, which);
      await recordCliChange(ctx, {
        projectId,
        action: "token.revoke",
        detail: `${record.name} (${record.id})`,
      });
      return printResult(ctx, parsed, {
        json: { ...tokenJson(record), revoked: true },
        text: `Revoked read token "${inert(record.name)}" (${record.id})`,
      });
    },
  }),
};

/**
 * `deno task token <command> …`.
 *
 * @example
 * ```ts
 * await tokenCommand({ ...ctx, args: ["create", projectId, "--name", "ci", "--json"] });
 * ```
 */
export function tokenCommand(ctx: CommandContext): Promise<number> {
  return dispatch(ctx, {
    command: "token",
    usage: USAGE,
    subcommands: SUBCOMMANDS,
    failures: [TokenNotFoundError],
  });
}

/**
 * `deno task user …`: the dashboard's accounts (db/users.ts). `add` and
 * `passwd` read the password from standard input (`--password-stdin`), so
 * that it appears in no shell history or process list; `remove` ends the
 * account's sessions and live tails at once (every request and every poll
 * of a tail reads the account again). Every change goes to the audit log of
 * the service and of each project concerned, as done by `cli`.
 *
 * @module
 */
import { projectIdOf } from "./resolve.ts";
import { recordAuditIn } from "../db/audit.ts";
import { revokeTokensOf } from "../db/tokens.ts";
import {
  accountOf,
  addUser,
  CLI_ACTOR,
  getUser,
  listUsers,
  removeUser,
  ROLES,
  setPassword,
  updateUser,
  type User,
  UserExistsError,
  UserNotFoundError,
} from "../db/users.ts";
import {
  booleanFlag,
  choiceFlag,
  type CommandContext,
  type Parsed,
  requiredFlag,
  stringFlags,
  UsageError,
} from "./command.ts";
import { printResult } from "./output.ts";
import {
  dispatch,
  JSON_FLAG,
  serviceList,
  subcommand,
  type Subcommands,
} from "./subcommands.ts";
import { formatTime, inert } from "./format.ts";

/** Who the audit log names for a change made with these commands. */
export { CLI_ACTOR };

const USAGE: Record<string, string> = {
  "": `Manage the dashboard's accounts.

Usage: deno task user <command> [options]

Commands:
  add EMAIL --role ROLE [--project ID]... --password-stdin
                                   Add an account (ROLE: ${ROLES.join(", ")})
  list [--json]                    List the accounts
  set EMAIL [--role ROLE] [--project ID]...
                                   Change an account's role or projects
  passwd EMAIL --password-stdin    Set a new password; ends its sessions
  remove EMAIL                     Remove an account; ends its sessions and
                                   live tails at once

The built-in account "admin" signs in with ADMIN_PASSWORD and is not listed.
Every command takes --json (machine output) and --help.`,
  add: `Add a dashboard account.

Usage: echo PASSWORD | deno task user add EMAIL --role ROLE [--project ID]... --password-stdin

Options:
  --role ROLE        admin (everything, accounts included), member (reads and
                     configures its projects) or viewer (reads its projects)
  --project ID       A project the account may use; repeatable (admins have all)
  --password-stdin   Read the password (8 to 1024 characters) from the first
                     line of standard input
  --json             Print the account as one JSON object
  -h, --help         Show this help`,
  list: `List the dashboard's accounts (no password hashes).

Usage: deno task user list [--json]`,
  set: `Change an account's role or projects; applies to its next request.

Usage: deno task user set EMAIL [--role ROLE] [--project ID]... [--json]
       deno task user set EMAIL [--role ROLE] --no-projects [--json]

With --project, the account's projects become exactly those given; with
--no-projects it has none (an admin has every project whatever its list).`,
  passwd: `Set an account's password; its sessions end.

Usage: echo PASSWORD | deno task user passwd EMAIL --password-stdin [--json]`,
  remove: `Remove an account; its sessions and live tails end at once.

Usage: deno task user remove EMAIL [--json]`,
};

/** An account as printed by `--json` (no hash, no stamp). */
export function userJson(user: User): Record<string, unknown> {
  return {
    email: user.email,
    role: user.role,
    projects: user.projects,
    createdAt: new Date(user.createdAt).toISOString(),
    updatedAt: new Date(user.updatedAt).toISOString(),
  };
}

async function readPassword(
  ctx: CommandContext,
  parsed: Parsed,
  command: string,
): Promise<string> {
  if (!booleanFlag(parsed, "password-stdin")) {
    throw new UsageError(
      `Cannot run "${command}": pass --password-stdin and the password on standard input`,
    );
  }
  const line = await (ctx.readLine?.() ?? Promise.resolve(null));
  if (line === null) {
    throw new UsageError(
      `Cannot run "${command}": standard input ended before a password`,
    );
  }
  return line.replace(/\r$/, "");
}

function printUser(
  ctx: CommandContext,
  parsed: Parsed,
  user: User,
  headline: string,
): number {
  return printResult(ctx, parsed, { json: userJson(user), text: headline });
}

/** What a change's line adds for the tokens it revoked, or nothing. */
function revokedLine(revoked: number): string {
  return revoked === 0
    ? ""
    : `; ${revoked} token(s) it created stopped working and were revoked`;
}

/** The flags of `add` and `set`: an account's role and projects. */
const ACCOUNT_FLAGS = {
  ...JSON_FLAG,
  role: { type: "string" },
  project: { type: "string", multiple: true },
} as const;

const SUBCOMMANDS: Subcommands = {
  add: subcommand({
    positionals: ["EMAIL"],
    options: { ...ACCOUNT_FLAGS, "password-stdin": { type: "boolean" } },
    async run(ctx, parsed, [email]) {
      requiredFlag(parsed, "user add", "role", ROLES.join("|"));
      const role = choiceFlag(parsed, "role", ROLES)!;
      const password = await readPassword(ctx, parsed, "user add");
      const user = await addUser(ctx.kv, {
        email,
        role,
        projects: await Promise.all(
          stringFlags(parsed, "project").map((p) => projectIdOf(ctx.kv, p)),
        ),
        password,
        now: ctx.now,
      });
      await recordAuditIn(ctx.kv, [null, ...user.projects], {
        actor: CLI_ACTOR,
        action: "user.add",
        detail: `${user.email} as ${user.role}`,
        now: ctx.now,
      });
      return printUser(
        ctx,
        parsed,
        user,
        `Added ${user.role} "${inert(user.email)}"${
          user.role === "admin"
            ? ""
            : ` with ${user.projects.length} project(s)`
        }`,
      );
    },
  }),
  list: serviceList(listUsers, () => ({
    toJson: userJson,
    empty:
      `No accounts besides the built-in "admin": add one with "deno task user add EMAIL --role viewer --project ID --password-stdin"`,
    header: ["EMAIL", "ROLE", "PROJECTS", "ADDED"],
    row: (u) => [
      inert(u.email),
      u.role,
      u.role === "admin" ? "(all)" : u.projects.join(", ") || "-",
      formatTime(u.createdAt),
    ],
  })),
  set: subcommand({
    positionals: ["EMAIL"],
    options: { ...ACCOUNT_FLAGS, "no-projects": { type: "boolean" } },
    async run(ctx, parsed, [email]) {
      const role = choiceFlag(parsed, "role", ROLES);
      const named = stringFlags(parsed, "project");
      const none = booleanFlag(parsed, "no-projects");
      if (none && named.length > 0) {
        throw new UsageError(
          `Cannot use --no-projects with --project: give one or the other`,
        );
      }
      if (role === undefined && named.length === 0 && !none) {
        throw new UsageError(
          `Cannot run "user set": nothing to change; give --role, --project or --no-projects (see --help)`,
        );
      }
      const before = await getUser(ctx.kv, email);
      if (before === null) throw new UserNotFoundError(email);
      const projects = await Promise.all(
        named.map((p) => projectIdOf(ctx.kv, p)),
      );
      const user = await updateUser(ctx.kv, email, {
        ...(role === undefined ? {} : { role }),
        ...(projects.length === 0 && !none ? {} : { projects }),
        now: ctx.now,
      });
      await recordAuditIn(
        ctx.kv,
        [null, ...before.projects, ...user.projects],
        {
          actor: CLI_ACTOR,
          action: "user.update",
          detail:
            `${user.email} as ${user.role} of ${user.projects.length} project(s)`,
          now: ctx.now,
        },
      );
      const revoked = await revokeTokensOf(
        ctx.kv,
        accountOf(before),
        accountOf(user),
        { actor: CLI_ACTOR, now: ctx.now },
      );
      return printResult(ctx, parsed, {
        json: { ...userJson(user), revokedTokens: revoked.length },
        text: `Saved "${inert(user.email)}": ${user.role}, projects ${
          user.projects.join(", ") || "-"
        }${revokedLine(revoked.length)}`,
      });
    },
  }),
  passwd: subcommand({
    positionals: ["EMAIL"],
    options: { ...JSON_FLAG, "password-stdin": { type: "boolean" } },
    async run(ctx, parsed, [email]) {
      if (await getUser(ctx.kv, email) === null) {
        throw new UserNotFoundError(email);
      }
      const password = await readPassword(ctx, parsed, "user passwd");
      const user = await setPassword(ctx.kv, email, password, ctx.now);
      await recordAuditIn(ctx.kv, [null, ...user.projects], {
        actor: CLI_ACTOR,
        action: "user.passwd",
        detail: user.email,
        now: ctx.now,
      });
      return printUser(
        ctx,
        parsed,
        user,
        `New password set for "${inert(user.email)}": its sessions have ended`,
      );
    },
  }),
  remove: subcommand({
    positionals: ["EMAIL"],
    options: JSON_FLAG,
    async run(ctx, parsed, [email]) {
      const user = await removeUser(ctx.kv, email);
      await recordAuditIn(ctx.kv, [null, ...user.projects], {
        actor: CLI_ACTOR,
        action: "user.remove",
        detail: user.email,
        now: ctx.now,
      });
      const revoked = await revokeTokensOf(ctx.kv, accountOf(user), null, {
        actor: CLI_ACTOR,
        now: ctx.now,
      });
      return printResult(ctx, parsed, {
        json: {
          email: user.email,
          removed: true,
          revokedTokens: revoked.length,
        },
        text: `Removed "${
          inert(user.email)
        }": its sessions and live tails have ended${
          revokedLine(revoked.length)
        }`,
      });
    },
  }),
};

/**
 * `deno task user <command> …`.
 *
 * @example
 * ```ts
 * await userCommand({ ...ctx, args: ["add", "ana@example.com", "--role", "viewer", "--project", id, "--password-stdin"], readLine });
 * ```
 */
export function userCommand(ctx: CommandContext): Promise<number> {
  return dispatch(ctx, {
    command: "user",
    usage: USAGE,
    subcommands: SUBCOMMANDS,
    failures: [UserNotFoundError, UserExistsError],
  });
}

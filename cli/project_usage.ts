/**
 * The help texts of `deno task project` and each of its subcommands.
 *
 * @module
 */

import { SCRUB_USAGE } from "./project_scrub.ts";
import { QUOTA_USAGE, SPIKE_USAGE } from "./project_quota.ts";
import { RETENTION_RULES_USAGE } from "./project_retention.ts";

/** Help of `project` (key "") and of each subcommand. */
export const USAGE: Record<string, string> = {
  "": `Manage projects.

Usage: deno task project <command> [options]

Commands:
  create --name NAME [--allow VALUE]...  Create a project; prints its secret
  list                                   List the projects
  show ID                                Show one project (no secret)
  allow ID VALUE                         Add an origin or app id to the allow-list
  disallow ID VALUE                      Remove one from the allow-list
  rotate-secret ID [--grace 24h]         Replace the secret; prints the new one
  levels ID [add|remove NAME]            Show, add or remove custom levels
  retention ID DAYS                      Keep new entries DAYS days
  retention-rules ID [--add F --days N]  Keep entries by level: "level<=info"
  scrub ID [--key|--detector|--pattern …] Show or change what is scrubbed
  quota ID [--per-day N] [--per-minute M] [--off]
                                         Entries stored per day and minute
  spike ID [--multiple X --keep K] [--off]
                                         Sampling in a spike
  delete ID [--yes]                      Delete the project and its logs

ID is a project's id or its name (a name several projects share is refused).
Every command takes --json (machine output) and --help.`,
  scrub: SCRUB_USAGE,
  "retention-rules": RETENTION_RULES_USAGE,
  quota: QUOTA_USAGE,
  spike: SPIKE_USAGE,
  create: `Create a project and print it, secret included.

Usage: deno task project create --name NAME [--allow VALUE]... [--json]

Options:
  --name NAME     Name shown to operators (1 to 200 characters)
  --allow VALUE   Browser origin ("https://app.example.com", no path, no
                  trailing slash) or app id in reverse domain notation
                  ("com.example.app.ios"); repeatable. "*" and "null" are refused
  --json          Print one JSON object: projectId, name, secret, settings, ...
  -h, --help      Show this help`,
  list: `List the projects (secrets are not shown).

Usage: deno task project list [--json]

Options:
  --json      Print a JSON array of projects
  -h, --help  Show this help`,
  show: `Show one project (its secret is not shown).

Usage: deno task project show ID [--json]

Options:
  --json      Print one JSON object
  -h, --help  Show this help`,
  allow: `Add a browser origin or an app id to a project's allow-list.

Usage: deno task project allow ID VALUE [--json]

VALUE is an origin "scheme://host[:port]" (no path, no trailing slash) or an
app id in reverse domain notation ("com.example.app.ios"). Wildcards ("*") and
"null" are refused. The change applies within 5 seconds.

Options:
  --json      Print the project as one JSON object
  -h, --help  Show this help`,
  disallow: `Remove a browser origin or an app id from a project's allow-list.

Usage: deno task project disallow ID VALUE [--json]

Options:
  --json      Print the project as one JSON object
  -h, --help  Show this help`,
  "rotate-secret": `Give a project a new secret and print it.

Usage: deno task project rotate-secret ID [--grace 24h] [--json]

The previous secret keeps verifying signatures during the grace period, so
servers can be redeployed with the new one.

Options:
  --grace DURATION  How long the previous secret still verifies, such as
                    "24h", "90m" or "0" (at once), at most 365d
                    (default: 24h)
  --json            Print projectId, secret and previousSecretExpiresAt
  -h, --help        Show this help`,
  levels: `Show, add or remove a project's custom levels.

Usage: deno task project levels ID [--json]
       deno task project levels ID add NAME [--json]
       deno task project levels ID remove NAME [--json]

The standard levels info, warning, error and critical are always accepted.
An entry with another level is stored only if the project declares it.
NAME matches ^[a-z][a-z0-9_-]{0,31}$.

Options:
  --json      Print the project as one JSON object
  -h, --help  Show this help`,
  retention: `Set how many days a project's entries are kept.

Usage: deno task project retention ID DAYS [--json]

DAYS is a whole number from 1 to 3650. It applies to entries stored from now on.

Options:
  --json      Print the project as one JSON object
  -h, --help  Show this help`,
  delete: `Delete a project with its logs, counters and recent rejections.

Usage: deno task project delete ID [--yes] [--json]

Options:
  -y, --yes   Do not ask for confirmation
  --json      Print {"projectId", "deleted", "logs"}
  -h, --help  Show this help`,
};

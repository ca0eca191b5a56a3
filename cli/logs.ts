/**
 * `deno task logs ID …`: a project's newest stored entries, printed oldest
 * first, filtered by a query (`--query`, the syntax of docs/query.md) and by
 * flags for level, time, text and field values, which combine with AND;
 * `--follow` keeps printing entries as they are stored until Ctrl-C. It
 * reads through the query module only (db/query/mod.ts) and says when more
 * entries match than it printed.
 *
 * Entries are stored a little after they are received (after their batch is
 * processed), so `--follow` re-reads a short window behind the newest entry
 * it has seen and prints what it had not seen yet.
 *
 * @module
 */
import {
  aggregate,
  andFilters,
  type Filter,
  InvalidQueryError,
  listLogs,
  matches,
  parseSearch,
  type Pipe,
  queryLogs,
  QuerySyntaxError,
} from "../db/query/mod.ts";
import {
  type LogRecord,
  recordJson,
  STANDARD_LEVELS,
} from "../domain/entry.ts";
import { idTime, timeBound } from "../domain/ids.ts";
import {
  booleanFlag,
  type CommandContext,
  type CommandSpec,
  flags,
  limitFlag,
  oneOfFlag,
  parseFlags,
  println,
  runCommand,
  stringFlag,
  stringFlags,
  takePositionals,
  UsageError,
  useColor,
} from "./command.ts";
import { stackLines } from "../domain/fingerprint.ts";
import {
  compact,
  formatLevel,
  formatTime,
  inert,
  parseTimeFlag,
} from "./format.ts";
import { jsonText } from "./inert.ts";
import { printAggregation } from "./output.ts";
import { resolveProject } from "./resolve.ts";

const USAGE = `Print a project's newest entries, oldest first.

Usage: deno task logs ID [options]

ID is a project's id or its name.

Options:
  -q, --query Q      Only entries matching the query Q, such as
                     'level>=warning "payment failed" context.userId:user_42'
                     (words, "phrases", field:value, -field:value, field:*,
                     level:error,critical, level>=warning; all must match).
                     It may end with an aggregation, which prints rows:
                     'Q | count', 'Q | count by (time 1h, context.service)'
                     (time 1m, 5m, 15m, 1h or 1d), 'Q | top 10 context.userId',
                     'Q | uniq context.userId' (docs/query.md)
  --level L          Only this level; repeatable or comma-separated ("error,critical")
  --min-level L      Only this standard level and the more severe ones
                     (info < warning < error < critical; custom levels excluded)
  --since WHEN       Only entries received at or after WHEN: a duration back
                     from now ("15m", "2h", "7d") or an ISO 8601 time
  --until WHEN       Only entries received at or before WHEN (same forms)
  --grep TEXT        Only entries with TEXT as words in a value of data,
                     context, device, app id or origin (case-insensitive;
                     the same as a quoted phrase in --query)
  --where PATH=VALUE Only entries whose field equals VALUE, such as
                     "context.environment=production", "data.code=42",
                     "appid=com.example.app.ios"; repeatable (all must match)
  --limit N          How many of the newest matching entries (default: 100)
  -f, --follow       Keep printing new entries until Ctrl-C
  --json             One JSON object per line: id, receivedAt, level, auth,
                     origin, appid, data, context, device; for an
                     aggregation, one object per row
  --csv              An aggregation's rows as CSV with a header row
  -h, --help         Show this help`;

const COMMAND: CommandSpec = {
  name: "logs",
  usage: USAGE,
  flags: {
    query: { type: "string", short: "q" },
    ...flags({
      string: ["min-level", "since", "until", "grep", "limit"],
      multiple: ["level", "where"],
    }),
    follow: { type: "boolean", short: "f" },
    json: { type: "boolean" },
    csv: { type: "boolean" },
  },
};

/** Default of `--limit`. */
export const DEFAULT_LIMIT = 100;
/** Most entries `--limit` may ask for. */
const MAX_LIMIT = 100_000;
/** How far behind the newest seen entry `--follow` looks for late ones. */
const FOLLOW_LOOKBACK_MS = 15_000;

/** The filter of the flags other than `--query`. */
function flagFilter(
  parsed: ReturnType<typeof parseFlags>,
  now: () => number,
): Filter {
  const filter: Filter = {};
  const levels = stringFlags(parsed, "level").flatMap((l) => l.split(","))
    .map((l) => l.trim()).filter((l) => l !== "");
  if (levels.length > 0) filter.levels = levels;
  const min = stringFlag(parsed, "min-level");
  if (min !== undefined) {
    filter.minLevel = oneOfFlag("min-level", min, STANDARD_LEVELS);
  }
  const grep = stringFlag(parsed, "grep");
  if (grep !== undefined && grep.trim() !== "") {
    filter.text = [grep.toLowerCase()];
  }
  for (const clause of stringFlags(parsed, "where")) {
    const eq = clause.indexOf("=");
    const path = eq < 0 ? [] : clause.slice(0, eq).split(".");
    if (eq < 1 || path.some((p) => p === "")) {
      throw new UsageError(
        `Cannot read --where "${clause}": expected PATH=VALUE such as "context.environment=production"`,
      );
    }
    (filter.fields ??= []).push({
      path: path.join("."),
      op: "eq",
      value: clause.slice(eq + 1),
    });
  }
  const since = stringFlag(parsed, "since");
  if (since !== undefined) filter.since = parseTimeFlag("--since", since, now);
  const until = stringFlag(parsed, "until");
  // --until is inclusive; a filter's until is not.
  if (until !== undefined) {
    filter.until = parseTimeFlag("--until", until, now) + 1;
  }
  return filter;
}

/** The filter of `--query` and the other flags together, and its pipe. */
function readFilter(
  parsed: ReturnType<typeof parseFlags>,
  now: () => number,
): { filter: Filter; pipe: Pipe | null } {
  const query = stringFlag(parsed, "query");
  let filter: Filter = {};
  let pipe: Pipe | null = null;
  if (query !== undefined) {
    try {
      ({ filter, pipe } = parseSearch(query));
    } catch (error) {
      if (error instanceof QuerySyntaxError) {
        throw new UsageError(
          `Cannot parse --query ${
            JSON.stringify(query)
          } at column ${error.column}: ${error.detail}`,
        );
      }
      throw error;
    }
  }
  return { filter: andFilters(filter, flagFilter(parsed, now)), pipe };
}

/** Prints the rows of `pipe` over the entries of `filter`. */
async function printRows(
  ctx: CommandContext,
  parsed: ReturnType<typeof parseFlags>,
  named: string,
  search: { filter: Filter; pipe: Pipe | null },
): Promise<number> {
  const { filter, pipe } = search;
  if (pipe === null) {
    throw new UsageError(`Cannot use --csv without an aggregation`);
  }
  if (booleanFlag(parsed, "json") && booleanFlag(parsed, "csv")) {
    throw new UsageError(`Cannot use --json with --csv`);
  }
  for (const flag of ["follow", "limit"]) {
    if (parsed.values[flag] !== undefined) {
      throw new UsageError(`Cannot use --${flag} with an aggregation`);
    }
  }
  try {
    const { id } = await resolveProject(ctx.kv, named);
    const answer = await aggregate(ctx.kv, id, {
      filter,
      pipe,
      budget: { clock: ctx.now },
    });
    const mode = booleanFlag(parsed, "json")
      ? "json"
      : booleanFlag(parsed, "csv")
      ? "csv"
      : "table";
    printAggregation(ctx, answer, mode);
    return 0;
  } catch (error) {
    if (error instanceof InvalidQueryError) {
      throw new UsageError(error.message);
    }
    throw error;
  }
}

/** Prints entries as lines with aligned level and source columns. */
class LinePrinter {
  #ctx: CommandContext;
  #json: boolean;
  #levelWidth = "critical".length;
  #sourceWidth: number;

  /** `sources` are the expected senders (the allow-list), for the width. */
  constructor(ctx: CommandContext, json: boolean, sources: string[]) {
    this.#ctx = ctx;
    this.#json = json;
    this.#sourceWidth = Math.max(
      "signed".length,
      ...sources.map((s) => s.length),
    );
  }

  print(logs: LogRecord[]): void {
    if (this.#json) {
      for (const log of logs) {
        println(this.#ctx, jsonText(recordJson(log)));
      }
      return;
    }
    for (const log of logs) {
      this.#levelWidth = Math.max(this.#levelWidth, log.level.length);
      this.#sourceWidth = Math.max(this.#sourceWidth, source(log).length);
    }
    const color = useColor(this.#ctx);
    for (const log of logs) {
      const context = Object.keys(log.context).length > 0
        ? `  context=${compact(log.context)}`
        : "";
      // A stack reads as lines, under the entry, not as one line of "\n".
      const stack = stackLines(log.data.stack);
      const data = stack.length === 0
        ? log.data
        : { ...log.data, stack: undefined };
      println(
        this.#ctx,
        [
          formatTime(log.receivedAt, true),
          formatLevel(log.level, color, this.#levelWidth),
          source(log).padEnd(this.#sourceWidth),
          compact(data) + context,
        ].join("  "),
      );
      for (const line of stack) println(this.#ctx, `    ${inert(line)}`);
    }
  }
}

/** Who sent an entry, as the human output shows it. */
function source(log: LogRecord): string {
  if (log.auth === "origin") return inert(log.origin ?? "origin");
  if (log.auth === "appid") return inert(log.appid ?? "appid");
  return "signed";
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal?.removeEventListener("abort", done);
      resolve();
    }
    signal?.addEventListener("abort", done, { once: true });
  });
}

/**
 * The newest entries matching `filter`, up to `limit`, newest first, and
 * whether more match.
 */
async function newestEntries(
  kv: Deno.Kv,
  projectId: string,
  filter: Filter,
  limit: number,
): Promise<{ found: LogRecord[]; more: boolean }> {
  const found: LogRecord[] = [];
  let cursor: string | undefined;
  let more = false;
  while (found.length < limit) {
    const page = await queryLogs(kv, projectId, {
      filter,
      limit: Math.min(1000, limit - found.length),
      ...(cursor === undefined ? {} : { cursor }),
    });
    found.push(...page.records);
    more = page.cursor !== null;
    if (page.cursor === null) break;
    cursor = page.cursor;
  }
  return { found, more };
}

/**
 * Follows the project until stopped: every poll re-reads from a little
 * behind the newest entry seen, and prints the entries it had not seen.
 * Ids below the floor were either printed already (`found`, newest first)
 * or are older than the entries printed.
 */
async function follow(
  ctx: CommandContext,
  projectId: string,
  filter: Filter,
  printed: { found: LogRecord[]; more: boolean },
  printer: LinePrinter,
): Promise<number> {
  const startId = filter.since === undefined ? "" : timeBound(filter.since);
  const oldest = printed.found.at(-1)?.id ?? "";
  const floorId = printed.more && oldest > startId ? oldest : startId;
  let newestId =
    (await queryLogs(ctx.kv, projectId, { limit: 1 })).records[0]?.id ?? "";
  const lowId = () => {
    if (newestId === "") return floorId;
    const behind = timeBound(idTime(newestId) - FOLLOW_LOOKBACK_MS);
    return behind > floorId ? behind : floorId;
  };
  const seen = new Set(
    printed.found.map((log) => log.id).filter((id) => id >= lowId()),
  );
  const wait = ctx.sleep ?? sleep;
  for (;;) {
    await wait(ctx.pollMs ?? 1000, ctx.signal);
    if (ctx.signal?.aborted) return 0;
    const low = lowId();
    const fresh: LogRecord[] = [];
    const iter = listLogs(
      ctx.kv,
      projectId,
      low === "" ? {} : { startId: low },
    );
    for await (const log of iter) {
      if (seen.has(log.id)) continue;
      seen.add(log.id);
      if (log.id > newestId) newestId = log.id;
      if (matches(log, filter)) fresh.push(log);
    }
    printer.print(fresh);
    const keep = lowId();
    for (const id of seen) if (id < keep) seen.delete(id);
  }
}

/**
 * `deno task logs ID …`.
 *
 * @example
 * ```ts
 * const code = await logsCommand({ ...ctx, args: [projectId, "--since", "15m", "--json"] });
 * ```
 */
export function logsCommand(ctx: CommandContext): Promise<number> {
  return runCommand(ctx, COMMAND, async (parsed) => {
    const [named] = takePositionals("logs", parsed.positionals, ["ID"]);
    const { filter, pipe } = readFilter(parsed, ctx.now);
    if (pipe || booleanFlag(parsed, "csv")) {
      return await printRows(ctx, parsed, named, { filter, pipe });
    }
    const limit = limitFlag(parsed, {
      fallback: DEFAULT_LIMIT,
      max: MAX_LIMIT,
    });
    const following = booleanFlag(parsed, "follow");
    if (following && stringFlag(parsed, "until") !== undefined) {
      throw new UsageError(`Cannot use --until with --follow`);
    }
    const json = booleanFlag(parsed, "json");
    const project = await resolveProject(ctx.kv, named);
    const projectId = project.id;
    // Newest matching entries first, up to the limit; printed oldest first.
    const printed = await newestEntries(ctx.kv, projectId, filter, limit);
    const { found, more } = printed;
    // Entries come from the allow-list or are signed: sizing the source
    // column from it keeps the lines `--follow` adds aligned too.
    const printer = new LinePrinter(
      ctx,
      json,
      project.settings.allowedOrigin,
    );
    printer.print([...found].reverse());
    if (found.length === 0 && !json) {
      ctx.stderr(`No entries found in project "${projectId}"\n`);
    }
    if (more) {
      ctx.stderr(
        `More entries match: showing the newest ${found.length} (raise --limit, or narrow with --since and --until)\n`,
      );
    }
    if (!following) return 0;
    if (!json) ctx.stderr(`Waiting for new entries (Ctrl-C to stop)\n`);
    return await follow(ctx, projectId, filter, printed, printer);
  });
}

/**
 * `deno task logs ID …`: a project's newest stored entries, printed oldest
 * first, filtered by level, time, text and field values; `--follow` keeps
 * printing entries as they are stored until Ctrl-C.
 *
 * Entry ids start with 12 hex digits of the receipt time in milliseconds
 * (queue/ids.ts), so a time range is a key range and is read without a scan.
 * Entries are stored a little after they are received (after their batch is
 * processed), so `--follow` re-reads a short window behind the newest entry
 * it has seen and prints what it had not seen yet.
 *
 * @module
 */
import { listLogs } from "../db/logs.ts";
import { type LogRecord, STANDARD_LEVELS } from "../domain/entry.ts";
import { getProject, ProjectNotFoundError } from "../db/projects.ts";
import { idTime, timeBound } from "../domain/ids.ts";
import {
  booleanFlag,
  type CommandContext,
  guard,
  parseFlags,
  println,
  stringFlag,
  stringFlags,
  takePositionals,
  UsageError,
  useColor,
} from "./command.ts";
import {
  compact,
  formatLevel,
  formatTime,
  inert,
  parseTimeFlag,
} from "./format.ts";

const USAGE = `Print a project's newest entries, oldest first.

Usage: deno task logs ID [options]

Options:
  --level L          Only this level; repeatable or comma-separated ("error,critical")
  --min-level L      Only this standard level and the more severe ones
                     (info < warning < error < critical; custom levels excluded)
  --since WHEN       Only entries received at or after WHEN: a duration back
                     from now ("15m", "2h", "7d") or an ISO 8601 time
  --until WHEN       Only entries received at or before WHEN (same forms)
  --grep TEXT        Only entries whose level, data, context, device, app id or
                     origin contain TEXT (case-insensitive)
  --where PATH=VALUE Only entries whose field equals VALUE, such as
                     "context.environment=production", "data.code=42",
                     "appid=com.example.app.ios"; repeatable (all must match)
  --limit N          How many of the newest matching entries (default: 100)
  -f, --follow       Keep printing new entries until Ctrl-C
  --json             One JSON object per line: id, receivedAt, level, auth,
                     origin, appid, data, context, device
  -h, --help         Show this help`;

/** Default of `--limit`. */
export const DEFAULT_LIMIT = 100;
/** How far behind the newest seen entry `--follow` looks for late ones. */
const FOLLOW_LOOKBACK_MS = 15_000;

/** Which entries to print. */
export interface LogFilter {
  /** Exact levels; empty means any. */
  levels: string[];
  /** Lowest standard level rank (index in STANDARD_LEVELS). */
  minRank?: number;
  /** Lower-cased text to find. */
  grep?: string;
  /** Field paths and the values they must have. */
  where: { path: string[]; value: string }[];
}

/** The JSON form of an entry, as `logs --json` prints it (README, "logs"). */
export function logJson(log: LogRecord): Record<string, unknown> {
  return {
    id: log.id,
    receivedAt: new Date(log.receivedAt).toISOString(),
    level: log.level,
    auth: log.auth,
    ...(log.origin === undefined ? {} : { origin: log.origin }),
    ...(log.appid === undefined ? {} : { appid: log.appid }),
    data: log.data,
    context: log.context,
    device: log.device,
  };
}

/** Whether `log` passes `filter`. */
export function matches(log: LogRecord, filter: LogFilter): boolean {
  if (filter.levels.length > 0 && !filter.levels.includes(log.level)) {
    return false;
  }
  if (filter.minRank !== undefined) {
    const rank = (STANDARD_LEVELS as readonly string[]).indexOf(log.level);
    if (rank < filter.minRank) return false;
  }
  if (filter.grep !== undefined) {
    const { level, data, context, device, appid, origin } = log;
    const text = JSON.stringify({ level, data, context, device, appid, origin })
      .toLowerCase();
    if (!text.includes(filter.grep)) return false;
  }
  for (const { path, value } of filter.where) {
    let field: unknown = log;
    for (const name of path) {
      field = typeof field === "object" && field !== null
        ? (field as Record<string, unknown>)[name]
        : undefined;
    }
    if (field === undefined) return false;
    if ((typeof field === "string" ? field : JSON.stringify(field)) !== value) {
      return false;
    }
  }
  return true;
}

function parseFilter(parsed: ReturnType<typeof parseFlags>): LogFilter {
  const filter: LogFilter = {
    levels: stringFlags(parsed, "level").flatMap((l) => l.split(","))
      .map((l) => l.trim()).filter((l) => l !== ""),
    where: [],
  };
  const min = stringFlag(parsed, "min-level");
  if (min !== undefined) {
    const rank = (STANDARD_LEVELS as readonly string[]).indexOf(min);
    if (rank < 0) {
      throw new UsageError(
        `Cannot read --min-level "${min}": expected one of ${
          STANDARD_LEVELS.join(", ")
        }`,
      );
    }
    filter.minRank = rank;
  }
  const grep = stringFlag(parsed, "grep");
  if (grep !== undefined) filter.grep = grep.toLowerCase();
  for (const clause of stringFlags(parsed, "where")) {
    const eq = clause.indexOf("=");
    const path = eq < 0 ? [] : clause.slice(0, eq).split(".");
    if (eq < 1 || path.some((p) => p === "")) {
      throw new UsageError(
        `Cannot read --where "${clause}": expected PATH=VALUE such as "context.environment=production"`,
      );
    }
    filter.where.push({ path, value: clause.slice(eq + 1) });
  }
  return filter;
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
      for (const log of logs) println(this.#ctx, JSON.stringify(logJson(log)));
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
      println(
        this.#ctx,
        [
          formatTime(log.receivedAt, true),
          formatLevel(log.level, color, this.#levelWidth),
          source(log).padEnd(this.#sourceWidth),
          compact(log.data) + context,
        ].join("  "),
      );
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
 * `deno task logs ID …`.
 *
 * @example
 * ```ts
 * const code = await logsCommand({ ...ctx, args: [projectId, "--since", "15m", "--json"] });
 * ```
 */
export function logsCommand(ctx: CommandContext): Promise<number> {
  return guard(ctx, async () => {
    const parsed = parseFlags("logs", ctx.args, {
      level: { type: "string", multiple: true },
      "min-level": { type: "string" },
      since: { type: "string" },
      until: { type: "string" },
      grep: { type: "string" },
      where: { type: "string", multiple: true },
      limit: { type: "string" },
      follow: { type: "boolean", short: "f" },
      json: { type: "boolean" },
    });
    if (booleanFlag(parsed, "help")) {
      println(ctx, USAGE);
      return 0;
    }
    const [projectId] = takePositionals("logs", parsed.positionals, ["ID"]);
    const filter = parseFilter(parsed);
    const sinceText = stringFlag(parsed, "since");
    const untilText = stringFlag(parsed, "until");
    const since = sinceText === undefined
      ? undefined
      : parseTimeFlag("--since", sinceText, ctx.now);
    const until = untilText === undefined
      ? undefined
      : parseTimeFlag("--until", untilText, ctx.now);
    const limitText = stringFlag(parsed, "limit") ?? String(DEFAULT_LIMIT);
    const limit = Number(limitText);
    if (!/^\d+$/.test(limitText) || limit < 1 || limit > 100_000) {
      throw new UsageError(
        `Cannot read --limit "${limitText}": expected a whole number from 1 to 100000`,
      );
    }
    const follow = booleanFlag(parsed, "follow");
    if (follow && until !== undefined) {
      throw new UsageError(`Cannot use --until with --follow`);
    }
    const json = booleanFlag(parsed, "json");
    const project = await getProject(ctx.kv, projectId);
    if (project === null) throw new ProjectNotFoundError(projectId);

    // Newest matching entries first, up to the limit; printed oldest first.
    const startId = since === undefined ? "" : timeBound(since);
    const range = {
      ...(startId === "" ? {} : { startId }),
      ...(until === undefined ? {} : { endId: timeBound(until + 1) }),
    };
    const found: LogRecord[] = [];
    // For --follow: the newest and oldest ids read, and those in its window.
    let newestId = "";
    let oldestId = "";
    const recent: string[] = [];
    for await (
      const log of listLogs(ctx.kv, projectId, { reverse: true, ...range })
    ) {
      if (newestId === "") newestId = log.id;
      oldestId = log.id;
      if (idTime(log.id) >= idTime(newestId) - FOLLOW_LOOKBACK_MS) {
        recent.push(log.id);
      }
      if (!matches(log, filter)) continue;
      found.push(log);
      if (found.length >= limit) break;
    }
    // Entries come from the allow-list or are signed: sizing the source
    // column from it keeps the lines `--follow` adds aligned too.
    const printer = new LinePrinter(
      ctx,
      json,
      project.settings.allowedOrigin,
    );
    printer.print(found.reverse());
    if (!follow) {
      if (found.length === 0 && !json) {
        ctx.stderr(`No entries found in project "${projectId}"\n`);
      }
      return 0;
    }

    // Follow: every poll re-reads from a little behind the newest entry seen,
    // and prints the entries it had not seen. Ids below `floorId` were either
    // visited above or are older than the entries already printed.
    if (!json) ctx.stderr(`Waiting for new entries (Ctrl-C to stop)\n`);
    const floorId = found.length >= limit ? oldestId : startId;
    const lowId = () => {
      if (newestId === "") return floorId;
      const behind = timeBound(idTime(newestId) - FOLLOW_LOOKBACK_MS);
      return behind > floorId ? behind : floorId;
    };
    const seen = new Set(recent.filter((id) => id >= lowId()));
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
  });
}

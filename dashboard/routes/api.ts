/**
 * The read API, served by the dashboard (on its own port, or under
 * `/dashboard/` on the main server with `DASHBOARD=on`; the ingest routes keep
 * their one endpoint): `GET /api/v1/projects/:id/logs` answers a page
 * of a project's entries, newest first, as NDJSON (one object per line, the
 * fields of `deno task logs --json`) or with `format=csv` as CSV with a
 * header row; the next page's address is in `Link: <…>; rel="next"`.
 *
 * Credentials: `Authorization: Bearer <read token>` (db/tokens.ts), or a
 * dashboard session that may read the project (the explorer's download
 * button). A missing or bad token answers `401`, a project the token or the
 * account is not for `404`, a malformed parameter `400`; errors are JSON
 * `{"error": "…"}`. Parameters: `q` (the explorer's query syntax,
 * docs/query.md), `level` (comma-separated, any of them), `since` and
 * `until` (a duration back from now such as `15m`, or an ISO 8601 time;
 * `until` inclusive, as in `deno task logs`), `limit` (1 to 1000, default
 * 100), `cursor` (from a `Link`), `format` (`ndjson` or `csv`). A `q` that
 * ends with an aggregation (`| count by (time 1h, level)`, docs/query.md)
 * answers its rows instead, in the same formats, without `Link`. Reads go
 * through the query module's public functions only (db/query/mod.ts).
 *
 * A request holds one of its reader's query slots (dashboard/query_slots.ts)
 * until its answer's body is sent, not only while it is read: a page its
 * client leaves unread keeps its slot, and is ended after
 * `QuerySlots.unreadMs` of no reading, so the slots bound the pages held.
 *
 * @module
 */
import { getProject } from "../../db/projects.ts";
import { isIdForm } from "../../domain/ids.ts";
import {
  type Aggregation,
  andFilters,
  DEFAULT_QUERY_LIMIT,
  type Filter,
  InvalidQueryError,
  MAX_QUERY_LIMIT,
  parseSearch,
  type Pipe,
  QuerySyntaxError,
} from "../../db/query/mod.ts";
import { findReadToken, scopeOf } from "../../db/tokens.ts";
import { canRead } from "../../db/users.ts";
import {
  type DashApp,
  type DashboardDeps,
  type DashContext,
  PROJECT_ID,
} from "./common.ts";
import { DURATION_UNIT_MS } from "../../domain/duration.ts";
import { CSV_COLUMNS, rowsCsv } from "../../domain/csv.ts";
import { BODY_PIECE_CHARS, heldBody } from "../query_slots.ts";

/**
 * A `200` answer before it is sent: its text in parts (rows, in order) and
 * its headers, `Content-Type` among them.
 */
interface Answer {
  parts: string[];
  headers: Record<string, string>;
}

/** `Content-Type` of a CSV answer. */
const CSV_TYPE = "text/csv; charset=utf-8; header=present";

/** `Content-Type` of an NDJSON answer. */
const NDJSON_TYPE = "application/x-ndjson; charset=utf-8";

/** Thrown for a parameter the API cannot read; answered with `400`. */
export class ApiParameterError extends Error {
  override name = "ApiParameterError";
}

const DURATION = /^(\d{1,9})(ms|s|m|h|d|w)$/;

/**
 * Reads `since` or `until`: a duration back from `now` (`15m`, `2h`, `7d`)
 * or an ISO 8601 time.
 *
 * @example
 * ```ts
 * readTime("since", "15m", Date.UTC(2026, 0, 1)); // 15 minutes earlier
 * ```
 */
export function readTime(name: string, text: string, now: number): number {
  const duration = DURATION.exec(text);
  // A time a Date cannot hold (a duration back past the year -271821)
  // could not be written into the next page's link.
  const ms = duration
    ? now - Number(duration[1]) * DURATION_UNIT_MS[duration[2]!]!
    : /^\d{4}-\d{2}-\d{2}/.test(text)
    ? Date.parse(text)
    : NaN;
  if (!Number.isNaN(new Date(ms).getTime())) return ms;
  throw new ApiParameterError(
    `Cannot read "${name}" "${
      text.slice(0, 100)
    }": expected a duration such as "15m" or an ISO 8601 time such as "2026-01-01T10:00:00Z"`,
  );
}

function apiError(
  c: DashContext,
  status: 400 | 401 | 403 | 404 | 429,
  message: string,
): Response {
  if (status === 401) c.header("WWW-Authenticate", 'Bearer realm="logs"');
  return c.json({ error: message }, status);
}

/** The filter and page options of a request's parameters. */
function readParams(url: URL, now: number): {
  filter: Filter;
  pipe: Pipe | null;
  limit: number;
  cursor?: string;
  format: "ndjson" | "csv";
  since?: number;
  until?: number;
} {
  const params = url.searchParams;
  const q = params.get("q") ?? "";
  if (q.length > 4096) {
    throw new ApiParameterError(`Cannot read "q": longer than 4096 characters`);
  }
  let filter: Filter;
  let pipe: Pipe | null;
  try {
    ({ filter, pipe } = parseSearch(q));
  } catch (error) {
    if (!(error instanceof QuerySyntaxError)) throw error;
    throw new ApiParameterError(
      `Cannot parse "q" at column ${error.column}: ${error.detail}`,
    );
  }
  const extra: Filter = {};
  const levels = (params.get("level") ?? "").split(",").map((l) => l.trim())
    .filter((l) => l !== "");
  if (levels.length > 0) extra.levels = levels;
  const sinceText = params.get("since");
  const untilText = params.get("until");
  const since = sinceText ? readTime("since", sinceText, now) : undefined;
  const until = untilText ? readTime("until", untilText, now) : undefined;
  if (since !== undefined) extra.since = since;
  // Inclusive, as `deno task logs --until`; a filter's until is not.
  if (until !== undefined) extra.until = until + 1;
  const limitText = params.get("limit");
  const limit = limitText === null ? DEFAULT_QUERY_LIMIT : Number(limitText);
  if (
    !/^\d{1,4}$/.test(limitText ?? "1") || limit < 1 || limit > MAX_QUERY_LIMIT
  ) {
    throw new ApiParameterError(
      `Cannot read "limit" "${
        (limitText ?? "").slice(0, 20)
      }": expected a whole number from 1 to ${MAX_QUERY_LIMIT}`,
    );
  }
  const format = params.get("format") ?? "ndjson";
  if (format !== "ndjson" && format !== "csv") {
    throw new ApiParameterError(
      `Cannot read "format" "${
        format.slice(0, 20)
      }": expected "ndjson" or "csv"`,
    );
  }
  const cursor = params.get("cursor") ?? undefined;
  if (
    cursor !== undefined &&
    // After an entry (`n`, an id) or where a budget stopped (`N`, an id or
    // a time's prefix of one).
    !(/^[no]/.test(cursor) && isIdForm(cursor.slice(1)) ||
      /^[NO][0-9a-f]{1,28}$/.test(cursor))
  ) {
    throw new ApiParameterError(
      `Cannot read "cursor" "${
        cursor.slice(0, 40)
      }": expected the cursor of a previous page's Link`,
    );
  }
  return {
    filter: andFilters(filter, extra),
    pipe,
    limit,
    format,
    ...(cursor === undefined ? {} : { cursor }),
    ...(since === undefined ? {} : { since }),
    ...(until === undefined ? {} : { until }),
  };
}

/**
 * The address of the next page: the same parameters with the cursor, and
 * relative times fixed to the instants this page used, so that every page
 * reads the same window.
 */
function nextLink(
  url: URL,
  cursor: string,
  since: number | undefined,
  until: number | undefined,
): string {
  const next = new URL(url);
  next.searchParams.set("cursor", cursor);
  if (since !== undefined) {
    next.searchParams.set("since", new Date(since).toISOString());
  }
  if (until !== undefined) {
    next.searchParams.set("until", new Date(until).toISOString());
  }
  return `${next.pathname}${next.search}`;
}

/**
 * The rows of an aggregation as NDJSON (one object per row) or CSV; a count
 * the time budget cut short says how far back it searched in
 * `X-Searched-Back-To`, an estimate says so in `X-Estimate`, and rows cut
 * at the most answered give the number of groups in `X-Groups`.
 */
function rowsAnswer(
  { answer, format }: { answer: Aggregation; format: "ndjson" | "csv" },
): Answer {
  const headers: Record<string, string> = {};
  if (answer.searchedTo !== undefined) {
    headers["X-Searched-Back-To"] = new Date(answer.searchedTo).toISOString();
  }
  if (answer.estimate) headers["X-Estimate"] = "true";
  if (answer.more) headers["X-Groups"] = String(answer.groups);
  if (format === "csv") {
    return {
      parts: [rowsCsv(answer.columns, answer.rows)],
      headers: { ...headers, "Content-Type": CSV_TYPE },
    };
  }
  return {
    parts: answer.rows.map((row) => JSON.stringify(row) + "\n"),
    headers: { ...headers, "Content-Type": NDJSON_TYPE },
  };
}

/** The rows of the aggregation a request's `q` ends with. */
async function rowsOf(
  deps: DashboardDeps,
  projectId: string,
  params: { filter: Filter; pipe: Pipe | null; format: "ndjson" | "csv" },
): Promise<Answer> {
  const answer = await deps.reads.aggregate(projectId, {
    filter: params.filter,
    pipe: params.pipe!,
    budget: { clock: deps.now },
  });
  return rowsAnswer({ answer, format: params.format });
}

/** A page's rows as CSV (under its header row) or NDJSON. */
function entriesAnswer(
  rows: string[],
  csv: boolean,
  headers: Record<string, string>,
): Answer {
  if (csv) {
    rows.unshift(CSV_COLUMNS.join(",") + "\r\n");
    return { parts: rows, headers: { ...headers, "Content-Type": CSV_TYPE } };
  }
  return { parts: rows, headers: { ...headers, "Content-Type": NDJSON_TYPE } };
}

/**
 * Sends an answer, whose query holds `slot`: a body of more than
 * {@linkcode BODY_PIECE_CHARS} characters keeps it until the body is sent
 * whole, cancelled, left unread for the slots' `unreadMs` or not sent whole
 * within their `sendMs` ({@linkcode heldBody}); a smaller one, or the answer to `HEAD` (whose body
 * is dropped), gives it back now and is sent as one text.
 */
function sendAnswer(
  c: DashContext,
  deps: DashboardDeps,
  { parts, headers }: Answer,
  slot: () => void,
): Response {
  const chars = parts.reduce((sum, part) => sum + part.length, 0);
  if (chars <= BODY_PIECE_CHARS || c.req.method === "HEAD") {
    slot();
    return c.body(parts.join(""), 200, headers);
  }
  const { body, bytes } = heldBody(parts, slot, deps.querySlots);
  return c.body(body, 200, { ...headers, "Content-Length": String(bytes) });
}

/** Adds the read API. */
export function apiRoutes(app: DashApp, deps: DashboardDeps): void {
  const { kv } = deps;

  app.get(`/api/v1/projects/:id/logs`, async (c) => {
    const projectId = c.req.param("id");
    const authorization = c.req.header("authorization");
    let browser = false;
    let reader: string;
    let tokenProject: string | undefined;
    if (authorization !== undefined) {
      const bearer = /^Bearer[ ]+([^\s]+)[ ]*$/i.exec(authorization);
      const token = bearer ? await findReadToken(kv, bearer[1]!) : null;
      if (token === null) {
        return apiError(
          c,
          401,
          "Cannot read: the bearer token is malformed, unknown or revoked",
        );
      }
      if (token.projectId !== projectId) {
        return apiError(c, 404, `Cannot find project "${projectId}"`);
      }
      if (scopeOf(token) !== "read") {
        return apiError(
          c,
          403,
          `Cannot read: the token's scope is "${scopeOf(token)}"`,
        );
      }
      reader = `token:${token.id}`;
      tokenProject = projectId;
    } else {
      const session = c.get("session");
      if (session === null) {
        return apiError(
          c,
          401,
          'Cannot read: send "Authorization: Bearer <read token>"',
        );
      }
      if (!canRead(session.account, projectId)) {
        return apiError(c, 404, `Cannot find project "${projectId}"`);
      }
      browser = true;
      reader = `account:${session.account.email}`;
    }
    if (
      !PROJECT_ID.test(projectId) || await getProject(kv, projectId) === null
    ) {
      return apiError(c, 404, `Cannot find project "${projectId}"`);
    }
    const slot = deps.querySlots.take(reader, tokenProject);
    if (typeof slot === "string") {
      c.header("Retry-After", "1");
      return apiError(c, 429, slot);
    }
    let answer: Answer | Response;
    try {
      answer = await readPage(c, deps, projectId, browser);
    } catch (error) {
      slot();
      throw error;
    }
    if (answer instanceof Response) {
      slot();
      return answer;
    }
    return sendAnswer(c, deps, answer, slot);
  });
}

/**
 * A page of the read API for a reader allowed to read `projectId`, or the
 * error it is answered (`400`).
 */
async function readPage(
  c: DashContext,
  deps: DashboardDeps,
  projectId: string,
  browser: boolean,
): Promise<Answer | Response> {
  const url = new URL(c.req.url);
  let params;
  let page;
  try {
    params = readParams(url, deps.now());
    if (params.pipe) return await rowsOf(deps, projectId, params);
    page = await deps.reads.exportPage(projectId, {
      filter: params.filter,
      limit: params.limit,
      ...(params.cursor === undefined ? {} : { cursor: params.cursor }),
      ...(deps.queryBudget ? { budget: deps.queryBudget } : {}),
      csv: params.format === "csv",
    });
  } catch (error) {
    if (
      error instanceof ApiParameterError || error instanceof InvalidQueryError
    ) {
      return apiError(c, 400, error.message);
    }
    throw error;
  }
  const csv = params.format === "csv";
  const { rows, cursor } = page;
  const headers: Record<string, string> = {};
  if (cursor !== null) {
    headers["Link"] = `<${
      nextLink(url, cursor, params.since, params.until)
    }>; rel="next"`;
  }
  if (browser) {
    headers["Content-Disposition"] = `attachment; filename="logs-${
      projectId.replace(/[^\w-]/g, "")
    }.${csv ? "csv" : "ndjson"}"`;
  }
  return entriesAnswer(rows, csv, headers);
}

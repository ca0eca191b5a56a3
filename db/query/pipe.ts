/**
 * The aggregation pipe that may end a query (docs/query.md#aggregations):
 *
 * | pipe | answer |
 * |---|---|
 * | `Q \| count` | the number of matching entries |
 * | `Q \| count by (F, …)` | one row per combination of values, largest first |
 * | `Q \| top N F` | the N most frequent values of F, with count and share |
 * | `Q \| uniq F` | the number of distinct values of F |
 *
 * A field F is `level`, `auth`, `origin`, `appid` or a path under `data.`,
 * `context.` or `device.`; in `count by`, `time 1m|5m|15m|1h|1d` buckets by
 * receipt time. Errors are {@linkcode QuerySyntaxError}s naming the column.
 *
 * @module
 */
import { QuerySyntaxError } from "./syntax.ts";

/** A grouping of `count by`: a field path, or receipt time in buckets. */
export type GroupBy =
  | { kind: "field"; path: string }
  | { kind: "time"; ms: number; label: string };

/** An aggregation; `column` is where its `|` stands (1-based). */
export type Pipe =
  | { op: "count"; by: GroupBy[]; column: number }
  | { op: "top"; n: number; field: string; column: number }
  | { op: "uniq"; field: string; column: number };

/** Most values `top N` may ask for (docs/limits.md). */
export const MAX_TOP = 1000;
/** Most groupings of one `count by` (docs/limits.md). */
export const MAX_GROUP_BY = 4;
/** The time buckets `count by (time …)` accepts. */
export const TIME_BUCKETS_MS: Readonly<Record<string, number>> = {
  "1m": 60_000,
  "5m": 300_000,
  "15m": 900_000,
  "1h": 3_600_000,
  "1d": 86_400_000,
};
const TOP_FIELDS = new Set(["level", "auth", "origin", "appid"]);
const PATH = /^(?:data|context|device)(?:\.[^\s.,()|]+)+$/;
const FIELDS_HINT =
  "level, auth, origin, appid, or a path under data., context. or device.";

/**
 * Whether `text` is a field a pipe may read: `level`, `auth`, `origin`,
 * `appid` or a path under `data.`, `context.` or `device.`.
 *
 * @example
 * ```ts
 * isPipeField("context.service"); // true
 * ```
 */
export function isPipeField(text: string): boolean {
  return TOP_FIELDS.has(text) || PATH.test(text);
}

/** A token of the pipe: a word or one of `(`, `)`, `,`, `|`. */
interface Token {
  text: string;
  column: number;
}

function tokenize(query: string, from: number): Token[] {
  const tokens: Token[] = [];
  for (let i = from; i < query.length;) {
    const c = query[i]!;
    if (/\s/.test(c)) {
      i++;
    } else if ("(),|".includes(c)) {
      tokens.push({ text: c, column: i + 1 });
      i++;
    } else {
      const start = i;
      while (i < query.length && !/[\s(),|]/.test(query[i]!)) i++;
      tokens.push({ text: query.slice(start, i), column: start + 1 });
    }
  }
  return tokens;
}

/** Checks a field a pipe reads; returns its path. */
function readField(token: Token | undefined, end: number, what: string) {
  if (token === undefined) {
    throw new QuerySyntaxError(end, `expected a field after ${what}`);
  }
  if (!TOP_FIELDS.has(token.text) && !PATH.test(token.text)) {
    throw new QuerySyntaxError(
      token.column,
      `"${token.text}" is not a field to aggregate (expected ${FIELDS_HINT})`,
    );
  }
  return token.text;
}

/**
 * Parses the pipe whose `|` is at `at` (0-based), to the end of `query`.
 *
 * @example
 * ```ts
 * parsePipe("level:error | uniq context.userId", 12); // { op: "uniq", field: "context.userId", column: 13 }
 * ```
 */
export function parsePipe(query: string, at: number): Pipe {
  const column = at + 1;
  const tokens = tokenize(query, at + 1);
  const end = query.length + 1;
  let i = 0;
  const next = () => tokens[i++];
  const op = next();
  if (op === undefined || !["count", "top", "uniq"].includes(op.text)) {
    throw new QuerySyntaxError(
      op?.column ?? end,
      `expected count, top or uniq after "|"`,
    );
  }
  let pipe: Pipe;
  if (op.text === "uniq") {
    pipe = { op: "uniq", field: readField(next(), end, "uniq"), column };
  } else if (op.text === "top") {
    const n = next();
    if (!n || !/^\d{1,6}$/.test(n.text) || +n.text < 1 || +n.text > MAX_TOP) {
      throw new QuerySyntaxError(
        n?.column ?? end,
        `expected a number from 1 to ${MAX_TOP} after top`,
      );
    }
    pipe = {
      op: "top",
      n: Number(n.text),
      field: readField(next(), end, `top ${n.text}`),
      column,
    };
  } else {
    pipe = { op: "count", by: [], column };
    if (tokens[i]?.text === "by") {
      i++;
      const paren = tokens[i]?.text === "(";
      if (paren) i++;
      for (;;) {
        pipe.by.push(readGroup(tokens[i], tokens[i + 1], end));
        i += pipe.by.at(-1)!.kind === "time" ? 2 : 1;
        if (!paren || tokens[i]?.text !== ",") break;
        i++;
      }
      if (paren) {
        if (tokens[i]?.text !== ")") {
          throw new QuerySyntaxError(
            tokens[i]?.column ?? end,
            `expected "," or ")" in count by (…)`,
          );
        }
        i++;
      }
      if (pipe.by.length > MAX_GROUP_BY) {
        throw new QuerySyntaxError(
          tokens[i - 1]!.column,
          `count by takes at most ${MAX_GROUP_BY} fields`,
        );
      }
    }
  }
  const extra = tokens[i];
  if (extra !== undefined) {
    throw new QuerySyntaxError(
      extra.column,
      extra.text === "|"
        ? "only one aggregation may end a query"
        : `unexpected "${extra.text}" after the aggregation`,
    );
  }
  return pipe;
}

/** One grouping of `count by`: `time 1h` (two tokens) or a field. */
function readGroup(
  token: Token | undefined,
  after: Token | undefined,
  end: number,
): GroupBy {
  if (token?.text !== "time") {
    return { kind: "field", path: readField(token, end, "count by") };
  }
  const ms = after === undefined ? undefined : TIME_BUCKETS_MS[after.text];
  if (ms === undefined) {
    throw new QuerySyntaxError(
      after?.column ?? end,
      `expected a bucket after time: one of ${
        Object.keys(TIME_BUCKETS_MS).join(", ")
      }`,
    );
  }
  return { kind: "time", ms, label: after!.text };
}

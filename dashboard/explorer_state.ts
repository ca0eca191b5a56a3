/**
 * The explorer's state and its URL: every choice of the view (query, level
 * chips, time range, expanded entry, context view, page, paused tail) lives
 * in the query string, so a reload or a shared link shows the same view.
 * This module reads that state, writes it back in one canonical order, and
 * turns it into the filter handed to the query functions.
 *
 * @module
 */
import {
  type Filter,
  isPipeField,
  parseQuery,
  parseSearch,
  type Pipe,
} from "./source.ts";
import { idTime, isIdForm } from "../domain/ids.ts";

/** Time presets, newest entries included. */
export const RANGES = {
  "15m": 15 * 60_000,
  "1h": 3_600_000,
  "24h": 86_400_000,
  "7d": 7 * 86_400_000,
} as const;

/** A preset's name. */
export type RangeName = keyof typeof RANGES;

/** Preset used when the URL names none. */
export const DEFAULT_RANGE: RangeName = "24h";

/** The state of one explorer view. */
export interface ExplorerState {
  /** Query text as typed. */
  q: string;
  /** Levels picked with the chips (any of them). */
  levels: string[];
  /** Relative time preset, used when `since` is not set. */
  range: RangeName;
  /** Absolute start, Unix ms (inclusive). */
  since?: number;
  /** Absolute end, Unix ms (exclusive). */
  until?: number;
  /** Id of the expanded entry. */
  open?: string;
  /** Id of the entry whose surroundings are shown. */
  around?: string;
  /** Where the list starts: a cursor of the query functions, opaque here. */
  cursor?: string;
  /** Live tail paused. */
  paused: boolean;
  /** Fields pinned to the facets, beside the standard ones. @default {[]} */
  facets?: string[];
  /** The field whose top values split the histogram; by level when unset. */
  split?: string;
}

/** Fields a URL may pin to the facets at most. */
export const MAX_PINNED_FACETS = 8;
/** Characters of a pinned or split field's path at most. */
export const MAX_FIELD_CHARS = 200;

/** Whether `text` names a field the facets and the split can count. */
function isField(text: string): boolean {
  return text.length <= MAX_FIELD_CHARS && isPipeField(text);
}

/** Latest time a URL may name: the end of year 9999. */
const MAX_TIME = Date.UTC(9999, 11, 31, 23, 59, 59, 999);
const CURSOR = /^[\w.~:-]{1,512}$/;
const LEVEL = /^[a-z][a-z0-9_-]{0,31}$/;
/**
 * Level chips kept at most: every link of the page carries them, so that
 * the list weighs about as much as the longest query text.
 */
export const MAX_LEVEL_CHIPS = 64;
const TIME =
  /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,3}))?)?)?Z?$/;

/**
 * Reads a time as typed in the URL: ISO 8601 in UTC, to the day, minute,
 * second or millisecond (`2026-01-15`, `2026-01-15T09:30`, `…Z`). `null` when
 * it is not one.
 *
 * @example
 * ```ts
 * parseUtc("2026-01-15T09:30"); // 1768469400000
 * ```
 */
export function parseUtc(text: string): number | null {
  const m = TIME.exec(text.trim());
  if (!m) return null;
  const [, y, mo, d, h = "0", mi = "0", s = "0", ms = "0"] = m;
  const value = Date.UTC(+y!, +mo! - 1, +d!, +h, +mi, +s, +ms.padEnd(3, "0"));
  // Date.UTC moves a 13th month or a 31st of April on, and years below 100
  // to the 1900s: only a time that reads back the same is one.
  if (
    !Number.isFinite(value) || value < 0 ||
    new Date(value).toISOString().slice(0, 19) !==
      `${y}-${mo}-${d}T${h.padStart(2, "0")}:${mi.padStart(2, "0")}:${
        s.padStart(2, "0")
      }`
  ) {
    return null;
  }
  return value;
}

/**
 * Whether `text` is an entry id a query can look for: 28 hex digits whose
 * time is no later than the year 9999.
 *
 * @example
 * ```ts
 * isEntryId("0193a1b2c3d4" + "0".repeat(16)); // true
 * isEntryId("f".repeat(28)); // false
 * ```
 */
export function isEntryId(text: string): boolean {
  return isIdForm(text) && idTime(text) <= MAX_TIME;
}

/** A time as written in URLs and UTC inputs: `2026-01-15T09:30:00.000Z`. */
export function formatUtc(ms: number): string {
  return new Date(ms).toISOString();
}

/**
 * Reads the state from a query string; values that make no sense are
 * dropped and named in `problems`.
 *
 * @example
 * ```ts
 * const { state } = readState(new URL(req.url).searchParams);
 * ```
 */
export function readState(
  params: URLSearchParams,
): { state: ExplorerState; problems: string[] } {
  const problems: string[] = [];
  const state: ExplorerState = {
    q: (params.get("q") ?? "").slice(0, 2000),
    levels: [],
    range: DEFAULT_RANGE,
    paused: params.get("live") === "off",
  };
  const pinned: string[] = [];
  for (const field of params.getAll("facet")) {
    if (pinned.length === MAX_PINNED_FACETS) break;
    if (!isField(field)) {
      problems.push(
        `Cannot pin "${
          field.slice(0, 100)
        }" to the facets: expected level, auth, origin, appid, or a path under data., context. or device.`,
      );
    } else if (!pinned.includes(field)) pinned.push(field);
  }
  if (pinned.length > 0) state.facets = pinned;
  const split = params.get("split");
  if (split !== null && split !== "" && split !== "level") {
    if (isField(split)) state.split = split;
    else {
      problems.push(
        `Cannot split the histogram by "${
          split.slice(0, 100)
        }": expected a field such as context.service`,
      );
    }
  }
  for (const level of (params.get("level") ?? "").split(",")) {
    if (state.levels.length === MAX_LEVEL_CHIPS) break;
    if (LEVEL.test(level) && !state.levels.includes(level)) {
      state.levels.push(level);
    }
  }
  const range = params.get("range");
  if (range !== null && range !== "") {
    if (Object.hasOwn(RANGES, range)) state.range = range as RangeName;
    else {problems.push(
        `Cannot use time range "${range}": expected 15m, 1h, 24h or 7d`,
      );}
  }
  for (const name of ["since", "until"] as const) {
    const text = params.get(name);
    if (text === null || text === "") continue;
    const value = parseUtc(text);
    if (value === null) {
      problems.push(
        `Cannot read "${name}" time "${text}": expected UTC such as 2026-01-15T09:30`,
      );
    } else {
      state[name] = value;
    }
  }
  if (
    state.since !== undefined && state.until !== undefined &&
    state.until <= state.since
  ) {
    problems.push(`Cannot show a time range that ends before it starts`);
    delete state.until;
  }
  for (const name of ["open", "around"] as const) {
    const value = params.get(name);
    if (value !== null && isEntryId(value)) state[name] = value;
  }
  // Cursors are opaque to the dashboard: any short URL-safe text.
  const cursor = params.get("cursor");
  if (cursor !== null && CURSOR.test(cursor)) state.cursor = cursor;
  return { state, problems };
}

/**
 * Writes a state as a query string in canonical order, leaving defaults out.
 *
 * @example
 * ```ts
 * stateQuery({ ...state, levels: ["error"] }); // "?level=error"
 * ```
 */
export function stateQuery(state: ExplorerState): string {
  const params = new URLSearchParams();
  if (state.q !== "") params.set("q", state.q);
  if (state.levels.length > 0) params.set("level", state.levels.join(","));
  if (state.since !== undefined) params.set("since", formatUtc(state.since));
  if (state.until !== undefined) params.set("until", formatUtc(state.until));
  if (state.since === undefined && state.range !== DEFAULT_RANGE) {
    params.set("range", state.range);
  }
  if (state.around !== undefined) params.set("around", state.around);
  if (state.cursor !== undefined) params.set("cursor", state.cursor);
  if (state.open !== undefined) params.set("open", state.open);
  if (state.paused) params.set("live", "off");
  for (const field of state.facets ?? []) params.append("facet", field);
  if (state.split !== undefined) params.set("split", state.split);
  const text = params.toString();
  return text === "" ? "" : `?${text}`;
}

/**
 * The time window a state shows at `now`, and whether it includes the
 * newest entries (then live tail may run).
 */
export function timeWindow(
  state: ExplorerState,
  now: number,
): { since: number; until: number; live: boolean } {
  const until = state.until ?? now + 1;
  const since = state.since ?? until - RANGES[state.range];
  return {
    since,
    until,
    live: state.until === undefined && state.cursor === undefined &&
      state.around === undefined,
  };
}

/**
 * The filter a state asks for at `now`: the parsed query, the chips'
 * levels and the time window. Throws `QuerySyntaxError` for a malformed query.
 */
export function stateFilter(state: ExplorerState, now: number): Filter {
  return stateSearch(state, now, false).filter;
}

/**
 * The filter a state asks for at `now`, as {@linkcode stateFilter}, and the
 * aggregation its query ends with (`null` when none). Throws
 * `QuerySyntaxError` for a malformed query, and for a pipe unless
 * `pipes`.
 */
export function stateSearch(
  state: ExplorerState,
  now: number,
  pipes = true,
): { filter: Filter; pipe: Pipe | null } {
  const { filter, pipe } = pipes
    ? parseSearch(state.q)
    : { filter: parseQuery(state.q), pipe: null };
  if (state.levels.length > 0) {
    filter.levels = filter.levels
      ? filter.levels.filter((l) => state.levels.includes(l))
      : [...state.levels];
  }
  const { since, until, live } = timeWindow(state, now);
  filter.since = Math.max(filter.since ?? since, since);
  if (!live) filter.until = Math.min(filter.until ?? until, until);
  return { filter, pipe };
}

/**
 * The query text before its pipe: what a row of an aggregation narrows.
 *
 * @example
 * ```ts
 * queryBeforePipe("level:error | top 5 device.os", 13); // "level:error"
 * ```
 */
export function queryBeforePipe(q: string, pipeColumn: number): string {
  return q.slice(0, pipeColumn - 1).trim();
}

/**
 * A query term that selects (or excludes) entries whose field `path` has
 * `value`; the value is quoted when it holds spaces or quotes.
 *
 * @example
 * ```ts
 * fieldTerm("context.userId", "u 42", true); // '-context.userId:"u 42"'
 * ```
 */
export function fieldTerm(
  path: string,
  value: string,
  exclude = false,
): string {
  const plain = value !== "" && value !== "*" && !/[\s"\\]/.test(value);
  const written = plain
    ? value
    : `"${value.replaceAll("\\", "\\\\").replaceAll('"', '\\"')}"`;
  return `${exclude ? "-" : ""}${path}:${written}`;
}

/** `q` with `term` added (AND), or unchanged when it is already there. */
export function addTerm(q: string, term: string): string {
  const trimmed = q.trim();
  if (trimmed.split(/\s+/).includes(term)) return trimmed;
  return trimmed === "" ? term : `${trimmed} ${term}`;
}

/**
 * Filters: what a query asks for, the exact check of one entry, and what a
 * filter implies for text that has not been parsed yet (a line of JSON) and
 * for a chunk that has not been read (its summary and Bloom filter). The
 * implications are necessary conditions only: the exact check decides.
 *
 * Levels rank info < warning < error < critical; custom levels rank below
 * info, so a minimum level never admits them.
 *
 * @module
 */
import { type LogRecord, STANDARD_LEVELS } from "../../domain/entry.ts";
import { fingerprintOf } from "../../domain/fingerprint.ts";
import { type BloomHash, bloomHash } from "../storage/bloom.ts";
import type { ChunkSummary } from "../storage/chunk.ts";
import {
  containsTerm,
  fieldText,
  forEachText,
  pairIndexed,
  resolvePath,
  termTokens,
  TEXT_MAX_DEPTH,
  TEXT_ROOTS,
} from "../storage/text.ts";

/** A parsed filter; every part optional; parts combine with AND. */
export interface Filter {
  /** Unix ms, inclusive. */
  since?: number;
  /** Unix ms, exclusive. */
  until?: number;
  /** Any of these levels. */
  levels?: string[];
  /** This standard level or a more severe one. */
  minLevel?: string;
  /** Full-text terms, lower-cased; each must match (see db/storage/text.ts). */
  text?: string[];
  /** Full-text terms no entry may match. */
  notText?: string[];
  /** Field equality, inequality and presence on dotted paths. */
  fields?: FieldTerm[];
}

/**
 * A condition on one field. Paths are dotted (`context.userId`, `device.os`,
 * `data.status`, `auth`, `origin`, `appid`, `level`, `id`); values compare
 * as text (see `fieldText`: 42 matches "42"). `neq` also admits entries
 * without the field.
 */
export type FieldTerm =
  | { path: string; op: "eq" | "neq"; value: string }
  | { path: string; op: "exists" | "missing" };

/** Thrown for options a query cannot run with (a bad cursor, level, range). */
export class InvalidQueryError extends Error {
  override name = "InvalidQueryError";
}

/** Rank of a level: its index among the standard levels, -1 for custom ones. */
export function levelRank(level: string): number {
  return (STANDARD_LEVELS as readonly string[]).indexOf(level);
}

/**
 * Merges two filters (AND).
 *
 * @example
 * ```ts
 * andFilters(parseQuery("level:error"), { since: Date.now() - 3_600_000 });
 * ```
 */
export function andFilters(a: Filter, b: Filter): Filter {
  const out: Filter = {};
  const since = Math.max(a.since ?? -Infinity, b.since ?? -Infinity);
  if (since > -Infinity) out.since = since;
  const until = Math.min(a.until ?? Infinity, b.until ?? Infinity);
  if (until < Infinity) out.until = until;
  if (a.levels && b.levels) {
    out.levels = a.levels.filter((l) => b.levels!.includes(l));
  } else if (a.levels ?? b.levels) out.levels = [...(a.levels ?? b.levels)!];
  const minLevel = [a.minLevel, b.minLevel].filter((l) => l !== undefined)
    .sort((x, y) => levelRank(y!) - levelRank(x!))[0];
  if (minLevel !== undefined) out.minLevel = minLevel;
  for (const part of ["text", "notText"] as const) {
    const list = [...(a[part] ?? []), ...(b[part] ?? [])];
    if (list.length > 0) out[part] = list;
  }
  const fields = [...(a.fields ?? []), ...(b.fields ?? [])];
  if (fields.length > 0) out.fields = fields;
  return out;
}

/** Text that must occur in an entry's JSON line (one of the alternatives). */
export interface Needle {
  /** Search the lower-cased line. */
  lower: boolean;
  alternatives: string[];
}

/** A filter prepared for many checks. */
export interface CompiledFilter {
  filter: Filter;
  /** The exact check. */
  test(record: LogRecord): boolean;
  /** Whether an entry of this level may match; `null` when any may. */
  levelOk: ((level: string) => boolean) | null;
  /** Texts every matching entry's JSON line contains. */
  needles: Needle[];
  /** Bloom members every matching chunk holds. */
  probes: BloomHash[];
  /** An `id:` equality, which narrows the range to one id. */
  id?: string;
  /** Whether a chunk with this summary may hold a match. */
  summaryMayMatch(summary: ChunkSummary): boolean;
}

/** Text of a string inside JSON quotes, as `JSON.stringify` writes it. */
function jsonInner(text: string): string {
  return JSON.stringify(text).slice(1, -1);
}

function compileLevels(
  filter: Filter,
): ((level: string) => boolean) | null {
  const checks: ((level: string) => boolean)[] = [];
  if (filter.levels) {
    const set = new Set(filter.levels);
    checks.push((l) => set.has(l));
  }
  if (filter.minLevel !== undefined) {
    const min = levelRank(filter.minLevel);
    if (min < 0) {
      throw new InvalidQueryError(
        `Cannot filter by minimum level "${filter.minLevel}": expected one of ${
          STANDARD_LEVELS.join(", ")
        }`,
      );
    }
    checks.push((l) => levelRank(l) >= min);
  }
  for (const term of filter.fields ?? []) {
    if (term.path !== "level") continue;
    if (term.op === "eq") checks.push((l) => l === term.value);
    else if (term.op === "neq") checks.push((l) => l !== term.value);
    else if (term.op === "missing") checks.push(() => false);
  }
  if (checks.length === 0) return null;
  return (level) => checks.every((check) => check(level));
}

/**
 * Whether a field whose text is `text` (`undefined`: absent) meets `term`,
 * for a record's field and a column's value alike.
 */
export function termHolds(term: FieldTerm, text: string | undefined): boolean {
  switch (term.op) {
    case "eq":
      return text === term.value;
    case "neq":
      return text !== term.value;
    case "exists":
      return text !== undefined;
    case "missing":
      return text === undefined;
  }
}

/**
 * `lowered` with every final sigma (ς) made σ: lower-casing a whole line
 * writes Σ as ς after an escape's letter (`\nΣ`) where the value alone
 * gives σ, so needles and the lines they are looked for in both fold it.
 */
export function foldSigma(lowered: string): string {
  return lowered.replaceAll("ς", "σ");
}

/** Values a field may hold as a JSON literal, which no text index holds. */
const LITERALS: ReadonlySet<string> = new Set(["true", "false", "null"]);

/**
 * Whether an entry whose field at `path` equals `value` surely holds the
 * value's words as searchable text (so a chunk without them is skipped):
 * not for an object or a list, nor a value a boolean or `null` may be, nor a
 * field deeper than text is indexed.
 */
function probesText(path: string, value: string): boolean {
  const segments = path.split(".");
  return TEXT_ROOTS.has(segments[0]!) && !/^[[{]/.test(value) &&
    !LITERALS.has(value) && segments.length - 1 <= TEXT_MAX_DEPTH;
}

/**
 * Prepares a filter: the exact check and what it implies before parsing.
 *
 * @example
 * ```ts
 * const compiled = compileFilter(parseQuery("timeout level:error"));
 * compiled.test(record);
 * ```
 */
export function compileFilter(filter: Filter): CompiledFilter {
  const levelOk = compileLevels(filter);
  const text = (filter.text ?? []).map((t) => t.toLowerCase());
  const notText = (filter.notText ?? []).map((t) => t.toLowerCase());
  const fields = filter.fields ?? [];
  const needles: Needle[] = [];
  const probes: BloomHash[] = [];
  for (const term of text) {
    needles.push({ lower: true, alternatives: [foldSigma(jsonInner(term))] });
    for (const token of termTokens(term)) probes.push(bloomHash(token));
  }
  let id: string | undefined;
  for (const term of fields) {
    if (term.op !== "eq" || term.path === "fingerprint") continue;
    if (term.path === "id") id = term.value;
    const inner = jsonInner(term.value);
    needles.push({
      lower: false,
      alternatives: inner === term.value ? [inner] : [inner, term.value],
    });
    if (pairIndexed(term.path, term.value)) {
      probes.push(bloomHash(`${term.path}=${term.value}`));
    } else if (probesText(term.path, term.value)) {
      for (const token of termTokens(term.value)) probes.push(bloomHash(token));
    }
  }
  const test = (record: LogRecord): boolean => {
    if (filter.since !== undefined && record.receivedAt < filter.since) {
      return false;
    }
    if (filter.until !== undefined && record.receivedAt >= filter.until) {
      return false;
    }
    if (levelOk && !levelOk(record.level)) return false;
    if (text.length > 0 || notText.length > 0) {
      const values: string[] = [];
      forEachText(record, (value) => values.push(value.toLowerCase()));
      const found = (term: string) => values.some((v) => containsTerm(v, term));
      if (!text.every(found) || notText.some(found)) return false;
    }
    // A record's fingerprint is computed once, however many terms name it.
    let fingerprint: string | undefined;
    const fingerprintOfRecord = () =>
      fingerprint ??= fingerprintOf(record).fingerprint;
    return fields.every((term) =>
      termHolds(
        term,
        term.path === "fingerprint"
          ? fingerprintOfRecord()
          : fieldText(resolvePath(record, term.path)),
      )
    );
  };
  return {
    filter,
    test,
    levelOk,
    needles,
    probes,
    ...(id === undefined ? {} : { id }),
    summaryMayMatch(summary) {
      if (id !== undefined && (id < summary.firstId || id > summary.lastId)) {
        return false;
      }
      return levelOk === null ||
        Object.keys(summary.levels).some((level) => levelOk(level));
    },
  };
}

const compiledCache = new WeakMap<Filter, CompiledFilter>();

/**
 * Whether a record matches (the exact check; summaries only skip chunks).
 *
 * @example
 * ```ts
 * matches(record, parseQuery('level>=warning "payment failed"'));
 * ```
 */
export function matches(record: LogRecord, filter: Filter): boolean {
  let compiled = compiledCache.get(filter);
  if (!compiled) {
    compiled = compileFilter(filter);
    compiledCache.set(filter, compiled);
  }
  return compiled.test(record);
}

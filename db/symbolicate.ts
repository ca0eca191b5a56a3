/**
 * Resolving stored or incoming stacks through a project's source maps
 * (docs/errors.md#source-maps). {@linkcode SourceMapResolver} keeps what the
 * consumer needs between batches: each project's index of releases with
 * maps, trusted for {@linkcode INDEX_TTL_MS}, so an entry of a release
 * without maps costs one lookup in memory; and parsed maps, up to
 * {@linkcode MAX_CACHED_MAP_BYTES} of the memory they take (estimated by
 * `parseSourceMap`: their decoded mappings take 8 to 56 times their JSON),
 * the least recently used going first. The maps one stack is resolved
 * through are bounded the same: once those it holds take the budget, a map
 * not kept is not parsed for it. Pages and the CLI resolve an entry stored
 * before its map arrived when they show it ({@linkcode shownStack}).
 *
 * @module
 */
import {
  type LogRecord,
  type ResolvedStack,
  type ShownFrame,
} from "../domain/entry.ts";
import {
  isRuntimeFrame,
  parseStack,
  type StackFrame,
} from "../domain/stack.ts";
import {
  type ParsedMap,
  parseSourceMap,
  resolveFrames,
  unresolvedFrames,
} from "../domain/symbolicate.ts";
import { encodeRecordLine } from "./storage/lines.ts";
import { releaseOf } from "./releases.ts";
import { ThreadStalledError } from "./own_thread.ts";
import { getEntry } from "./query/query.ts";
import {
  listSourceMaps,
  mapMatches,
  readSourceMapIndex,
  readSourceMapText,
  type SourceMapIndex,
  type SourceMapRecord,
} from "./sourcemaps.ts";

/** How long the consumer trusts a project's index of releases with maps. */
export const INDEX_TTL_MS = 5_000;
/**
 * Bytes of memory the parsed maps a resolver keeps take at most, as
 * `parseSourceMap` estimates them (a map at every bound of an upload about
 * 230 MB; a 5.3 MB map of a minified bundle 39 MB); also the most the maps
 * of one stack may take before a further map is left unparsed.
 */
export const MAX_CACHED_MAP_BYTES = 256_000_000;
/**
 * Time one project's maps may be parsed in for the entries of each
 * {@linkcode PARSE_WINDOW_MS}: parsing runs on a thread every project
 * shares (the query thread, or the server's), and a sender whose stacks name
 * more maps than are kept would have them parsed again for every entry. Past it a frame waits for the
 * page that shows it (which resolves it then).
 */
export const PARSE_BUDGET_MS = 1_000;
/** The window {@linkcode PARSE_BUDGET_MS} is counted over. */
export const PARSE_WINDOW_MS = 10_000;

/** Options of {@linkcode SourceMapResolver}. */
export interface SourceMapResolverOptions {
  /** @default Date.now */
  now?: () => number;
  /** How long an index read is trusted. @default {@linkcode INDEX_TTL_MS} */
  indexTtlMs?: number;
  /** @default {@linkcode MAX_CACHED_MAP_BYTES} */
  maxBytes?: number;
  /** @default {@linkcode PARSE_BUDGET_MS} */
  parseBudgetMs?: number;
  /** Measures the time parsing takes. @default {performance.now} */
  clock?: () => number;
  /**
   * Resolves the stacks of records whose release has maps elsewhere (the
   * query thread, db/query/thread.ts), one answer per record in order.
   * @default {@linkcode SourceMapResolver.resolveMany} in this thread
   */
  resolveStacks?: ResolveStacks;
}

/** Resolves the stacks of `records` of a project, one answer each, in order. */
export type ResolveStacks = (
  projectId: string,
  records: LogRecord[],
) => Promise<(ResolvedStack | null)[]>;

/** The key a parsed map is kept by. */
function keyOf(projectId: string, map: SourceMapRecord): string {
  return `${projectId}\0${map.id}`;
}

/**
 * Why a frame is not resolved when the maps of its stack's other frames
 * already take `maxBytes` of memory.
 */
function stackMapsWhy(maxBytes: number): string {
  return `the stack's other maps take the ${maxBytes} bytes of memory given to maps`;
}

/** Why a frame is not resolved when its project's parsing time is spent. */
const PARSE_WHY = "its project's maps took their parsing time";

/** Resolves stacks through a project's maps, with caches for the consumer. */
export class SourceMapResolver {
  #kv: Deno.Kv;
  #now: () => number;
  #ttl: number;
  #maxBytes: number;
  #indexes = new Map<string, { at: number; index: SourceMapIndex }>();
  #lists = new Map<string, SourceMapRecord[]>();
  #maps = new Map<string, { parsed: ParsedMap; bytes: number }>();
  #bytes = 0;
  #parseBudgetMs: number;
  #clock: () => number;
  #resolveStacks: ResolveStacks;
  /** Parsing time spent per project in its current window. */
  #parsing = new Map<string, { since: number; ms: number }>();

  constructor(kv: Deno.Kv, options: SourceMapResolverOptions = {}) {
    this.#kv = kv;
    this.#now = options.now ?? Date.now;
    this.#ttl = options.indexTtlMs ?? INDEX_TTL_MS;
    this.#maxBytes = options.maxBytes ?? MAX_CACHED_MAP_BYTES;
    this.#parseBudgetMs = options.parseBudgetMs ?? PARSE_BUDGET_MS;
    this.#clock = options.clock ?? (() => performance.now());
    this.#resolveStacks = options.resolveStacks ??
      ((projectId, records) => this.resolveMany(projectId, records));
  }

  /** A project's index of maps, read again once older than the TTL. */
  async index(projectId: string): Promise<SourceMapIndex> {
    const now = this.#now();
    const cached = this.#indexes.get(projectId);
    if (cached && now - cached.at < this.#ttl) return cached.index;
    const { index } = await readSourceMapIndex(this.#kv, projectId);
    this.#indexes.set(projectId, { at: now, index });
    for (const key of this.#lists.keys()) {
      if (key.startsWith(`${projectId}\0`)) this.#lists.delete(key);
    }
    if (this.#indexes.size > 10_000) this.#indexes.clear();
    return index;
  }

  async #list(projectId: string, release: string): Promise<SourceMapRecord[]> {
    const key = `${projectId}\0${release}`;
    let list = this.#lists.get(key);
    if (list === undefined) {
      list = await listSourceMaps(this.#kv, projectId, release);
      this.#lists.set(key, list);
    }
    return list;
  }

  /**
   * The maps kept and the bytes of memory they take, as estimated.
   *
   * @example
   * ```ts
   * const { maps, bytes } = resolver.cached;
   * ```
   */
  get cached(): { maps: number; bytes: number } {
    return { maps: this.#maps.size, bytes: this.#bytes };
  }

  /**
   * `map` as kept, else read and parsed; why not when it is not kept and
   * the maps the stack holds already take `held` bytes (the budget or
   * more), or its project spent its parsing time.
   */
  async #parsed(
    projectId: string,
    map: SourceMapRecord,
    held: number,
  ): Promise<ParsedMap | string> {
    const key = keyOf(projectId, map);
    const cached = this.#maps.get(key);
    if (cached) {
      this.#keep(key, cached.parsed);
      return cached.parsed;
    }
    if (held >= this.#maxBytes) return stackMapsWhy(this.#maxBytes);
    const now = this.#now();
    let spent = this.#parsing.get(projectId);
    if (spent === undefined || now - spent.since >= PARSE_WINDOW_MS) {
      spent = { since: now, ms: 0 };
      this.#parsing.set(projectId, spent);
      if (this.#parsing.size > 10_000) this.#parsing.clear();
    }
    if (spent.ms >= this.#parseBudgetMs) return PARSE_WHY;
    const text = await readSourceMapText(this.#kv, projectId, map);
    const started = this.#clock();
    try {
      const parsed = parseSourceMap(text);
      this.#keep(key, parsed);
      return parsed;
    } finally {
      spent.ms += this.#clock() - started;
    }
  }

  /**
   * Keeps `parsed` as the most recently used, counted at the bytes it takes
   * now (its source lines add to them as they are split), then lets the
   * least recently used go past the budget. A map larger than the budget
   * is not kept.
   */
  #keep(key: string, parsed: ParsedMap): void {
    const old = this.#maps.get(key);
    if (old !== undefined) {
      this.#maps.delete(key);
      this.#bytes -= old.bytes;
    }
    if (parsed.bytes > this.#maxBytes) return;
    this.#maps.set(key, { parsed, bytes: parsed.bytes });
    this.#bytes += parsed.bytes;
    for (const [other, { bytes }] of this.#maps) {
      if (this.#bytes <= this.#maxBytes) break;
      this.#maps.delete(other);
      this.#bytes -= bytes;
    }
  }

  /**
   * The map of each frame's file, or why there is none, and the maps used
   * by their keys: parsed one at a time while those the stack holds take
   * less than the budget.
   */
  async #mapsOf(
    projectId: string,
    release: string,
    frames: StackFrame[],
  ): Promise<{
    found: Map<string, ParsedMap | string>;
    used: Map<string, ParsedMap>;
  }> {
    const maps = await this.#list(projectId, release);
    const found = new Map<string, ParsedMap | string>();
    const used = new Map<string, ParsedMap>();
    let held = 0;
    for (const frame of frames) {
      if (found.has(frame.file) || isRuntimeFrame(frame)) continue;
      const map = maps.find((m) => mapMatches(m.url, frame.file));
      if (map === undefined) {
        found.set(
          frame.file,
          `no source map of release "${release}" for "${frame.file}"`,
        );
        continue;
      }
      const key = keyOf(projectId, map);
      const parsed = used.get(key) ??
        await this.#parsed(projectId, map, held).catch((error: Error) =>
          `the map "${map.name}" cannot be read: ${error.message}`
        );
      if (typeof parsed === "object" && !used.has(key)) {
        used.set(key, parsed);
        held += parsed.bytes;
      }
      found.set(frame.file, parsed);
    }
    return { found, used };
  }

  /**
   * The stack of `record` resolved through the maps of its release; `null`
   * when it has no stack, no release, its release has no maps, or a map it
   * needs is not kept and its project spent its parsing time
   * ({@linkcode PARSE_BUDGET_MS}): then it is stored as sent, and resolved
   * by the page that shows it.
   */
  async resolve(
    projectId: string,
    record: LogRecord,
  ): Promise<ResolvedStack | null> {
    const release = releaseOf(record);
    if (release === null || record.data.stack === undefined) return null;
    if (!hasMaps(await this.index(projectId), release)) return null;
    const frames = parseStack(record.data.stack);
    if (frames.length === 0) return null;
    const { found, used } = await this.#mapsOf(projectId, release, frames);
    // Out of parsing time: stored as sent, resolved by the page showing it.
    if ([...found.values()].includes(PARSE_WHY)) return null;
    try {
      return {
        release,
        frames: resolveFrames(frames, (file) => found.get(file) ?? "no map"),
      };
    } catch (error) {
      // A map that fails while resolving: the entry is stored as sent.
      return {
        release,
        frames: unresolvedFrames(
          frames,
          `the map cannot be read: ${(error as Error).message}`,
        ),
      };
    } finally {
      // Source lines split while resolving add to the kept maps' bytes.
      for (const [key, parsed] of used) {
        if (this.#maps.get(key)?.parsed === parsed) this.#keep(key, parsed);
      }
    }
  }

  /**
   * The stacks of `records` resolved as {@linkcode resolve} does, one
   * answer each, in order.
   *
   * @example
   * ```ts
   * const [stack] = await resolver.resolveMany(projectId, [record]);
   * ```
   */
  async resolveMany(
    projectId: string,
    records: LogRecord[],
  ): Promise<(ResolvedStack | null)[]> {
    const stacks: (ResolvedStack | null)[] = [];
    for (const record of records) {
      stacks.push(await this.resolve(projectId, record));
    }
    return stacks;
  }

  /**
   * Resolves the stacks of `records` whose release has maps, in place
   * (`record.resolved`), and returns the lines to store them by: such
   * records are encoded again, the others keep `lineOf`'s line. Only those
   * records go to `resolveStacks`; the others cost an index lookup.
   */
  async resolveRecords(
    projectId: string,
    records: LogRecord[],
    lineOf: (record: LogRecord) => string,
  ): Promise<(record: LogRecord) => string> {
    const mapped: LogRecord[] = [];
    for (const record of records) {
      const release = releaseOf(record);
      if (record.data.stack === undefined || release === null) continue;
      if (hasMaps(await this.index(projectId), release)) mapped.push(record);
    }
    if (mapped.length === 0) return lineOf;
    let stacks: (ResolvedStack | null)[];
    try {
      stacks = await this.#resolveStacks(projectId, mapped);
    } catch (error) {
      // A thread whose parsing never ends must not hold the batch: its
      // entries are stored as sent, and resolved when a page shows them.
      if (error instanceof ThreadStalledError) return lineOf;
      throw error;
    }
    const changed = new Set<LogRecord>();
    mapped.forEach((record, i) => {
      const resolved = stacks[i];
      if (resolved === null || resolved === undefined) return;
      record.resolved = resolved;
      changed.add(record);
    });
    if (changed.size === 0) return lineOf;
    return (record) =>
      changed.has(record) ? encodeRecordLine(record) : lineOf(record);
  }
}

/**
 * Whether `release` has maps in `index`: its own count, not a name every
 * object has (`constructor`, `toString`).
 */
function hasMaps(index: SourceMapIndex, release: string): boolean {
  return Object.hasOwn(index.releases, release) &&
    index.releases[release]! > 0;
}

/** The top frame of a stack as the errors' `frame` field gives it. */
export interface TopFrame {
  function: string;
  file: string;
  line: number | null;
  column: number | null;
}

/**
 * The stack of a stored entry as pages and the CLI show it: as resolved at
 * write time, else resolved now through its release's maps, else its frames
 * as sent, each saying why it is not resolved. `null` without frames.
 *
 * @example
 * ```ts
 * const stack = await shownStack(kv, projectId, record);
 * ```
 */
export async function shownStack(
  kv: Deno.Kv,
  projectId: string,
  record: LogRecord,
  resolver: SourceMapResolver = new SourceMapResolver(kv, { indexTtlMs: 0 }),
): Promise<ResolvedStack | null> {
  if (record.resolved !== undefined) return record.resolved;
  const frames = parseStack(record.data.stack);
  if (frames.length === 0) return null;
  const release = releaseOf(record);
  if (release === null) {
    return {
      release: "",
      frames: unresolvedFrames(
        frames,
        'the entry names no release ("context.release")',
      ),
    };
  }
  return await resolver.resolve(projectId, record) ?? {
    release,
    frames: unresolvedFrames(
      frames,
      `no source maps uploaded for release "${release}"`,
    ),
  };
}

/**
 * The top frame of shown frames: the first that is not the runtime's own,
 * else the first; `null` when there is none.
 */
export function topOfFrames(frames: ShownFrame[]): TopFrame | null {
  const top = frames.find((f) =>
    f.resolved ||
    !isRuntimeFrame({ ...f, location: f.file })
  ) ?? frames[0];
  if (top === undefined) return null;
  return {
    function: top.function,
    file: top.file,
    line: top.line,
    column: top.column,
  };
}

/**
 * The resolved top frame of an entry (the errors' `frame`: function, file,
 * line, column), resolving through its release's maps when it was stored
 * before them; `null` without a stack.
 *
 * @example
 * ```ts
 * const frame = await entryTopFrame(kv, projectId, sample); // { function: "checkout", file: "src/cart.ts", line: 3, column: 11 }
 * ```
 */
export async function entryTopFrame(
  kv: Deno.Kv,
  projectId: string,
  record: LogRecord,
  resolver?: SourceMapResolver,
): Promise<TopFrame | null> {
  const stack = await shownStack(kv, projectId, record, resolver);
  return stack === null ? null : topOfFrames(stack.frames);
}

/**
 * The resolved top frame of an error group (the errors' `frame`), from its
 * sample entry (`sampleId`): `null` when the entry is gone or has no stack.
 * Give one resolver to every group of a listing, so that each map is parsed
 * once.
 *
 * @example
 * ```ts
 * const resolver = new SourceMapResolver(kv, { indexTtlMs: 0 });
 * for (const group of groups) frame = await groupTopFrame(kv, projectId, group.sampleId, resolver);
 * ```
 */
export async function groupTopFrame(
  kv: Deno.Kv,
  projectId: string,
  sampleId: string,
  resolver?: SourceMapResolver,
): Promise<TopFrame | null> {
  const sample = await getEntry(kv, projectId, sampleId);
  return sample === null
    ? null
    : await entryTopFrame(kv, projectId, sample, resolver);
}

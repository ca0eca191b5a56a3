/**
 * Resolving stored or incoming stacks through a project's source maps
 * (docs/errors.md#source-maps). {@linkcode SourceMapResolver} keeps what the
 * consumer needs between batches: each project's index of releases with
 * maps, trusted for {@linkcode INDEX_TTL_MS}, so an entry of a release
 * without maps costs one lookup in memory; and parsed maps, up to
 * {@linkcode MAX_CACHED_MAP_BYTES} of their JSON, the least recently used
 * going first. Pages and the CLI resolve an entry stored before its map
 * arrived when they show it ({@linkcode shownStack}).
 *
 * @module
 */
import {
  type LogRecord,
  type ResolvedStack,
  type ShownFrame,
} from "../domain/entry.ts";
import { isRuntimeFrame, parseStack } from "../domain/stack.ts";
import {
  type ParsedMap,
  parseSourceMap,
  resolveFrames,
  unresolvedFrames,
} from "../domain/symbolicate.ts";
import { encodeRecordLine } from "./storage/lines.ts";
import { releaseOf } from "./releases.ts";
import { getEntry } from "./query/mod.ts";
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
/** Bytes of map JSON whose parsed maps a resolver keeps in memory. */
export const MAX_CACHED_MAP_BYTES = 64_000_000;

/** Options of {@linkcode SourceMapResolver}. */
export interface SourceMapResolverOptions {
  /** @default Date.now */
  now?: () => number;
  /** How long an index read is trusted. @default {@linkcode INDEX_TTL_MS} */
  indexTtlMs?: number;
  /** @default {@linkcode MAX_CACHED_MAP_BYTES} */
  maxBytes?: number;
}

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

  constructor(kv: Deno.Kv, options: SourceMapResolverOptions = {}) {
    this.#kv = kv;
    this.#now = options.now ?? Date.now;
    this.#ttl = options.indexTtlMs ?? INDEX_TTL_MS;
    this.#maxBytes = options.maxBytes ?? MAX_CACHED_MAP_BYTES;
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

  async #parsed(projectId: string, map: SourceMapRecord): Promise<ParsedMap> {
    const key = `${projectId}\0${map.id}`;
    const cached = this.#maps.get(key);
    if (cached) {
      this.#maps.delete(key);
      this.#maps.set(key, cached);
      return cached.parsed;
    }
    const parsed = parseSourceMap(
      await readSourceMapText(this.#kv, projectId, map),
    );
    if (map.bytes <= this.#maxBytes) {
      this.#maps.set(key, { parsed, bytes: map.bytes });
      this.#bytes += map.bytes;
      for (const [old, { bytes }] of this.#maps) {
        if (this.#bytes <= this.#maxBytes) break;
        this.#maps.delete(old);
        this.#bytes -= bytes;
      }
    }
    return parsed;
  }

  /**
   * The stack of `record` resolved through the maps of its release; `null`
   * when it has no stack, no release, or its release has no maps.
   */
  async resolve(
    projectId: string,
    record: LogRecord,
  ): Promise<ResolvedStack | null> {
    const release = releaseOf(record);
    if (release === null || record.data.stack === undefined) return null;
    if (!(await this.index(projectId)).releases[release]) return null;
    const frames = parseStack(record.data.stack);
    if (frames.length === 0) return null;
    const maps = await this.#list(projectId, release);
    const found = new Map<string, ParsedMap | string>();
    for (const frame of frames) {
      if (found.has(frame.file) || isRuntimeFrame(frame)) continue;
      const map = maps.find((m) => mapMatches(m.url, frame.file));
      found.set(
        frame.file,
        map
          ? await this.#parsed(projectId, map).catch((error: Error) =>
            `the map "${map.name}" cannot be read: ${error.message}`
          )
          : `no source map of release "${release}" for "${frame.file}"`,
      );
    }
    try {
      return {
        release,
        frames: resolveFrames(frames, (file) => found.get(file) ?? "no map"),
      };
    } catch (error) {
      // A map whose mappings do not decode: the entry is stored as sent.
      return {
        release,
        frames: unresolvedFrames(
          frames,
          `the map cannot be read: ${(error as Error).message}`,
        ),
      };
    }
  }

  /**
   * Resolves the stacks of `records` whose release has maps, in place
   * (`record.resolved`), and returns the lines to store them by: such
   * records are encoded again, the others keep `lineOf`'s line.
   */
  async resolveRecords(
    projectId: string,
    records: LogRecord[],
    lineOf: (record: LogRecord) => string,
  ): Promise<(record: LogRecord) => string> {
    let changed: Set<LogRecord> | null = null;
    for (const record of records) {
      if (record.data.stack === undefined || releaseOf(record) === null) {
        continue;
      }
      const resolved = await this.resolve(projectId, record);
      if (resolved === null) continue;
      record.resolved = resolved;
      (changed ??= new Set()).add(record);
    }
    if (changed === null) return lineOf;
    const encoded = changed;
    return (record) =>
      encoded.has(record) ? encodeRecordLine(record) : lineOf(record);
  }
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

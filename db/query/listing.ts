/**
 * The chunks a scan has listed and not yet read: listing their summaries
 * (or their blooms) in scan order, keeping those that may match in the
 * order they are read, and fetching their values ahead (db/query/scan.ts).
 *
 * @module
 */
import { idTime, timeBound } from "../../domain/ids.ts";
import {
  logBloomKey,
  logBloomsPrefix,
  logChunkKey,
  logSummariesPrefix,
  logUnitId,
} from "../keys.ts";
import { bloomHas } from "../storage/bloom.ts";
import {
  CHUNK_SPAN_MS,
  type ChunkBlooms,
  type ChunkSummary,
  decodeChunkBlooms,
  decodeSummary,
} from "../storage/chunk.ts";
import type { CompiledFilter } from "./filter.ts";
import { GET_MANY_MAX_KEYS } from "../kv.ts";
import { coarseSkips } from "./coarse.ts";

/** Above every id. */
export const MAX_ID = "\uffff";

/** Summaries one step of a listing with coarse groups takes at most. */
const LIST_MAX = 512;

/**
 * No entry of a chunk listed after the one whose last id is `lastId` comes
 * before this, in scan order.
 */
function boundAfter(lastId: string, desc: boolean): string {
  return desc ? lastId : timeBound(idTime(lastId) - CHUNK_SPAN_MS);
}

/** A chunk listed and not yet read. */
export interface ListedChunk {
  summary: ChunkSummary;
  /** The blocks that may hold a match; undefined: all of them. */
  blocks: number[] | undefined;
  value?: unknown;
  versionstamp?: string | null;
  fetched: boolean;
}

/**
 * Lists the summaries (or, where the filter has probes and no coarse
 * group covers the range, the blooms) of the chunks that may hold entries in [lo, hi), in scan order.
 */
function listRange(
  kv: Deno.Kv,
  projectId: string,
  range: { lo: string; hi: string },
  desc: boolean,
  useBloom: boolean,
): Deno.KvListIterator<unknown> {
  const { lo, hi } = range;
  const prefix = useBloom
    ? logBloomsPrefix(projectId)
    : logSummariesPrefix(projectId);
  return kv.list({
    start: lo === "" ? prefix : [...prefix, lo],
    end: hi === MAX_ID
      ? [...prefix, MAX_ID]
      : [...prefix, timeBound(idTime(hi) + CHUNK_SPAN_MS + 1)],
  }, { reverse: desc, batchSize: useBloom ? 100 : 500 });
}

/**
 * The blocks of a chunk whose Bloom filter holds every probe; undefined:
 * all of them.
 */
function mayMatchBlocks(
  chunkBlooms: ChunkBlooms,
  filter: CompiledFilter,
): number[] | undefined {
  const blocks: number[] = [];
  chunkBlooms.blooms.forEach((bloom, i) => {
    if (filter.probes.every((probe) => bloomHas(bloom, probe))) {
      blocks.push(i);
    }
  });
  return blocks.length === chunkBlooms.blooms.length ? undefined : blocks;
}

/**
 * The chunk a listed summary names, with the blocks that may hold a match,
 * or undefined where the chunk is out of range or cannot match (counted as
 * skipped).
 */
function listedChunk(
  entry: Deno.KvEntry<unknown>,
  filter: CompiledFilter,
  range: { lo: string; hi: string },
  stats: { chunksSkipped: number },
): ListedChunk | undefined {
  const lastId = logUnitId(entry.key);
  let summary: ChunkSummary;
  // Blocks whose Bloom filter holds every probe; undefined: all blocks.
  let blocks: number[] | undefined;
  if (filter.probes.length > 0) {
    const chunkBlooms = decodeChunkBlooms(entry.value, lastId);
    summary = chunkBlooms;
    blocks = mayMatchBlocks(chunkBlooms, filter);
  } else summary = decodeSummary(entry.value, lastId);
  if (summary.firstId >= range.hi || summary.lastId < range.lo) return;
  if (!filter.summaryMayMatch(summary) || blocks?.length === 0) {
    stats.chunksSkipped++;
    return;
  }
  return { summary, fetched: false, blocks };
}

/**
 * The chunks of listed summaries that may match, where coarse groups rule
 * out those in `skip` (by last id, with the entries each held when
 * grouped): the others' Bloom filters are read (ten per read, the reads
 * at once), and a chunk
 * whose filters are gone (merged since) is kept whole, so that reading it
 * finds it moved.
 */
async function listedWithSkips(
  kv: Deno.Kv,
  projectId: string,
  entries: Deno.KvEntry<unknown>[],
  skip: Map<string, number>,
  options: ListingOptions,
): Promise<ListedChunk[]> {
  const { filter, range, stats } = options;
  const wanted: ChunkSummary[] = [];
  for (const entry of entries) {
    const summary = decodeSummary(entry.value, logUnitId(entry.key));
    if (summary.firstId >= range.hi || summary.lastId < range.lo) continue;
    // A chunk rewritten since its group was made holds more entries.
    const covered = skip.get(summary.lastId) === summary.count;
    if (!filter.summaryMayMatch(summary) || covered) {
      stats.chunksSkipped++;
    } else wanted.push(summary);
  }
  const keys = wanted.map((s) => logBloomKey(projectId, s.lastId));
  const reads: Promise<Deno.KvEntryMaybe<unknown>[]>[] = [];
  for (let i = 0; i < keys.length; i += GET_MANY_MAX_KEYS) {
    reads.push(kv.getMany(keys.slice(i, i + GET_MANY_MAX_KEYS)));
  }
  const blooms = (await Promise.all(reads)).flat();
  const listed: ListedChunk[] = [];
  wanted.forEach((summary, i) => {
    const value = blooms[i]!.value;
    if (value === null) {
      listed.push({ summary, fetched: false, blocks: undefined });
      return;
    }
    const blocks = mayMatchBlocks(
      decodeChunkBlooms(value, summary.lastId),
      filter,
    );
    if (blocks?.length === 0) stats.chunksSkipped++;
    else listed.push({ summary, fetched: false, blocks });
  });
  return listed;
}

/**
 * Adds a listed chunk to those not yet read, kept in the order they are
 * read: newest first by last id (their listing order), oldest first by
 * first id.
 */
function addUnread(
  unread: ListedChunk[],
  chunk: ListedChunk,
  desc: boolean,
): void {
  if (desc) {
    unread.push(chunk);
    return;
  }
  let at = unread.length;
  while (at > 0 && chunk.summary.firstId < unread[at - 1]!.summary.firstId) {
    at--;
  }
  unread.splice(at, 0, chunk);
}

/** Fetches the values of the chunks of `batch` with one read. */
async function fetchChunks(
  kv: Deno.Kv,
  projectId: string,
  batch: ListedChunk[],
): Promise<void> {
  const values = await kv.getMany(
    batch.map((c) => logChunkKey(projectId, c.summary.lastId)),
  );
  batch.forEach((c, i) => {
    c.fetched = true;
    c.value = values[i]!.value;
    c.versionstamp = values[i]!.versionstamp;
  });
}

/** What a {@linkcode ChunkListing} lists. */
export interface ListingOptions {
  filter: CompiledFilter;
  range: { lo: string; hi: string };
  /** Newest first. */
  desc: boolean;
  stats: { chunksSkipped: number };
}

/**
 * The chunks of a scan's range in scan order: summaries listed one at a
 * time, the chunks that may match kept until their turn, and their values
 * fetched ahead, more each time (the following chunks are likely next).
 */
export class ChunkListing {
  readonly #kv: Deno.Kv;
  readonly #projectId: string;
  readonly #options: ListingOptions;
  /** Summaries, or blooms; made by the first {@linkcode listNext}. */
  #summaries: Deno.KvListIterator<unknown> | null = null;
  /** Chunks coarse groups rule out; null: the listing reads blooms. */
  #skip: Map<string, number> | null = null;
  readonly #unread: ListedChunk[] = [];
  #bound: string | null;
  #fetchSize = 1;
  #listSize = 8;

  constructor(kv: Deno.Kv, projectId: string, options: ListingOptions) {
    this.#kv = kv;
    this.#projectId = projectId;
    this.#options = options;
    const { range, desc } = options;
    this.#bound = desc ? range.hi : range.lo;
  }

  /**
   * Starts the listing: a search with probes asks the coarse groups first
   * (db/query/coarse.ts) and lists summaries; where no group covers its
   * range, it lists the blooms.
   */
  async #start(): Promise<Deno.KvListIterator<unknown>> {
    const { range, desc, filter } = this.#options;
    let useBloom = false;
    if (filter.probes.length > 0) {
      this.#skip = await coarseSkips(
        this.#kv,
        this.#projectId,
        filter.probes,
        range,
      );
      useBloom = this.#skip === null;
    }
    return this.#summaries = listRange(
      this.#kv,
      this.#projectId,
      range,
      desc,
      useBloom,
    );
  }

  /**
   * No entry of a chunk still unlisted comes before this in scan order;
   * null once the listing is done.
   */
  get bound(): string | null {
    return this.#bound;
  }

  /** Where the next chunk to read starts in scan order; null: none listed. */
  get nextBound(): string | null {
    const chunk = this.#unread[0];
    if (chunk === undefined) return null;
    return this.#options.desc ? chunk.summary.lastId : chunk.summary.firstId;
  }

  /**
   * Lists the next summary (with coarse groups, the next few, more each
   * time); a chunk that may match waits for its turn.
   */
  async listNext(): Promise<void> {
    const summaries = this.#summaries ?? await this.#start();
    const { filter, range, desc, stats } = this.#options;
    if (this.#skip !== null) {
      const entries: Deno.KvEntry<unknown>[] = [];
      while (entries.length < this.#listSize) {
        const next = await summaries.next();
        if (next.done) break;
        entries.push(next.value);
      }
      this.#listSize = Math.min(LIST_MAX, this.#listSize * 2);
      if (entries.length === 0) {
        this.#bound = null;
        return;
      }
      const listed = await listedWithSkips(
        this.#kv,
        this.#projectId,
        entries,
        this.#skip,
        this.#options,
      );
      for (const chunk of listed) addUnread(this.#unread, chunk, desc);
      this.#bound = boundAfter(logUnitId(entries.at(-1)!.key), desc);
      return;
    }
    const next = await summaries.next();
    if (next.done) {
      this.#bound = null;
      return;
    }
    this.#bound = boundAfter(logUnitId(next.value.key), desc);
    const chunk = listedChunk(next.value, filter, range, stats);
    if (chunk) addUnread(this.#unread, chunk, desc);
  }

  /** Takes the next chunk to read (there is one), its value fetched. */
  async takeNext(): Promise<ListedChunk> {
    const chunk = this.#unread.shift()!;
    if (!chunk.fetched) {
      const batch = [chunk, ...this.#unread.filter((c) => !c.fetched)];
      await fetchChunks(
        this.#kv,
        this.#projectId,
        batch.slice(0, this.#fetchSize),
      );
      this.#fetchSize = Math.min(GET_MANY_MAX_KEYS, this.#fetchSize * 2);
    }
    return chunk;
  }
}

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
  logSummaryKey,
  logUngroupedKey,
  logUngroupedPrefix,
  logUnitId,
} from "../keys.ts";
import { type Bloom, bloomHas } from "../storage/bloom.ts";
import {
  CHUNK_SPAN_MS,
  type ChunkSummary,
  decodeBlooms,
  decodeSummary,
} from "../storage/chunk.ts";
import type { CompiledFilter } from "./filter.ts";
import { GET_MANY_MAX_KEYS, getManyChunked } from "../kv.ts";
import { coarsePlan } from "./coarse.ts";
import type { AttemptMemory, SelectedLines, Verdict } from "./attempts.ts";
import { ListingReads } from "./listing_reads.ts";

/** Above every id. */
export const MAX_ID = "\uffff";
/** The first time past what an id's 12 hex digits of time can say. */
const LAST_TIME = 16 ** 12;

/** Chunks one step of a listing with coarse groups takes at most. */
const LIST_MAX = 512;
/** Summaries a fetch lists ahead at most, for chunks to fetch with it. */
const LOOKAHEAD = 64;
/**
 * Chunks one read fetches from which the next read starts ahead: only a
 * scan that has read a few (a newest page or a tail never fetches what it
 * will not read).
 */
const PREFETCH_FROM = 4;

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
  /** The read that is fetching it, started ahead. */
  fetching?: Promise<void>;
  /** Its lines an earlier attempt selected, read unchanged since. */
  selected?: SelectedLines;
}

/**
 * The last ids a chunk with entries in [lo, hi) may be named by: from `lo`
 * (a chunk's last id is its newest entry's) to `end`, excluded (a chunk
 * spans at most `CHUNK_SPAN_MS`).
 */
function keySpan(range: { lo: string; hi: string }): { end: string } {
  return { end: keyEnd(range.hi) };
}

/**
 * The end, excluded, of the keys of chunks that may hold entries before
 * `hi`: a chunk is named by its newest entry's id and spans at most
 * `CHUNK_SPAN_MS`. {@linkcode MAX_ID} past what an id's time can say.
 *
 * @example
 * ```ts
 * kv.list({ start: [...prefix, lo], end: [...prefix, keyEnd(hi)] });
 * ```
 */
export function keyEnd(hi: string): string {
  const end = hi === MAX_ID ? Infinity : idTime(hi) + CHUNK_SPAN_MS + 1;
  // Past the ids' 12 digits of time (an id near "fff…"): to the end.
  return end >= LAST_TIME ? MAX_ID : timeBound(end);
}

/**
 * Lists, in scan order, the keys under `prefix` (summaries, blooms or
 * ungrouped marks) of the chunks that may hold entries in [lo, hi).
 */
function listRange(
  kv: Deno.Kv,
  prefix: Deno.KvKey,
  range: { lo: string; hi: string },
  desc: boolean,
  batchSize: number,
): ListingReads {
  const { lo } = range;
  return new ListingReads(
    kv,
    {
      start: lo === "" ? prefix : [...prefix, lo],
      end: [...prefix, keySpan(range).end],
    },
    desc,
    batchSize,
  );
}

/**
 * The blocks of a chunk whose Bloom filter holds every probe; undefined:
 * all of them.
 */
function mayMatchBlocks(
  blooms: Bloom[],
  filter: CompiledFilter,
): number[] | undefined {
  const blocks: number[] = [];
  blooms.forEach((bloom, i) => {
    if (filter.probes.every((probe) => bloomHas(bloom, probe))) {
      blocks.push(i);
    }
  });
  return blocks.length === blooms.length ? undefined : blocks;
}

/**
 * The verdict on a listed summary, or on listed blooms where the filter
 * has probes: the chunk to read with the blocks that may hold a match, or
 * none where the chunk is out of range or cannot match (then counted as
 * skipped).
 */
function judge(
  entry: Deno.KvEntry<unknown>,
  options: ListingOptions,
): Verdict {
  const { filter, range } = options;
  const lastId = logUnitId(entry.key);
  const { versionstamp } = entry;
  let summary: ChunkSummary;
  // Blocks whose Bloom filter holds every probe; undefined: all blocks.
  let blocks: number[] | undefined;
  if (filter.probes.length > 0) {
    const decoded = decodeBlooms(entry.value);
    blocks = mayMatchBlocks(decoded.blooms, filter);
    // A chunk that ends within the range is in it: when its filters rule
    // it out, it is skipped without decoding its summary.
    if (blocks?.length === 0 && lastId >= range.lo && lastId < range.hi) {
      return { versionstamp, skipped: true };
    }
    summary = decoded.summary(lastId);
  } else summary = decodeSummary(entry.value, lastId);
  if (summary.firstId >= range.hi || summary.lastId < range.lo) {
    return { versionstamp, skipped: false };
  }
  if (!filter.summaryMayMatch(summary) || blocks?.length === 0) {
    return { versionstamp, skipped: true };
  }
  return { versionstamp, read: { summary, blocks }, skipped: false };
}

/**
 * The chunks that may match among listed entries, in their order: blooms
 * where the filter has probes, summaries otherwise and on an attempt after
 * the first. A chunk whose verdict an earlier attempt drew at the listed
 * versionstamp is taken from it, with the text it read; the others are
 * judged, their blooms read first where a summary was listed and the
 * filter has probes (a chunk gone by then is told to `seen`).
 */
async function listedChunks(
  kv: Deno.Kv,
  projectId: string,
  entries: Deno.KvEntry<unknown>[],
  options: ListingOptions,
): Promise<ListedChunk[]> {
  const { memory, filter, stats } = options;
  const verdicts = entries.map((entry) =>
    memory?.verdict(logUnitId(entry.key), entry.versionstamp)
  );
  const summaries = entries[0]?.key[0] === logSummariesPrefix("")[0];
  const unknown = entries.filter((_, i) => verdicts[i] === undefined);
  const blooms = summaries && filter.probes.length > 0 && unknown.length > 0
    ? await getManyChunked(
      kv,
      unknown.map((e) => logBloomKey(projectId, logUnitId(e.key))),
    )
    : undefined;
  const listed: ListedChunk[] = [];
  let at = 0;
  entries.forEach((entry, i) => {
    const lastId = logUnitId(entry.key);
    let verdict = verdicts[i];
    if (verdict === undefined) {
      const judged = blooms ? blooms[at++]! : entry;
      if (judged.versionstamp === null) {
        options.seen?.onGone();
        return;
      }
      verdict = judge(judged as Deno.KvEntry<unknown>, options);
      memory?.keepVerdict(lastId, verdict);
    }
    if (verdict.skipped) stats.chunksSkipped++;
    if (verdict.read === undefined) return;
    const selected = memory?.selected(lastId, verdict.versionstamp);
    listed.push(
      selected === undefined ? { ...verdict.read, fetched: false } : {
        ...verdict.read,
        fetched: true,
        versionstamp: verdict.versionstamp,
        selected,
      },
    );
  });
  return listed;
}

/**
 * The last ids of the chunks a word search planned with coarse groups
 * looks at, in scan order: those the groups that may hold a match name,
 * merged with those listed as ungrouped (written since a group last named
 * them), each once.
 */
class CoarseKeys {
  readonly #named: string[];
  #at = 0;
  readonly #marks: ListingReads;
  /** The next ungrouped chunk's last id; null: none left; undefined: not read. */
  #mark: string | null | undefined = undefined;
  readonly #desc: boolean;

  constructor(
    named: string[],
    marks: ListingReads,
    desc: boolean,
  ) {
    this.#named = desc ? named.toReversed() : named;
    this.#marks = marks;
    this.#desc = desc;
  }

  /** The next last id and whether it was listed as ungrouped; null: done. */
  async next(): Promise<{ lastId: string; ungrouped: boolean } | null> {
    if (this.#mark === undefined) {
      const next = await this.#marks.next();
      this.#mark = next.done ? null : logUnitId(next.value.key);
    }
    const mark = this.#mark;
    const named = this.#named[this.#at];
    if (mark === null && named === undefined) return null;
    const before = (a: string, b: string) => this.#desc ? a > b : a < b;
    if (mark === null || (named !== undefined && before(named, mark))) {
      this.#at++;
      return { lastId: named!, ungrouped: false };
    }
    if (named === mark) this.#at++;
    this.#mark = undefined;
    return { lastId: mark, ungrouped: true };
  }
}

/**
 * The chunks of `keys` that may match, from their Bloom filters, or on an
 * attempt after the first from their summaries (ten per read, the reads
 * at once). A chunk listed as ungrouped whose filters are gone is looked
 * into ({@linkcode goneUngrouped}); one only a group names was merged into
 * a chunk written, and so marked, since.
 */
async function listedCoarse(
  kv: Deno.Kv,
  projectId: string,
  keys: { lastId: string; ungrouped: boolean }[],
  options: ListingOptions,
): Promise<ListedChunk[]> {
  const key = options.memory?.again ? logSummaryKey : logBloomKey;
  const reads: Promise<Deno.KvEntryMaybe<unknown>[]>[] = [];
  for (let i = 0; i < keys.length; i += GET_MANY_MAX_KEYS) {
    reads.push(kv.getMany(
      keys.slice(i, i + GET_MANY_MAX_KEYS).map((k) => key(projectId, k.lastId)),
    ));
  }
  const entries = (await Promise.all(reads)).flat();
  const gone = keys.filter((k, i) => k.ungrouped && entries[i]!.value === null);
  if (gone.length > 0) await goneUngrouped(kv, projectId, gone, options);
  return await listedChunks(
    kv,
    projectId,
    entries.filter((e): e is Deno.KvEntry<unknown> => e.value !== null),
    options,
  );
}

/**
 * Chunks listed as ungrouped and gone when their filters were read: moved
 * by a merge (which deletes the mark with the chunk), so the scan is done
 * again; or, where the mark is still there, a mark left behind by a chunk
 * KV expired first, which holds nothing, unless a write sets the mark
 * again before the scan ends (it is then done again too).
 */
async function goneUngrouped(
  kv: Deno.Kv,
  projectId: string,
  gone: { lastId: string }[],
  options: ListingOptions,
): Promise<void> {
  const marks = await getManyChunked(
    kv,
    gone.map((k) => logUngroupedKey(projectId, k.lastId)),
  );
  for (const mark of marks) {
    if (mark.versionstamp === null) options.seen?.onGone();
    else options.seen?.onRead(mark.key, mark.versionstamp);
  }
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

/** Whether a listed chunk is neither fetched nor being fetched. */
function unfetched(chunk: ListedChunk): boolean {
  return !chunk.fetched && chunk.fetching === undefined;
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
  /**
   * Told of what the listing read that must not move before the scan
   * ends (the coarse state), and of a chunk listed and gone.
   */
  seen?: {
    onRead(key: Deno.KvKey, versionstamp: string): void;
    onGone(): void;
  };
  /** What the scan's earlier attempts learned. */
  memory?: AttemptMemory;
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
  /**
   * Summaries or blooms, or with coarse groups the chunks they cannot rule
   * out and the ungrouped ones; made by the first {@linkcode listNext}.
   */
  #summaries: ListingReads | CoarseKeys | null = null;
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
   * (db/query/coarse.ts) and lists the chunks they cannot rule out and
   * the ungrouped ones; where no group covers its range, it lists the
   * blooms on its first attempt; any other lists the summaries.
   */
  async #start(): Promise<ListingReads | CoarseKeys> {
    const { range, desc, filter } = this.#options;
    const projectId = this.#projectId;
    if (filter.probes.length === 0) {
      return this.#summaries = listRange(
        this.#kv,
        logSummariesPrefix(projectId),
        range,
        desc,
        500,
      );
    }
    const plan = await coarsePlan(this.#kv, projectId, filter.probes, range);
    if (plan === null) {
      return this.#summaries = listRange(
        this.#kv,
        this.#options.memory?.again
          ? logSummariesPrefix(projectId)
          : logBloomsPrefix(projectId),
        range,
        desc,
        100,
      );
    }
    this.#options.seen?.onRead(plan.state.key, plan.state.versionstamp);
    const { end } = keySpan(range);
    const named = plan.named.filter((id) => id >= range.lo && id < end);
    const marks = listRange(
      this.#kv,
      logUngroupedPrefix(projectId),
      range,
      desc,
      500,
    );
    return this.#summaries = new CoarseKeys(named, marks, desc);
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
    const { desc } = this.#options;
    if (summaries instanceof CoarseKeys) {
      const keys: { lastId: string; ungrouped: boolean }[] = [];
      while (keys.length < this.#listSize) {
        const next = await summaries.next();
        if (next === null) break;
        keys.push(next);
      }
      this.#listSize = Math.min(LIST_MAX, this.#listSize * 2);
      if (keys.length === 0) {
        this.#bound = null;
        return;
      }
      const listed = await listedCoarse(
        this.#kv,
        this.#projectId,
        keys,
        this.#options,
      );
      for (const chunk of listed) addUnread(this.#unread, chunk, desc);
      this.#bound = boundAfter(keys.at(-1)!.lastId, desc);
      return;
    }
    const next = await summaries.next();
    if (next.done) {
      this.#bound = null;
      return;
    }
    this.#bound = boundAfter(logUnitId(next.value.key), desc);
    const [chunk] = await listedChunks(
      this.#kv,
      this.#projectId,
      [next.value],
      this.#options,
    );
    if (chunk) addUnread(this.#unread, chunk, desc);
  }

  /**
   * Takes the next chunk to read (there is one), its value fetched. A
   * fetch lists up to {@linkcode LOOKAHEAD} summaries ahead to fetch the
   * chunks they find with it: one read of ten chunks costs about what two
   * reads of one do, and a summary's listing a tenth of either. Once reads
   * are {@linkcode PREFETCH_FROM} chunks large, the next read starts before
   * the caller reads this chunk, so that its wait overlaps that work.
   */
  async takeNext(): Promise<ListedChunk> {
    const chunk = this.#unread.shift()!;
    if (chunk.fetching) await chunk.fetching;
    if (!chunk.fetched) {
      // Chunks listed from here on come after this one in scan order (it
      // was taken because its bound comes before the listing's).
      await this.#listAhead(1);
      const batch = [chunk, ...this.#unread.filter(unfetched)];
      await this.#fetch(batch.slice(0, this.#fetchSize));
    }
    if (this.#fetchSize >= PREFETCH_FROM && this.#ahead() < this.#fetchSize) {
      await this.#listAhead(0);
      const next = this.#unread.filter(unfetched).slice(0, this.#fetchSize);
      // A scan that stops before taking them leaves the read unawaited:
      // its failure is no unhandled rejection; taking one awaits it.
      if (next.length > 0) this.#fetch(next).catch(() => {});
    }
    return chunk;
  }

  /**
   * Lists summaries (up to {@linkcode LOOKAHEAD}) until `taken` and the
   * chunks listed and not fetched make a read, or the listing ends. With
   * coarse groups a step lists many at once, so it does not look ahead.
   */
  async #listAhead(taken: number): Promise<void> {
    for (
      let looked = 0;
      looked < LOOKAHEAD && this.#bound !== null &&
      !(this.#summaries instanceof CoarseKeys) &&
      taken + this.#unread.filter(unfetched).length < this.#fetchSize;
      looked++
    ) await this.listNext();
  }

  /** Chunks fetched or being fetched that wait for their turn. */
  #ahead(): number {
    return this.#unread.filter((c) => !unfetched(c)).length;
  }

  /** Fetches `batch` in one read; the next read is larger, up to 10. */
  #fetch(batch: ListedChunk[]): Promise<void> {
    const fetching = fetchChunks(this.#kv, this.#projectId, batch);
    for (const c of batch) c.fetching = fetching;
    this.#fetchSize = Math.min(GET_MANY_MAX_KEYS, this.#fetchSize * 2);
    return fetching;
  }
}

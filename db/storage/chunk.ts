/**
 * Chunks and their summaries: the one stored form of entries, written by the
 * consumer as it accepts them and combined by the merger (db/storage/write.ts).
 *
 * A chunk is the JSON lines of up to a few thousand entries (sorted by id),
 * cut into blocks of about {@linkcode BLOCK_RAW_BYTES} of JSON, each deflated
 * ("deflate-raw") on its own, together at most about
 * {@linkcode CHUNK_TARGET_BYTES}, under `log_chunks/<projectId>/<last id>`.
 * Beside it, two small values name the same last id: the summary (first id,
 * count, count per level, slices) under `log_summaries/`, and the summary
 * followed by one Bloom filter per block (of its tokens and field pairs) under
 * `log_blooms/` (the chunk's blooms). A query lists the summaries, or the
 * blooms when it has text or field terms, reads only the chunks that may hold
 * a match, and inflates only their blocks that may: a user's entries spread
 * over a hundred chunks cost a hundred blocks, not a hundred whole chunks.
 * Keys name the last id so that a newest-first listing knows that no chunk
 * still to be listed holds a later entry; a chunk spans at most
 * {@linkcode CHUNK_SPAN_MS}, which bounds how far an oldest-first listing
 * looks ahead.
 *
 * Every value is bytes encoded here (format byte first), readable by any
 * Deno version. The decoders are what db/query/ reads chunks with; the
 * writes are db/storage/write.ts's.
 *
 * @module
 */
import { deflateRawSync, inflateRawSync } from "node:zlib";
import { concatBytes, joinSlices, splitBytes } from "../blob.ts";
import { logChunkSliceKey } from "../keys.ts";
import { VALUE_MAX_BYTES } from "../kv.ts";
import { decodeRecordLine, lineId } from "./lines.ts";
import { type Bloom, BloomMembers } from "./bloom.ts";
import { EntryIndexer } from "./indexer.ts";
import { ColumnsBuilder } from "./columns.ts";
import type { LogRecord } from "../../domain/entry.ts";

/** Compressed bytes a chunk aims at, under KV's 64 KiB value limit. */
export const CHUNK_TARGET_BYTES = 56_000;
/** Compressed bytes above which a merge of several chunks is cut in two. */
export const CHUNK_MAX_BYTES = 60_000;
/** Receipt time one chunk spans at most. */
export const CHUNK_SPAN_MS = 3_600_000;
/** JSON bytes of one block of a chunk, about. */
export const BLOCK_RAW_BYTES = 120_000;
/**
 * Lines indexed between two pauses of {@linkcode buildChunkPausing}: about
 * 2-4 ms of tokens and filters, where a whole block held the thread for
 * 10-20 ms (a request arriving meanwhile waited for all of it).
 */
export const LINES_PER_STEP = 64;
const FORMAT = 1;

/**
 * The tier of a chunk no merge takes any more: a merge whose output reached
 * half the target size.
 */
export const FINAL_TIER = 15;

/** What a query knows of a chunk without reading it. */
export interface ChunkSummary {
  /** Id of the chunk's first entry. */
  firstId: string;
  /** Id of its last entry (the key's name). */
  lastId: string;
  /** Number of entries. */
  count: number;
  /** Entries per level. */
  levels: Record<string, number>;
  /** Values the chunk is stored in, head included. */
  slices: number;
  /**
   * How many merges made it: 0 when the consumer wrote it, up to
   * {@linkcode FINAL_TIER} for a chunk no merge takes any more.
   */
  tier: number;
  /** Bytes of its JSON lines. */
  raw: number;
  /** Compressed bytes of its blocks. */
  bytes: number;
  /**
   * Values its columns are stored in (db/storage/columns.ts), head
   * included; 0 or absent: none (a fresh chunk of tier 0, until the merger
   * rewrites it, or one whose columns could not be held).
   */
  columns?: number;
}

/** A chunk's summary with the Bloom filters of its blocks. */
export interface ChunkBlooms extends ChunkSummary {
  blooms: Bloom[];
}

/** A chunk ready to store. */
export interface BuiltChunk {
  summary: ChunkSummary;
  /** The chunk value (format, slices, deflated lines). */
  head: Uint8Array;
  /** Further slices of a chunk larger than one value. */
  rest: Uint8Array[];
  /** The `log_summaries/` value. */
  summaryValue: Uint8Array;
  /** The `log_blooms/` value. */
  bloomValue: Uint8Array;
  /** The `log_columns/` value and its further slices, when it has columns. */
  columns: { head: Uint8Array; rest: Uint8Array[] } | null;
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** Options of {@linkcode buildChunk}. */
export interface BuildChunkOptions {
  /** The chunk's tier. @default {0} */
  tier?: number;
  /** Compressed size from which the chunk is of {@linkcode FINAL_TIER}. */
  finalAtBytes?: number;
  /**
   * Deflate at the fastest level: for a chunk the merger rewrites soon (the
   * consumer's), compressed again then. @default {false}
   */
  fast?: boolean;
  /**
   * Index the blocks' tokens and field pairs in their Bloom filters. False
   * for a chunk the merger rewrites soon (the consumer's): each block gets a
   * filter that answers "maybe" to every member, so a query reads its lines
   * (a fresh chunk is small, and the backlog of them is bounded), and the
   * tokens are found once, when the merger indexes the merged chunk.
   * @default {true}
   */
  tokens?: boolean;
  /** The records of the lines, when at hand (else the lines are parsed). */
  records?: readonly LogRecord[];
  /**
   * Build the chunk's columns (db/storage/columns.ts); false for the
   * consumer's chunks, whose columns the merger builds when it rewrites them.
   * @default {true}
   */
  columns?: boolean;
  /**
   * Collects the first hash of every member of the chunk's filters, for a
   * coarse group (db/storage/coarse.ts).
   */
  members?: Set<number>;
}

/**
 * Builds a chunk from lines of `encodeRecordLine`, sorted by id.
 *
 * @example
 * ```ts
 * const chunk = buildChunk(lines);
 * setChunk(op, projectId, chunk, { expireIn });
 * ```
 */
export function buildChunk(
  lines: string[],
  options: BuildChunkOptions = {},
): BuiltChunk {
  const steps = chunkSteps(lines, options);
  for (;;) {
    const step = steps.next();
    if (step.done) return step.value;
  }
}

/**
 * {@linkcode buildChunk}, awaiting `pause()` after every
 * {@linkcode LINES_PER_STEP} lines indexed and after each block's deflate
 * (about {@linkcode BLOCK_RAW_BYTES} of lines), so that a chunk built while
 * requests arrive holds the thread a few milliseconds at a time.
 *
 * @example
 * ```ts
 * const chunk = await buildChunkPausing(lines, () => new Promise((r) => setTimeout(r, 0)));
 * ```
 */
export async function buildChunkPausing(
  lines: string[],
  pause: () => Promise<void>,
  options: BuildChunkOptions = {},
): Promise<BuiltChunk> {
  const steps = chunkSteps(lines, options);
  for (;;) {
    const step = steps.next();
    if (step.done) return step.value;
    await pause();
  }
}

/** The work of {@linkcode buildChunk}, a few milliseconds between two yields. */
function* chunkSteps(
  lines: string[],
  options: BuildChunkOptions,
): Generator<void, BuiltChunk, void> {
  const raw = rawBytes(lines);
  const blocks = cutBlocks(lines, raw);
  const levels: Record<string, number> = {};
  const columns = options.columns === false ? null : new ColumnsBuilder();
  // Members asked for are members found: tokens are indexed then.
  const indexer = (options.tokens ?? true) || options.members !== undefined
    ? new EntryIndexer()
    : null;
  const indexed: (BloomMembers | null)[] = [];
  const deflated: Uint8Array[] = [];
  /** Index of the block's first line. */
  let first = 0;
  for (const block of blocks) {
    indexed.push(
      yield* indexBlock(block, first, options.records, {
        levels,
        columns,
        indexer,
        members: options.members,
      }),
    );
    deflated.push(
      deflateRawSync(
        encoder.encode(block.join("\n")),
        options.fast ? { level: 1 } : {},
      ),
    );
    first += block.length;
    yield;
  }
  const body = concatBytes([blockTable(deflated), ...deflated]);
  const { head, rest } = splitBytes(body);
  const built = columns?.build(options.fast) ?? null;
  const summary: ChunkSummary = {
    firstId: lineId(lines[0]!),
    lastId: lineId(lines.at(-1)!),
    count: lines.length,
    levels,
    slices: 1 + rest.length,
    tier: options.finalAtBytes !== undefined &&
        body.length >= options.finalAtBytes
      ? FINAL_TIER
      : options.tier ?? 0,
    raw: Math.max(0, raw - 1),
    bytes: body.length,
    ...(built ? { columns: 1 + built.rest.length } : {}),
  };
  const json = summaryJson(summary);
  const blooms = blockBlooms(indexed, json.length);
  return {
    summary,
    head: concatBytes([new Uint8Array([FORMAT, summary.slices]), head]),
    rest,
    summaryValue: concatBytes([new Uint8Array([FORMAT]), json]),
    bloomValue: bloomValue(json, blooms),
    columns: built,
  };
}

/** Bytes of `lines` each followed by a newline. */
function rawBytes(lines: string[]): number {
  let raw = 0;
  for (const line of lines) raw += line.length + 1;
  return raw;
}

/**
 * `lines` cut into blocks of about {@linkcode BLOCK_RAW_BYTES}, evened out
 * so that the last block is not a small remainder; `raw` is
 * {@linkcode rawBytes} of `lines`.
 */
function cutBlocks(lines: string[], raw: number): string[][] {
  const perBlock = raw / Math.max(1, Math.round(raw / BLOCK_RAW_BYTES));
  const blocks: string[][] = [];
  let block: string[] = [];
  let size = 0;
  for (const line of lines) {
    if (block.length > 0 && size + line.length / 2 > perBlock) {
      blocks.push(block);
      block = [];
      size = 0;
    }
    block.push(line);
    size += line.length + 1;
  }
  blocks.push(block);
  return blocks;
}

/**
 * The Bloom filter of a block's tokens and field pairs, counting its
 * entries per level into `levels` and adding them to `columns`. `first` is
 * the index of its first line in `records`, when the records are at hand.
 */
function* indexBlock(
  lines: string[],
  first: number,
  records: readonly LogRecord[] | undefined,
  into: {
    levels: Record<string, number>;
    columns: ColumnsBuilder | null;
    /** The chunk's indexer; null: no tokens, a filter of every member. */
    indexer: EntryIndexer | null;
    members: Set<number> | undefined;
  },
): Generator<void, BloomMembers | null, void> {
  const { levels, columns, indexer } = into;
  const members = indexer ? new BloomMembers() : null;
  for (let i = 0; i < lines.length; i++) {
    const record = records?.[first + i] ?? decodeRecordLine(lines[i]!);
    levels[record.level] = (levels[record.level] ?? 0) + 1;
    columns?.add(record);
    if (!indexer || !members) continue;
    indexer.add(record, members);
    // A pause every LINES_PER_STEP lines, the block's deflate after them.
    if (i % LINES_PER_STEP === LINES_PER_STEP - 1) yield;
  }
  if (!members) return null;
  yield;
  if (into.members) { for (const h of members.hashes) into.members.add(h); }
  return members;
}

/**
 * The blocks' filters (every member for a block not indexed), each as
 * large as its members ask but all of them within one KV value beside the
 * summary's `jsonBytes`: entries of many distinct fields that compress well
 * asked 75 KB of filters of a 5 KB chunk, which no commit could write.
 */
function blockBlooms(
  indexed: (BloomMembers | null)[],
  jsonBytes: number,
): Bloom[] {
  const room = VALUE_MAX_BYTES - 5 - jsonBytes - 5 * indexed.length;
  const share = Math.floor(room / Math.max(1, indexed.length));
  return indexed.map((members) => members?.build(share) ?? MATCH_ALL);
}

/** A filter every member may be in: one probe, every bit set. */
const MATCH_ALL: Bloom = { bits: new Uint8Array(8).fill(255), k: 1 };

/** Block table: count, then each block's compressed size (32 bits). */
function blockTable(deflated: Uint8Array[]): Uint8Array {
  const table = new Uint8Array(1 + 4 * deflated.length);
  const view = new DataView(table.buffer);
  table[0] = deflated.length;
  deflated.forEach((d, i) => view.setUint32(1 + 4 * i, d.length, true));
  return table;
}

/** The summary as stored, in short names (its last id is the key's name). */
function summaryJson(summary: ChunkSummary): Uint8Array {
  return encoder.encode(JSON.stringify({
    f: summary.firstId,
    n: summary.count,
    lv: summary.levels,
    p: summary.slices,
    t: summary.tier,
    r: summary.raw,
    b: summary.bytes,
    c: summary.columns,
  }));
}

/**
 * The `log_blooms/` value: format, summary length (32 bits), summary, then
 * per block its probes (8 bits), its size in bytes (32 bits) and its bits.
 */
function bloomValue(json: Uint8Array, blooms: Bloom[]): Uint8Array {
  const parts: Uint8Array[] = [new Uint8Array([FORMAT]), u32(json.length)];
  parts.push(json);
  for (const bloom of blooms) {
    parts.push(new Uint8Array([bloom.k]), u32(bloom.bits.length));
    parts.push(bloom.bits);
  }
  return concatBytes(parts);
}

function u32(n: number): Uint8Array {
  const bytes = new Uint8Array(4);
  new DataView(bytes.buffer).setUint32(0, n, true);
  return bytes;
}

function parseSummary(json: Uint8Array, lastId: string): ChunkSummary {
  const raw = JSON.parse(decoder.decode(json));
  return {
    firstId: raw.f,
    lastId,
    count: raw.n,
    levels: raw.lv,
    slices: raw.p,
    tier: raw.t,
    raw: raw.r,
    bytes: raw.b,
    ...(raw.c ? { columns: raw.c } : {}),
  };
}

function checkFormat(value: unknown, what: string): Uint8Array {
  if (!(value instanceof Uint8Array) || value[0] !== FORMAT) {
    throw new Error(`Cannot read ${what}: unknown format`);
  }
  return value;
}

/** Decodes a `log_summaries/` value; `lastId` is its key's name. */
export function decodeSummary(value: unknown, lastId: string): ChunkSummary {
  return parseSummary(checkFormat(value, "chunk summary").subarray(1), lastId);
}

/** Decodes a `log_blooms/` value; `lastId` is its key's name. */
export function decodeChunkBlooms(value: unknown, lastId: string): ChunkBlooms {
  const { blooms, summary } = decodeBlooms(value);
  return { ...summary(lastId), blooms };
}

/**
 * The Bloom filters of a `log_blooms/` value, and its summary decoded only
 * when asked for: a search rules most chunks out by their filters alone.
 */
export function decodeBlooms(value: unknown): {
  blooms: Bloom[];
  summary: (lastId: string) => ChunkSummary;
} {
  const bytes = checkFormat(value, "chunk Bloom filter");
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.length);
  const size = view.getUint32(1, true);
  const blooms: Bloom[] = [];
  for (let at = 5 + size; at < bytes.length;) {
    const length = view.getUint32(at + 1, true);
    blooms.push({
      k: bytes[at]!,
      bits: bytes.subarray(at + 5, at + 5 + length),
    });
    at += 5 + length;
  }
  return {
    blooms,
    summary: (lastId) => parseSummary(bytes.subarray(5, 5 + size), lastId),
  };
}

/**
 * Decodes a chunk value (reading its further slices when it has any) into
 * the text of its lines, joined by "\n": of every block, or of the blocks
 * listed in `blocks` (ascending), which keeps the lines sorted.
 */
export async function readChunkText(
  kv: Deno.Kv,
  projectId: string,
  lastId: string,
  value: unknown,
  blocks?: number[],
): Promise<string> {
  const bytes = checkFormat(value, `chunk "${lastId}"`);
  const body = await joinSlices(
    kv,
    bytes.subarray(2),
    bytes[1]!,
    (n) => logChunkSliceKey(projectId, lastId, n),
  );
  const view = new DataView(body.buffer, body.byteOffset, body.length);
  const count = body[0]!;
  const texts: string[] = [];
  let at = 1 + 4 * count;
  for (let i = 0; i < count; i++) {
    const length = view.getUint32(1 + 4 * i, true);
    if (!blocks || blocks.includes(i)) {
      texts.push(
        decoder.decode(inflateRawSync(body.subarray(at, at + length))),
      );
    }
    at += length;
  }
  return texts.join("\n");
}

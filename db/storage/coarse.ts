/**
 * Coarse groups: one Bloom filter over the tokens of many settled merged
 * chunks (final, or whose hour has closed), so that a word search over a
 * long range rules out thousands of chunks without listing their own filters
 * (about 10 KB each: 25.8 MiB at 3M entries). The merger writes them
 * (db/storage/coarse_groups.ts); a query reads them before it lists a chunk
 * (db/query/listing.ts).
 *
 * A group names its chunks (by last id) and spans the ids from its oldest
 * chunk's first to its newest chunk's last. Its filter is cut into
 * {@linkcode COARSE_SEGMENTS} segments by a hash of the member, each segment
 * a Bloom filter of its own under
 * `log_coarse_bits/<projectId>/<segment>/<group's last id>`: a probe reads
 * one segment per group, and one listing of that segment's prefix reads it
 * for every group of a range, newest or oldest first. The members are the
 * chunk filters' own members (tokens and `path=value` pairs, db/storage/text.ts),
 * known by the first of their two hashes ({@linkcode BloomHash.h1}), so a
 * query's probes serve both.
 *
 * Exact in effect: a group is built only from the hashes its chunks were
 * built with (written beside each chunk by the merge that wrote it). Every
 * write of a chunk marks it ungrouped in its own commit
 * (db/storage/write.ts), and a group deletes the marks of the chunks it
 * names in the commit that makes it, so a chunk is either named by a group
 * and unchanged since (or only rid of entries) or marked: a search lists
 * the marks and the chunks of the groups that may hold a match, never the
 * chunks of the others (db/query/coarse.ts). A false positive costs the
 * group's chunk filters, never a missed entry.
 *
 * This module is the format (read by db/query/); writing is
 * db/storage/coarse_groups.ts's.
 *
 * @module
 */
import { BITS_PER_ITEM, type BloomHash, HASHES } from "./bloom.ts";

/** Segments of a group's filter: a probe reads one of them. */
export const COARSE_SEGMENTS = 128;
/** Settled merged chunks one coarse group covers at most (and is built from). */
export const COARSE_GROUP_CHUNKS = 64;
/**
 * Distinct members a merged chunk's pending hashes hold at most (4 bytes
 * each, inside one KV value); a chunk with more is left out of groups and
 * searched through its own filters.
 */
export const MAX_PENDING_MEMBERS = 16_000;
const FORMAT = 1;

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** A coarse group as stored: its span and the chunks it covers. */
export interface CoarseGroup {
  /** First id of its oldest chunk. */
  firstId: string;
  /** Last id of its newest chunk (the key's name). */
  lastId: string;
  /** Last ids of its chunks, oldest first. */
  chunks: string[];
  /**
   * The entries of each chunk as hashed: a chunk rewritten under the same
   * key holds more (a merge keeps its sources' entries and adds others'),
   * or fewer (retention by level).
   */
  counts: number[];
}

/**
 * lowbias32 (C. Wellons' integer hash): not the Bloom filters' finalizer,
 * so a segment's choice and positions are independent of a chunk filter's.
 */
function lowbias32(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x7feb352d);
  h ^= h >>> 15;
  h = Math.imul(h, 0x846ca68b);
  return (h ^ (h >>> 16)) >>> 0;
}

/**
 * The segment a member's hash falls in.
 *
 * @example
 * ```ts
 * coarseSegment(bloomHash("timeout").h1); // 0 to 127
 * ```
 */
export function coarseSegment(h1: number): number {
  return lowbias32(h1 ^ 0x9e3779b9) % COARSE_SEGMENTS;
}

/** The bit positions of a member in a segment of `bits` bits. */
function positions(h1: number, bits: number, each: (at: number) => void) {
  let at = h1 % bits;
  const step = 1 + (lowbias32(h1 ^ 0x632be5ab) % Math.max(1, bits - 1));
  for (let i = 0; i < HASHES; i++) {
    each(at);
    at = (at + step) % bits;
  }
}

/**
 * One segment's filter over `members` (hashes that fall in it): sized at
 * {@linkcode BITS_PER_ITEM} bits each, at least 8 bytes.
 */
export function buildCoarseSegment(members: readonly number[]): Uint8Array {
  const bytes = new Uint8Array(
    Math.max(8, Math.ceil(members.length * BITS_PER_ITEM / 8)),
  );
  const bits = bytes.length * 8;
  for (const h1 of members) {
    positions(h1, bits, (at) => bytes[at >>> 3]! |= 1 << (at & 7));
  }
  return bytes;
}

/**
 * Whether a segment may hold the member with this hash (false: certainly
 * not).
 *
 * @example
 * ```ts
 * coarseHas(buildCoarseSegment([hash.h1]), hash); // true
 * ```
 */
export function coarseHas(segment: Uint8Array, hash: BloomHash): boolean {
  const bits = segment.length * 8;
  let found = true;
  positions(hash.h1, bits, (at) => {
    if ((segment[at >>> 3]! & (1 << (at & 7))) === 0) found = false;
  });
  return found;
}

/** The `log_coarse_groups/` value of a group. */
export function encodeCoarseGroup(group: CoarseGroup): Uint8Array {
  const json = encoder.encode(
    JSON.stringify({ f: group.firstId, c: group.chunks, n: group.counts }),
  );
  const value = new Uint8Array(1 + json.length);
  value[0] = FORMAT;
  value.set(json, 1);
  return value;
}

/** Decodes a `log_coarse_groups/` value; `lastId` is its key's name. */
export function decodeCoarseGroup(value: unknown, lastId: string): CoarseGroup {
  if (!(value instanceof Uint8Array) || value[0] !== FORMAT) {
    throw new Error("Cannot read a coarse group: unknown format");
  }
  const raw = JSON.parse(decoder.decode(value.subarray(1)));
  return { firstId: raw.f, lastId, chunks: raw.c, counts: raw.n };
}

/** The `log_coarse_hashes/` value: distinct member hashes, 32 bits each. */
export function encodePending(hashes: Iterable<number>): Uint8Array {
  const list = [...hashes];
  const value = new Uint8Array(1 + 4 * list.length);
  value[0] = FORMAT;
  const view = new DataView(value.buffer);
  list.forEach((h, i) => view.setUint32(1 + 4 * i, h, true));
  return value;
}

/** Decodes a `log_coarse_hashes/` value into its member hashes. */
export function decodePending(value: unknown): number[] {
  if (!(value instanceof Uint8Array) || value[0] !== FORMAT) {
    throw new Error("Cannot read a chunk's pending hashes: unknown format");
  }
  const view = new DataView(value.buffer, value.byteOffset, value.length);
  const hashes: number[] = [];
  for (let at = 1; at + 4 <= value.length; at += 4) {
    hashes.push(view.getUint32(at, true));
  }
  return hashes;
}

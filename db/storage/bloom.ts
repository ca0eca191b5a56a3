/**
 * Bloom filters: a set of strings in a few bits per member that answers
 * "certainly absent" or "maybe present", never a false "absent". Each block
 * of a stored chunk has one over its tokens and field pairs (see
 * db/storage/text.ts), so that a query skips chunks and blocks that cannot
 * match.
 *
 * Sized at {@linkcode BITS_PER_ITEM} bits per member with
 * {@linkcode HASHES} probes: about 1 % of absent members answer "maybe".
 * Probes come from two 32-bit hashes of the member (Kirsch–Mitzenmacher
 * double hashing), computed once per member and reused on every filter.
 *
 * @module
 */

/** Bits per member: about 1 % false positives with 7 probes. */
export const BITS_PER_ITEM = 10;
/** Probes per member. */
export const HASHES = 7;
/** Largest filter, in bytes: keeps a filter inside one KV value. */
export const MAX_BLOOM_BYTES = 48_000;

/** Two 32-bit hashes of a member; compute once, probe many filters. */
export interface BloomHash {
  h1: number;
  h2: number;
}

/** A filter: its bits (the length fixes the size) and number of probes. */
export interface Bloom {
  bits: Uint8Array;
  k: number;
}

function mix(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  return (h ^ (h >>> 16)) >>> 0;
}

/** First state of a member's first hash. */
export const HASH_A_SEED = 0x811c9dc5;

/** First state of a member's second hash, for a member of `length` units. */
export function hashBSeed(length: number): number {
  return 0x01000193 ^ length;
}

/** The first hash's state after one more UTF-16 unit `c`. */
export function hashAStep(a: number, c: number): number {
  return Math.imul(a ^ c, 0x01000193);
}

/** The second hash's state after one more UTF-16 unit `c`. */
export function hashBStep(b: number, c: number): number {
  return Math.imul(b ^ c, 0x5bd1e995);
}

/**
 * Hashes a member (FNV-1a over its UTF-16 units, two seeds, then mixed).
 * The steps are exported so that a member hashed in parts (a field pair
 * whose path is hashed once per chunk) gets the same hashes.
 *
 * @example
 * ```ts
 * bloomHas(bloom, bloomHash("timeout")); // false: certainly absent
 * ```
 */
export function bloomHash(member: string): BloomHash {
  let a = HASH_A_SEED;
  let b = hashBSeed(member.length);
  for (let i = 0; i < member.length; i++) {
    const c = member.charCodeAt(i);
    a = hashAStep(a, c);
    b = hashBStep(b, c);
  }
  return { h1: mix(a), h2: (mix(b) | 1) >>> 0 };
}

/**
 * The members of a filter being built, each hashed once as it is added:
 * a token is given as a range of a text, so no string is made for it, and
 * a member added again is skipped (it is known by its two hashes, kept in
 * typed arrays and found through an open-addressing table: no number is
 * boxed and no set is hashed per member). {@linkcode BloomMembers.build} sizes the filter for them.
 *
 * @example
 * ```ts
 * const members = new BloomMembers();
 * members.addRange("db timeout", 3, 10); // "timeout"
 * bloomHas(members.build(), bloomHash("timeout")); // true
 * ```
 */
export class BloomMembers {
  #h1 = new Uint32Array(64);
  #h2 = new Uint32Array(64);
  #size = 0;
  /**
   * Open addressing over the members: 1 + a member's index, 0 for a free
   * slot; at most half full, so a probe finds a free slot soon.
   */
  #slots = new Int32Array(128);

  /** Members added (each once). */
  get size(): number {
    return this.#size;
  }

  /** The first hash of each member, in the order added. */
  get hashes(): Uint32Array {
    return this.#h1.subarray(0, this.#size);
  }

  /** Adds `text.slice(start, end)`, hashed as {@linkcode bloomHash} does. */
  addRange(text: string, start: number, end: number): void {
    let a = HASH_A_SEED;
    let b = hashBSeed(end - start);
    for (let i = start; i < end; i++) {
      const c = text.charCodeAt(i);
      a = hashAStep(a, c);
      b = hashBStep(b, c);
    }
    this.addStates(a, b);
  }

  /**
   * Adds `text.slice(start, end).toLowerCase()` of a range of ASCII
   * units (A-Z lower-cased as they are hashed), without making it.
   */
  addLowerAscii(text: string, start: number, end: number): void {
    let a = HASH_A_SEED;
    let b = hashBSeed(end - start);
    for (let i = start; i < end; i++) {
      let c = text.charCodeAt(i);
      if (c >= 65 && c <= 90) c |= 0x20;
      a = hashAStep(a, c);
      b = hashBStep(b, c);
    }
    this.addStates(a, b);
  }

  /**
   * Adds the member whose two hashes reached states `a` and `b` over all
   * its units (see {@linkcode hashAStep}), before they are mixed.
   */
  addStates(a: number, b: number): void {
    this.#insert(mix(a), (mix(b) | 1) >>> 0);
  }

  /** Adds a whole string. */
  add(member: string): void {
    this.addRange(member, 0, member.length);
  }

  /** Adds the member of hashes `h1`, `h2` unless it is there already. */
  #insert(h1: number, h2: number): void {
    const slots = this.#slots;
    const mask = slots.length - 1;
    for (let slot = (h1 ^ (h2 >>> 11)) & mask;; slot = (slot + 1) & mask) {
      const at = slots[slot]!;
      if (at === 0) {
        const n = this.#size++;
        if (n === this.#h1.length) this.#growMembers();
        this.#h1[n] = h1;
        this.#h2[n] = h2;
        slots[slot] = n + 1;
        if (this.#size * 2 > slots.length) this.#growSlots();
        return;
      }
      if (this.#h1[at - 1] === h1 && this.#h2[at - 1] === h2) return;
    }
  }

  #growMembers(): void {
    const h1 = new Uint32Array(this.#h1.length * 2);
    const h2 = new Uint32Array(this.#h2.length * 2);
    h1.set(this.#h1);
    h2.set(this.#h2);
    this.#h1 = h1;
    this.#h2 = h2;
  }

  #growSlots(): void {
    const slots = new Int32Array(this.#slots.length * 2);
    const mask = slots.length - 1;
    for (let n = 0; n < this.#size; n++) {
      let slot = (this.#h1[n]! ^ (this.#h2[n]! >>> 11)) & mask;
      while (slots[slot] !== 0) slot = (slot + 1) & mask;
      slots[slot] = n + 1;
    }
    this.#slots = slots;
  }

  /**
   * A filter sized for the members (at most `maxBytes`), holding them all:
   * smaller, it answers "maybe" more often, never "no" for a member.
   */
  build(maxBytes = MAX_BLOOM_BYTES): Bloom {
    const bloom = createBloom(this.#size, maxBytes);
    for (let i = 0; i < this.#size; i++) {
      setProbes(bloom, this.#h1[i]!, this.#h2[i]!);
    }
    return bloom;
  }
}

/** An empty filter sized for `members` members, at most `maxBytes`. */
export function createBloom(
  members: number,
  maxBytes = MAX_BLOOM_BYTES,
): Bloom {
  const bytes = Math.max(
    8,
    Math.min(maxBytes, MAX_BLOOM_BYTES, Math.ceil(members * BITS_PER_ITEM / 8)),
  );
  return { bits: new Uint8Array(bytes), k: HASHES };
}

/** Adds a member, given its hash. */
export function bloomAdd(bloom: Bloom, hash: BloomHash): void {
  setProbes(bloom, hash.h1, hash.h2);
}

/**
 * Sets the bits of the member of hashes `h1`, `h2`: `k` probes from
 * `h1 % m`, `h2 % m` apart, round the `m` bits.
 */
function setProbes(bloom: Bloom, h1: number, h2: number): void {
  const bits = bloom.bits;
  const m = bits.length * 8;
  // `| 0` (the remainders are below m) keeps it in integers: twice as fast.
  let at = (h1 >>> 0) % m | 0;
  const step = (h2 >>> 0) % m | 0;
  for (let i = 0; i < bloom.k; i++) {
    bits[at >>> 3]! |= 1 << (at & 7);
    at += step; // below 2m: one subtraction is the remainder
    if (at >= m) at -= m;
  }
}

/** Whether the member with this hash may be present (false: certainly not). */
export function bloomHas(bloom: Bloom, hash: BloomHash): boolean {
  const bits = bloom.bits;
  const m = bits.length * 8;
  let at = (hash.h1 >>> 0) % m | 0; // as setProbes finds them
  const step = (hash.h2 >>> 0) % m | 0;
  for (let i = 0; i < bloom.k; i++) {
    if ((bits[at >>> 3]! & (1 << (at & 7))) === 0) return false;
    at += step;
    if (at >= m) at -= m;
  }
  return true;
}

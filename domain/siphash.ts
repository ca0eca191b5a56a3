/**
 * SipHash-2-4 (Aumasson and Bernstein): a keyed 64-bit hash made for hash
 * tables whose keys an attacker chooses. Without the key, its outputs cannot
 * be predicted, so titles cannot be ground onto chosen values. Synchronous
 * and without allocation but the result, for the consumer's hot path.
 *
 * @module
 */

/** Bytes of a key. */
export const SIPHASH_KEY_BYTES = 16;

/** SipHash's state v0..v3 as high and low halves: v0h, v0l, v1h, … */
const V = new Uint32Array(8);

/**
 * Half a SipRound's step on {@linkcode V}: va += vb; vb = rotl(vb, r);
 * vb ^= va, with `a` and `b` the indexes of the words' high halves and
 * 0 < r < 32.
 */
function addRotateXor(a: number, b: number, r: number): void {
  const al = V[a + 1]!, bh = V[b]!, bl = V[b + 1]!;
  const l = (al + bl) >>> 0;
  const ah = (V[a]! + bh + (l < al ? 1 : 0)) >>> 0;
  V[a] = ah;
  V[a + 1] = l;
  V[b] = ((bh << r) | (bl >>> (32 - r))) ^ ah;
  V[b + 1] = ((bl << r) | (bh >>> (32 - r))) ^ l;
}

/** va = rotl(va, 32): swaps the halves of the word at `a`. */
function swapHalves(a: number): void {
  const h = V[a]!;
  V[a] = V[a + 1]!;
  V[a + 1] = h;
}

/** `n` SipRounds on {@linkcode V}. */
function sipRounds(n: number): void {
  for (let r = 0; r < n; r++) {
    addRotateXor(0, 2, 13); // v0 += v1; v1 = rotl(v1, 13); v1 ^= v0
    swapHalves(0); // v0 = rotl(v0, 32)
    addRotateXor(4, 6, 16); // v2 += v3; v3 = rotl(v3, 16); v3 ^= v2
    addRotateXor(0, 6, 21); // v0 += v3; v3 = rotl(v3, 21); v3 ^= v0
    addRotateXor(4, 2, 17); // v2 += v1; v1 = rotl(v1, 17); v1 ^= v2
    swapHalves(4); // v2 = rotl(v2, 32)
  }
}

/** One message word through SipHash's compression: 2 rounds. */
function sipBlock(mh: number, ml: number): void {
  V[6]! ^= mh;
  V[7]! ^= ml;
  sipRounds(2);
  V[0]! ^= mh;
  V[1]! ^= ml;
}

/**
 * SipHash-2-4 of `data` under a 16-byte key, as 16 hex digits (the 64-bit
 * result, big-endian). The 64-bit words are pairs of 32-bit halves.
 *
 * @example
 * ```ts
 * sipHash24(new Uint8Array(16), new Uint8Array()); // "1e924b9d737700d7"
 * ```
 */
export function sipHash24(key: Uint8Array, data: Uint8Array): string {
  if (key.length !== SIPHASH_KEY_BYTES) {
    throw new RangeError(
      `Cannot hash: expected a key of ${SIPHASH_KEY_BYTES} bytes`,
    );
  }
  const word = (bytes: Uint8Array, i: number) =>
    (bytes[i]! | (bytes[i + 1]! << 8) | (bytes[i + 2]! << 16) |
      (bytes[i + 3]! << 24)) >>> 0;
  const k0l = word(key, 0), k0h = word(key, 4);
  const k1l = word(key, 8), k1h = word(key, 12);
  V[0] = k0h ^ 0x736f6d65, V[1] = k0l ^ 0x70736575;
  V[2] = k1h ^ 0x646f7261, V[3] = k1l ^ 0x6e646f6d;
  V[4] = k0h ^ 0x6c796765, V[5] = k0l ^ 0x6e657261;
  V[6] = k1h ^ 0x74656462, V[7] = k1l ^ 0x79746573;
  const n = data.length;
  const whole = n - (n % 8);
  for (let i = 0; i < whole; i += 8) sipBlock(word(data, i + 4), word(data, i));
  // The last block: the remaining bytes, and the length's low byte on top.
  let ml = 0, mh = (n & 0xff) << 24;
  for (let i = whole; i < n; i++) {
    const shift = ((i - whole) % 4) * 8;
    if (i - whole < 4) ml |= data[i]! << shift;
    else mh |= data[i]! << shift;
  }
  sipBlock(mh >>> 0, ml >>> 0);
  V[5]! ^= 0xff;
  sipRounds(4);
  const hi = (V[0]! ^ V[2]! ^ V[4]! ^ V[6]!) >>> 0;
  const lo = (V[1]! ^ V[3]! ^ V[5]! ^ V[7]!) >>> 0;
  return hi.toString(16).padStart(8, "0") + lo.toString(16).padStart(8, "0");
}

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

/** `n` SipRounds on {@linkcode V}, in locals (a closure over them was 40 times slower). */
function sipRounds(n: number): void {
  let v0h = V[0]!, v0l = V[1]!, v1h = V[2]!, v1l = V[3]!;
  let v2h = V[4]!, v2l = V[5]!, v3h = V[6]!, v3l = V[7]!;
  let l: number, h: number;
  for (let r = 0; r < n; r++) {
    // v0 += v1; v1 = rotl(v1, 13); v1 ^= v0; v0 = rotl(v0, 32)
    l = (v0l + v1l) >>> 0;
    v0h = (v0h + v1h + (l < v0l ? 1 : 0)) >>> 0;
    v0l = l;
    h = (v1h << 13) | (v1l >>> 19);
    l = (v1l << 13) | (v1h >>> 19);
    v1h = (h ^ v0h) >>> 0;
    v1l = (l ^ v0l) >>> 0;
    h = v0h;
    v0h = v0l;
    v0l = h;
    // v2 += v3; v3 = rotl(v3, 16); v3 ^= v2
    l = (v2l + v3l) >>> 0;
    v2h = (v2h + v3h + (l < v2l ? 1 : 0)) >>> 0;
    v2l = l;
    h = (v3h << 16) | (v3l >>> 16);
    l = (v3l << 16) | (v3h >>> 16);
    v3h = (h ^ v2h) >>> 0;
    v3l = (l ^ v2l) >>> 0;
    // v0 += v3; v3 = rotl(v3, 21); v3 ^= v0
    l = (v0l + v3l) >>> 0;
    v0h = (v0h + v3h + (l < v0l ? 1 : 0)) >>> 0;
    v0l = l;
    h = (v3h << 21) | (v3l >>> 11);
    l = (v3l << 21) | (v3h >>> 11);
    v3h = (h ^ v0h) >>> 0;
    v3l = (l ^ v0l) >>> 0;
    // v2 += v1; v1 = rotl(v1, 17); v1 ^= v2; v2 = rotl(v2, 32)
    l = (v2l + v1l) >>> 0;
    v2h = (v2h + v1h + (l < v2l ? 1 : 0)) >>> 0;
    v2l = l;
    h = (v1h << 17) | (v1l >>> 15);
    l = (v1l << 17) | (v1h >>> 15);
    v1h = (h ^ v2h) >>> 0;
    v1l = (l ^ v2l) >>> 0;
    h = v2h;
    v2h = v2l;
    v2l = h;
  }
  V[0] = v0h, V[1] = v0l, V[2] = v1h, V[3] = v1l;
  V[4] = v2h, V[5] = v2l, V[6] = v3h, V[7] = v3l;
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

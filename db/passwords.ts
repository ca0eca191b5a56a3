/**
 * Password hashes of the dashboard's accounts: scrypt from `node:crypto`
 * with a random salt, stored with its parameters, checked in constant time,
 * and at most {@linkcode MAX_CONCURRENT_HASHES} computed at once
 * (docs/accounts.md#passwords).
 *
 * @module
 */
import { scrypt, timingSafeEqual } from "node:crypto";

/** Longest password checked (the hash's input stays small). */
export const MAX_PASSWORD_LENGTH = 1024;

/**
 * scrypt's parameters for new hashes: N = 2^15, r = 8, p = 3 (32 MiB and
 * about 0.2 s of one core per hash), one of OWASP's recommended
 * equivalents of N = 2^17, p = 1 at a quarter of its memory. Each stored
 * hash names its own parameters, so they can be raised later.
 */
export const SCRYPT_PARAMS = {
  N: 32768,
  r: 8,
  p: 3,
  keyLength: 32,
  saltLength: 16,
};

/**
 * scrypt computations running at once in this process, at most: each holds
 * 128·N·r bytes (32 MiB) while it runs, and 16 at once were measured at
 * +538 MB of RSS. The others wait their turn (the sign-in limit bounds how
 * many can wait).
 */
export const MAX_CONCURRENT_HASHES = 2;
let hashing = 0;
const waitingForHash: (() => void)[] = [];

async function scryptAsync(
  password: string,
  salt: Uint8Array,
  params: { N: number; r: number; p: number; keyLength: number },
): Promise<Uint8Array> {
  if (hashing >= MAX_CONCURRENT_HASHES) {
    await new Promise<void>((resolve) => waitingForHash.push(resolve));
  } else {
    hashing++;
  }
  try {
    return await scryptNow(password, salt, params);
  } finally {
    // The slot passes straight to the next in line, if any.
    const next = waitingForHash.shift();
    if (next) next();
    else hashing--;
  }
}

function scryptNow(
  password: string,
  salt: Uint8Array,
  params: { N: number; r: number; p: number; keyLength: number },
): Promise<Uint8Array> {
  if (params.N > 2 ** 20 || params.r > 16 || params.p > 16) {
    return Promise.reject(
      new RangeError(
        "Cannot check a password hash: its scrypt cost is too high",
      ),
    );
  }
  return new Promise((resolve, reject) =>
    scrypt(password, salt, params.keyLength, {
      N: params.N,
      r: params.r,
      p: params.p,
      maxmem: 256 * params.N * params.r,
    }, (error, key) => error ? reject(error) : resolve(new Uint8Array(key)))
  );
}

function toBase64(bytes: Uint8Array): string {
  return btoa(String.fromCharCode(...bytes));
}

function fromBase64(text: string): Uint8Array {
  return Uint8Array.from(atob(text), (ch) => ch.charCodeAt(0));
}

/**
 * Hashes a password with scrypt and a random salt, in the stored form.
 *
 * @example
 * ```ts
 * await hashPassword("correct horse"); // "scrypt$32768$8$3$…$…"
 * ```
 */
export async function hashPassword(password: string): Promise<string> {
  const { N, r, p, saltLength } = SCRYPT_PARAMS;
  const salt = crypto.getRandomValues(new Uint8Array(saltLength));
  const hash = await scryptAsync(password, salt, SCRYPT_PARAMS);
  return `scrypt$${N}$${r}$${p}$${toBase64(salt)}$${toBase64(hash)}`;
}

/** A hash of no password, checked when an email names no account. */
let decoy: Promise<string> | undefined;

/**
 * Whether `password` matches a stored hash (constant-time comparison). With
 * `null` it hashes anyway and answers `false`, so that an unknown email
 * takes as long as a wrong password.
 */
export async function verifyPassword(
  password: string,
  stored: string | null,
): Promise<boolean> {
  if (password.length > MAX_PASSWORD_LENGTH) return false;
  const text = stored ?? await (decoy ??= hashPassword(crypto.randomUUID()));
  const match = /^scrypt\$(\d+)\$(\d+)\$(\d+)\$([^$]+)\$([^$]+)$/.exec(text);
  if (!match) return false;
  const expected = fromBase64(match[5]!);
  const actual = await scryptAsync(password, fromBase64(match[4]!), {
    N: Number(match[1]),
    r: Number(match[2]),
    p: Number(match[3]),
    keyLength: expected.length,
  });
  return timingSafeEqual(actual, expected) && stored !== null;
}

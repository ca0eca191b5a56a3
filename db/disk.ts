/**
 * The disk under a database file, as the space guard sees it: its free
 * space, whether an error says it is full, and writing a file that really
 * takes its size.
 *
 * @module
 */
import { statfsSync } from "node:fs";

/** Files are written in chunks of this size. */
const CHUNK_BYTES = 1024 * 1024;

/**
 * Whether `error` (or one of its causes) says that the disk is full: SQLite's
 * "database or disk is full", the OS's ENOSPC or EDQUOT.
 *
 * @example
 * ```ts
 * if (isDiskFullError(error)) guard.failed(error);
 * ```
 */
export function isDiskFullError(error: unknown): boolean {
  for (let e = error, depth = 0; e != null && depth < 8; depth++) {
    const message = e instanceof Error ? e.message : String(e);
    if (
      /database or disk is full|no space left|quota exceeded|os error (28|122)\)/i
        .test(message)
    ) {
      return true;
    }
    e = e instanceof Error ? e.cause : undefined;
  }
  return false;
}

/**
 * Free bytes for an unprivileged writer on the file system of `dir`, by
 * `statfs`. Deno asks for `--allow-sys=statfs` (and read access); it throws
 * without them.
 *
 * @example
 * ```ts
 * const free = statfsFree("./data");
 * ```
 */
export function statfsFree(dir: string): number {
  const stats = statfsSync(dir);
  return stats.bavail * stats.bsize;
}

/**
 * Bytes hard to compress or deduplicate (xorshift32), so that the reserve
 * takes its size on file systems that compress.
 */
function filler(bytes: number, seed: number): Uint8Array {
  const words = new Uint32Array(Math.ceil(bytes / 4));
  let x = seed | 1;
  for (let i = 0; i < words.length; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    words[i] = x;
  }
  return new Uint8Array(words.buffer, 0, bytes);
}

/**
 * Writes `bytes` bytes to `path` and syncs them, so that they take their
 * size on the disk now (no delayed allocation, no compression). On failure
 * removes what was written and throws.
 *
 * @example
 * ```ts
 * await writeTakingSpace("./data/kv.sqlite-reserve", 4 * 1024 * 1024, Date.now());
 * ```
 */
export async function writeTakingSpace(
  path: string,
  bytes: number,
  seed: number,
): Promise<void> {
  const chunk = filler(Math.min(CHUNK_BYTES, bytes), seed);
  try {
    using file = await Deno.open(path, {
      write: true,
      create: true,
      truncate: true,
    });
    for (let done = 0; done < bytes;) {
      const part = chunk.subarray(0, Math.min(chunk.length, bytes - done));
      for (let n = 0; n < part.length;) {
        n += await file.write(part.subarray(n));
      }
      done += part.length;
    }
    await file.syncData();
  } catch (error) {
    await Deno.remove(path).catch(() => {});
    throw error;
  }
}

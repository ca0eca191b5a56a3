/**
 * Disk space for a database file (docs/design.md#full-disk). Deno's SQLite
 * backend also writes on its own, outside any commit (it deletes expired
 * keys), and when such a write finds the disk full the runtime panics and the
 * process exits. So the server never lets its own writes take the last
 * {@linkcode MIN_FREE_BYTES} of the disk, and it keeps a reserve file of
 * {@linkcode RESERVE_BYTES} beside the database (`<KV_PATH>-reserve`): once
 * the disk is full and whatever filled it has stopped, the reserve is
 * deleted, so that those writes find room; it is written back before the
 * server writes again.
 *
 * {@linkcode SpaceGuard} is the gate: {@linkcode SpaceGuard.open} says
 * whether KV may be written now, {@linkcode SpaceGuard.failed} hears the
 * errors of failed writes, and its timer notices a disk filled by someone
 * else, releases the reserve and notices the return of space. It never
 * writes KV itself.
 *
 * @module
 */
import { isDiskFullError, statfsFree, writeTakingSpace } from "./disk.ts";
import { folderOf, isLocalFile, KvOpenError } from "./open.ts";

/** Size of the reserve file kept beside the database. */
export const RESERVE_BYTES = 4 * 1024 * 1024;
/**
 * Free space under which the server stops writing: room for the commits in
 * flight (one producer commit is at most ~800 KB) and the backend's own
 * writes.
 */
export const MIN_FREE_BYTES = 4 * 1024 * 1024;
/** Free space needed beyond the floor and the reserve before writes resume. */
export const RESUME_MARGIN_BYTES = 1024 * 1024;
/** Free space is read at most this often on the write path near the floor. */
const FREE_CHECK_MS = 10;
/**
 * Room above the floor past which the write path leaves the free space to the
 * timer (every {@linkcode TICK_MS}): filling it within one tick takes 640 MB/s
 * of writes, and a write that fails for space closes the gate anyway. Each
 * `statfs` cost the thread ~0.2 ms, 2 % of it at 100 reads a second.
 */
export const FAR_FROM_FLOOR_BYTES = 64 * 1024 * 1024;
/** Period of the timer that watches the disk. */
const TICK_MS = 100;
/**
 * Room above the floor past which the free space is read only every
 * {@linkcode ROOMY_TICK_MS}, by the timer and on the write path: filling it
 * within one read takes the same 640 MB/s as filling
 * {@linkcode FAR_FROM_FLOOR_BYTES} within {@linkcode TICK_MS}. Nine reads in
 * ten fewer were most of what a server at rest spent (each `statfs` costs
 * the thread ~0.2 ms).
 */
export const ROOMY_BYTES = 10 * FAR_FROM_FLOOR_BYTES;
/** Period of the reads while the disk is roomy and the gate open. */
export const ROOMY_TICK_MS = 1000;
/**
 * The reserve is released once the free space has not fallen for this long:
 * released while something still fills the disk, it would be eaten too.
 */
export const SETTLE_MS = 200;
/** Wait after a failed attempt to write the reserve back. */
const RETRY_MS = 1000;

/**
 * Free bytes of the file system holding folder `dir`; `null` or a throw when
 * unknown.
 */
export type FreeSpace = (dir: string) => number | null;

/** Options of {@linkcode SpaceGuard}. */
export interface SpaceGuardOptions {
  /** The database file. */
  path: string;
  /** Size of the reserve file. @default {RESERVE_BYTES} */
  reserveBytes?: number;
  /** Free space under which writes stop. @default {MIN_FREE_BYTES} */
  minFreeBytes?: number;
  /** Reads the free space. @default the file system's, by `statfs` */
  freeSpace?: FreeSpace;
  /** Clock. @default {Date.now} */
  now?: () => number;
  /** Period of the timer. @default {100} */
  tickMs?: number;
  /** Told of each change (full, reserve released, space back). @default logs to stderr */
  log?: (line: string) => void;
}

function mib(bytes: number): string {
  return `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
}

/**
 * Keeps the server's writes off the last of the disk and holds the reserve.
 *
 * @example
 * ```ts
 * const guard = await openSpaceGuard("./data/kv.sqlite");
 * guard?.start();
 * if (guard?.open() === false) console.log("disk full: answer 503");
 * ```
 */
export class SpaceGuard {
  #path: string;
  #reservePath: string;
  #probePath: string;
  #reserveBytes: number;
  #minFree: number;
  #freeSpace: FreeSpace;
  #now: () => number;
  #log: (line: string) => void;
  #tickMs: number;
  #full = false;
  /** Whether this process holds the reserve file. */
  #reserved = false;
  #checkedAt = -Infinity;
  /**
   * Bytes above the floor at the last read of the free space; -Infinity
   * when unknown or not read since the gate last opened.
   */
  #room = -Infinity;
  /** While full: the last free space read, and when it last fell. */
  #lastFree: number | null = null;
  #fellAt = -Infinity;
  #retryAt = -Infinity;
  #unknownTold = false;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #started = false;
  #recovering: Promise<boolean> | null = null;

  constructor(options: SpaceGuardOptions) {
    this.#path = options.path;
    this.#reservePath = `${options.path}-reserve`;
    this.#probePath = `${options.path}-probe`;
    this.#reserveBytes = options.reserveBytes ?? RESERVE_BYTES;
    this.#minFree = options.minFreeBytes ?? MIN_FREE_BYTES;
    this.#freeSpace = options.freeSpace ?? statfsFree;
    this.#now = options.now ?? Date.now;
    this.#log = options.log ?? ((line) => console.error(line));
    this.#tickMs = options.tickMs ?? TICK_MS;
  }

  /** The reserve file's path: `<KV_PATH>-reserve`. */
  get reservePath(): string {
    return this.#reservePath;
  }

  /** Whether the disk was found full and writes are held back. */
  get full(): boolean {
    return this.#full;
  }

  /** Whether this process holds the reserve file. */
  get reserved(): boolean {
    return this.#reserved;
  }

  /**
   * Whether KV may be written now. While it may, the free space is read
   * again (at most every 10 ms, every 100 ms while it was more than
   * {@linkcode FAR_FROM_FLOOR_BYTES} above the floor, every second while more
   * than {@linkcode ROOMY_BYTES}), and under the floor the disk counts as
   * full.
   */
  open(): boolean {
    return this.#open(false);
  }

  /** {@linkcode open}; `look`: read the free space whenever it is open. */
  #open(look: boolean): boolean {
    if (!this.#full) {
      const now = this.#now();
      const every = this.#room > ROOMY_BYTES
        ? ROOMY_TICK_MS
        : this.#room > FAR_FROM_FLOOR_BYTES
        ? this.#tickMs
        : FREE_CHECK_MS;
      if (look || now - this.#checkedAt >= every) {
        this.#checkedAt = now;
        const free = this.#free();
        this.#room = free === null ? -Infinity : free - this.#minFree;
        if (free !== null && free < this.#minFree) {
          this.#enterFull(free, `${mib(free)} free`);
        }
      }
    }
    return !this.#full;
  }

  /** Told of a failed write: a full disk closes the gate. */
  failed(error: unknown): void {
    if (!this.#full && isDiskFullError(error)) {
      this.#enterFull(this.#free(), "a write failed for space");
    }
  }

  /**
   * One look at the disk, as the timer takes it: while the gate is open,
   * notices a full disk; while it is closed, releases the reserve once the
   * free space has stopped falling, and writes it back and opens the gate
   * once there is room again. Resolves to whether the gate is open.
   */
  check(): Promise<boolean> {
    if (this.#open(true)) return Promise.resolve(true);
    const now = this.#now();
    const free = this.#free();
    // Unknown free space never counts as falling: the reserve then goes
    // SETTLE_MS after the disk was found full.
    if (free !== null && this.#lastFree !== null && free < this.#lastFree) {
      this.#fellAt = now;
    }
    this.#lastFree = free;
    if (this.#reserved && now - this.#fellAt >= SETTLE_MS) this.#release();
    this.#recovering ??= this.#recover(free).finally(() => {
      this.#recovering = null;
    });
    return this.#recovering;
  }

  async #recover(free: number | null): Promise<boolean> {
    const now = this.#now();
    if (now < this.#retryAt) return false;
    const margin = this.#minFree + RESUME_MARGIN_BYTES;
    if (free === null) {
      // Free space unknown: writing is the only probe, once the reserve is
      // released (it is written back first, then the margin is tried).
      if (this.#reserved) return false;
    } else if (free < (this.#reserved ? 0 : this.#reserveBytes) + margin) {
      return false;
    }
    try {
      if (!this.#reserved) {
        await this.#writeFile(this.#reservePath, this.#reserveBytes);
        this.#reserved = true;
      }
      if (free === null) {
        await this.#writeFile(this.#probePath, margin);
        await Deno.remove(this.#probePath);
      }
    } catch {
      // Still no room (or a quota statfs does not show): try again later.
      this.#retryAt = now + RETRY_MS;
      return false;
    }
    this.#full = false;
    this.#room = -Infinity;
    this.#checkedAt = -Infinity;
    const left = this.#free();
    this.#log(
      `KV_PATH "${this.#path}" has space again` +
        (left === null ? "" : ` (${mib(left)} free)`) +
        ": accepting entries",
    );
    return true;
  }

  /**
   * Makes sure the reserve file is in place and the floor is free: at
   * start-up, before anything is written. Throws {@linkcode KvOpenError}
   * naming `KV_PATH` when it cannot.
   */
  async prepare(): Promise<void> {
    let size = 0;
    try {
      size = (await Deno.stat(this.#reservePath)).size;
    } catch (error) {
      if (!(error instanceof Deno.errors.NotFound)) {
        throw this.#openError(error);
      }
    }
    if (size !== this.#reserveBytes) {
      const free = this.#free();
      const needed = this.#reserveBytes + this.#minFree;
      if (free !== null && free + size < needed) {
        throw this.#noSpace(free + size, needed);
      }
      try {
        await this.#writeFile(this.#reservePath, this.#reserveBytes);
      } catch (error) {
        throw isDiskFullError(error)
          ? this.#noSpace(this.#free(), needed)
          : this.#openError(error);
      }
    }
    this.#reserved = true;
    const free = this.#free();
    if (free !== null && free < this.#minFree) {
      throw this.#noSpace(free, this.#minFree);
    }
  }

  /**
   * The wait before the timer's next look: {@linkcode ROOMY_TICK_MS} while
   * the gate is open and the last look found more than
   * {@linkcode ROOMY_BYTES} above the floor, else the tick (100 ms).
   */
  get nextLookMs(): number {
    return !this.#full && this.#room > ROOMY_BYTES
      ? ROOMY_TICK_MS
      : this.#tickMs;
  }

  /**
   * Looks at the disk on a timer ({@linkcode SpaceGuard.nextLookMs} apart),
   * also while no request comes.
   */
  start(): void {
    if (this.#started) return;
    this.#started = true;
    const look = () => {
      // The look reads the free space before it awaits anything, so the
      // next wait is known at once.
      this.check().catch((error) =>
        this.#log(`Cannot check the disk of KV_PATH "${this.#path}": ${error}`)
      );
      if (this.#started) this.#timer = setTimeout(look, this.nextLookMs);
    };
    this.#timer = setTimeout(look, this.#tickMs);
  }

  /** Stops the timer; resolves once an attempt to recover has finished. */
  async stop(): Promise<void> {
    this.#started = false;
    clearTimeout(this.#timer);
    this.#timer = undefined;
    await this.#recovering;
  }

  #free(): number | null {
    try {
      return this.#freeSpace(folderOf(this.#path));
    } catch (error) {
      if (!this.#unknownTold) {
        this.#unknownTold = true;
        this.#log(
          `Cannot read the free space of the disk of KV_PATH "${this.#path}" ` +
            `(${error instanceof Error ? error.message : error}): a full ` +
            "disk is noticed only when a write fails; grant --allow-sys=statfs",
        );
      }
      return null;
    }
  }

  #enterFull(free: number | null, why: string): void {
    this.#full = true;
    this.#lastFree = free;
    this.#fellAt = this.#now();
    this.#retryAt = -Infinity;
    this.#log(
      `Cannot write KV_PATH "${this.#path}": its disk is full (${why}); ` +
        "answering 503 until space returns",
    );
  }

  #release(): void {
    this.#reserved = false;
    try {
      Deno.removeSync(this.#reservePath);
    } catch {
      return; // already gone: another process sharing it released it
    }
    this.#log(
      `Released the reserve "${this.#reservePath}" ` +
        `(${mib(this.#reserveBytes)}) for the database's own writes`,
    );
  }

  #writeFile(path: string, bytes: number): Promise<void> {
    return writeTakingSpace(path, bytes, this.#now());
  }

  #noSpace(free: number | null, needed: number): KvOpenError {
    const has = free === null ? "" : `${mib(free)} free, `;
    return new KvOpenError(
      this.#path,
      `no space left on its disk (${has}${mib(needed)} needed ` +
        "for the reserve and the margin)",
    );
  }

  #openError(error: unknown): KvOpenError {
    const reason = error instanceof Error ? error.message : String(error);
    return new KvOpenError(
      this.#path,
      `cannot write its reserve file "${this.#reservePath}": ${reason}`,
      { cause: error },
    );
  }
}

/**
 * The guard of the database at `path`, its reserve in place; `null` when
 * `path` is no file on this machine (`:memory:`, a URL, the platform's KV).
 * Throws {@linkcode KvOpenError} naming `KV_PATH` when the reserve cannot be
 * written or the disk is already full.
 *
 * @example
 * ```ts
 * const guard = await openSpaceGuard(config.kvPath);
 * ```
 */
export async function openSpaceGuard(
  path: string | undefined,
  options: Omit<SpaceGuardOptions, "path"> = {},
): Promise<SpaceGuard | null> {
  if (!isLocalFile(path)) return null;
  const guard = new SpaceGuard({ ...options, path });
  await guard.prepare();
  return guard;
}

/**
 * What a scan's attempts learned, for the attempts after them
 * (docs/storage.md#reads-stay-exact-while-chunks-move). A scan is done
 * again when a merge moved what it read, and under steady traffic that is
 * a few of the newest chunks out of a hundred. For each chunk it listed,
 * the verdict of its filters, and for each it read, the lines it selected
 * there, both with the versionstamp they were read at. A chunk's summary
 * and blooms are written and deleted in the commits that write or delete
 * its value (db/storage/write.ts), so a later attempt that lists a
 * chunk's summary at that versionstamp takes both from here: it lists the
 * summaries (about 100 bytes each, where blooms are about 5 KB), reads the
 * blooms and values only of the chunks that moved, and checks what it
 * used at its end as the first attempt did.
 *
 * @module
 */
import type { ChunkSummary } from "../storage/chunk.ts";

/** Characters of the lines selected that a scan keeps, at most. */
export const MAX_KEPT_CHARS = 32 * 1024 * 1024;
/** Verdicts a scan keeps at most. */
export const MAX_KEPT_VERDICTS = 100_000;

/** What the listing concluded of a chunk, from its summary or its blooms. */
export interface Verdict {
  /** Of the summary or blooms it was drawn from. */
  versionstamp: string;
  /** The chunk to read and its blocks that may match; undefined: none. */
  read?: { summary: ChunkSummary; blocks: number[] | undefined };
  /** Whether the chunk counts as skipped (it cannot match). */
  skipped: boolean;
}

/** What an attempt selected of a chunk's lines (the filter's candidates). */
export interface SelectedLines {
  /** Of the value they were read from. */
  versionstamp: string;
  /** The lines' ids and the lines, in scan order. */
  ids: string[];
  lines: string[];
  /** Entries in the blocks read. */
  scanned: number;
}

/**
 * The verdicts and selected lines of a scan's attempts, by the chunks'
 * last ids; up to {@linkcode MAX_KEPT_VERDICTS} verdicts and
 * {@linkcode MAX_KEPT_CHARS} of lines (an aggregation over a whole store
 * keeps what it met first).
 */
export class AttemptMemory {
  readonly #verdicts = new Map<string, Verdict>();
  readonly #selected = new Map<string, SelectedLines>();
  #chars = 0;

  #again = false;

  /**
   * Whether an attempt before this one listed a chunk: this one lists
   * summaries, and reads blooms only where it meets a chunk it has no
   * verdict of.
   */
  get again(): boolean {
    return this.#again;
  }

  /** Marks the start of an attempt (the first included). */
  beginAttempt(): void {
    this.#again = this.#verdicts.size > 0;
  }

  /** The verdict on the chunk `lastId` as listed at `versionstamp`. */
  verdict(lastId: string, versionstamp: string): Verdict | undefined {
    const verdict = this.#verdicts.get(lastId);
    return verdict?.versionstamp === versionstamp ? verdict : undefined;
  }

  keepVerdict(lastId: string, verdict: Verdict): void {
    if (
      this.#verdicts.size >= MAX_KEPT_VERDICTS && !this.#verdicts.has(lastId)
    ) return;
    this.#verdicts.set(lastId, verdict);
  }

  /** The lines selected of the chunk `lastId`'s value at `versionstamp`. */
  selected(lastId: string, versionstamp: string): SelectedLines | undefined {
    const selected = this.#selected.get(lastId);
    return selected?.versionstamp === versionstamp ? selected : undefined;
  }

  keepSelected(lastId: string, selected: SelectedLines): void {
    const old = this.#selected.get(lastId);
    if (old !== undefined) {
      this.#chars -= chars(old.lines);
      this.#selected.delete(lastId);
    }
    const added = chars(selected.lines);
    if (this.#chars + added > MAX_KEPT_CHARS) return;
    // The ids and lines are cut from the text of the blocks read: copies
    // keep only themselves alive, not that text.
    this.#selected.set(lastId, {
      ...selected,
      ids: selected.ids.map(detached),
      lines: selected.lines.map(detached),
    });
    this.#chars += added;
  }
}

/**
 * A copy of `line` that does not keep alive the text it was cut from (V8
 * flattens the joined string into a new one, which the slice then holds).
 */
function detached(line: string): string {
  return (" " + line).slice(1);
}

function chars(lines: string[]): number {
  let n = 0;
  for (const line of lines) n += line.length;
  return n;
}

/**
 * Which lines of a chunk may match a filter, decided on the text alone: the
 * lines holding each needle of the filter (its terms' JSON text), in the id
 * range, at an accepted level, in scan order. Only those are parsed and
 * tested (db/query/scan.ts).
 *
 * @module
 */
import { lineId, lineLevel } from "../storage/lines.ts";
import { type CompiledFilter, foldSigma } from "./filter.ts";

/** Candidate lines of a chunk, in scan order. */
export interface Run {
  ids: string[];
  lines: string[];
  pos: number;
}

/** Offsets where the lines of `text` start. */
function lineStarts(text: string): number[] {
  const starts = [0];
  for (let at = text.indexOf("\n"); at >= 0; at = text.indexOf("\n", at + 1)) {
    starts.push(at + 1);
  }
  return starts;
}

/** Index of the line holding offset `at`. */
function lineOf(starts: number[], at: number): number {
  let low = 0;
  let high = starts.length - 1;
  while (low < high) {
    const mid = (low + high + 1) >> 1;
    if (starts[mid]! <= at) low = mid;
    else high = mid - 1;
  }
  return low;
}

/** Indexes of the lines containing one of `alternatives`, ascending. */
function linesWith(
  text: string,
  starts: number[],
  alternatives: string[],
): Set<number> {
  const found = new Set<number>();
  for (const needle of alternatives) {
    if (needle === "") return new Set(starts.keys());
    for (let at = text.indexOf(needle); at >= 0;) {
      const line = lineOf(starts, at);
      found.add(line);
      const next = starts[line + 1];
      if (next === undefined) break;
      at = text.indexOf(needle, next);
    }
  }
  return found;
}

/**
 * The lines of a chunk that may match, within [lo, hi), in scan
 * order: checked as text only.
 */
export function selectLines(
  text: string,
  filter: CompiledFilter,
  lo: string,
  hi: string,
  desc: boolean,
  stats: { entriesScanned: number },
): Run | null {
  if (text === "") return null;
  const starts = lineStarts(text);
  stats.entriesScanned += starts.length;
  let picked: number[] | null = null;
  let lower: { text: string; starts: number[] } | undefined;
  for (const needle of filter.needles) {
    let hay = { text, starts };
    if (needle.lower) {
      if (!lower) {
        const lowered = foldSigma(text.toLowerCase());
        lower = {
          text: lowered,
          starts: lowered.length === text.length ? starts : lineStarts(lowered),
        };
      }
      hay = lower;
    }
    const found = linesWith(hay.text, hay.starts, needle.alternatives);
    picked = picked === null
      ? [...found].sort((a, b) => a - b)
      : picked.filter((i) => found.has(i));
    if (picked.length === 0) return null;
  }
  const ids: string[] = [];
  const lines: string[] = [];
  const count = picked === null ? starts.length : picked.length;
  for (let k = 0; k < count; k++) {
    const i = picked === null ? k : picked[k]!;
    const end = i + 1 < starts.length ? starts[i + 1]! - 1 : text.length;
    const line = text.slice(starts[i]!, end);
    const id = lineId(line);
    if (id < lo || id >= hi) continue;
    if (filter.levelOk && !filter.levelOk(lineLevel(line))) continue;
    ids.push(id);
    lines.push(line);
  }
  if (ids.length === 0) return null;
  if (desc) {
    ids.reverse();
    lines.reverse();
  }
  return { ids, lines, pos: 0 };
}

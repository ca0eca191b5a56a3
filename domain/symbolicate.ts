/**
 * Stack frames resolved through source maps (docs/errors.md#source-maps):
 * the original function, file, line and column of each frame, and the
 * source line when the map holds its sources; a frame that does not
 * resolve says why. The maps are read with `@jridgewell/trace-mapping`,
 * the decoder that Babel, Jest and Vite's tools share: exact and fast
 * (it decodes the mappings once and searches them in O(log n)).
 *
 * Pure: the caller finds the map of a frame's URL (db/symbolicate.ts).
 *
 * A parsed map says what memory it holds ({@linkcode ParsedMap.bytes}): its
 * decoded mappings take far more than their JSON (an array per generated
 * line, one per segment), so a cache weighs maps by this estimate, not by
 * their size on disk; and {@linkcode countMappings} counts the lines and
 * segments the decoder would build without building them, for an upload to
 * be refused before it is stored.
 *
 * @module
 */
import {
  AnyMap,
  decodedMappings,
  originalPositionFor,
  sourceContentFor,
  type TraceMap,
} from "@jridgewell/trace-mapping";
import type { ResolvedStack, ShownFrame } from "./entry.ts";
import { isRuntimeFrame, type StackFrame } from "./stack.ts";

/** Longest source line kept, in characters. */
export const MAX_SOURCE_LINE = 200;
/** Longest function or file name kept from a map, in characters. */
const MAX_NAME = 500;
/** Lines searched upwards for the enclosing function's name. */
const NAME_SEARCH_LINES = 40;

/**
 * Bytes of memory the parts of a decoded map take, as measured on V8 with
 * Deno (heap kept after parsing maps of one shape each, 2–10 million
 * lines or segments): a generated line's array, and 144 more for the room
 * V8 gives an array on its first segment; a segment's array and each of
 * its 1, 4 or 5 numbers; a source (its name and its resolved name) and a
 * name; a source line split for showing. The JSON's own bytes come on top.
 */
const WEIGHT = {
  line: 40,
  filledLine: 144,
  segment: 56,
  value: 8,
  source: 48,
  name: 24,
  sourceLine: 36,
};

/** A source map read for resolving. */
export interface ParsedMap {
  map: TraceMap;
  hasSources: boolean;
  /** Lines of its sources, split once when first needed. */
  lines: Map<string, string[] | null>;
  /**
   * Bytes of memory it holds, estimated: its JSON, its decoded mappings,
   * sources and names, and the source lines split so far (which add to it).
   */
  bytes: number;
}

/**
 * Reads a source map's text (a plain or a sectioned map) and decodes its
 * mappings, so that {@linkcode ParsedMap.bytes} counts them.
 *
 * @example
 * ```ts
 * const parsed = parseSourceMap(text); // parsed.bytes: 39 MB for a 5.3 MB map of 374,000 segments
 * ```
 */
export function parseSourceMap(text: string): ParsedMap {
  const map = new AnyMap(text);
  const hasSources = (map.sourcesContent ?? []).some((c) =>
    typeof c === "string"
  );
  const bytes = text.length + decodedBytes(decodedMappings(map)) +
    map.sources.length * WEIGHT.source + map.names.length * WEIGHT.name;
  return { map, hasSources, lines: new Map(), bytes };
}

/** Bytes of memory decoded mappings take (see {@linkcode WEIGHT}). */
function decodedBytes(lines: readonly (readonly number[][])[]): number {
  let bytes = lines.length * WEIGHT.line;
  for (const line of lines) {
    if (line.length > 0) bytes += WEIGHT.filledLine;
    for (const segment of line) {
      bytes += WEIGHT.segment + segment.length * WEIGHT.value;
    }
  }
  return bytes;
}

/** Base64 digits that say a VLQ value goes on in the next one (32 to 63). */
const VLQ_GOES_ON = new Set(
  [..."ghijklmnopqrstuvwxyz0123456789+/"].map((ch) => ch.charCodeAt(0)),
);
const COMMA = 44;

/** The index past the VLQ value at `at`, read as the decoder reads it. */
function skipValue(mappings: string, at: number): number {
  while (VLQ_GOES_ON.has(mappings.charCodeAt(at++)));
  return at;
}

/**
 * The generated lines and segments that `@jridgewell/sourcemap-codec`
 * decodes `mappings` into, counted without decoding them: the lines are the
 * `;` plus one; a segment is one VLQ value before a `,` or the line's end,
 * else four or five, and the decoder steps over one character after each,
 * so a run of values without commas is several segments.
 *
 * @example
 * ```ts
 * countMappings("AAAA,CAAC;;AACA"); // { lines: 3, segments: 3 }
 * ```
 */
export function countMappings(
  mappings: string,
): { lines: number; segments: number } {
  const { length } = mappings;
  let lines = 0;
  let segments = 0;
  let at = 0;
  do {
    const semi = mappings.indexOf(";", at);
    const end = semi === -1 ? length : semi;
    for (; at < end; at++, segments++) {
      at = skipValue(mappings, at);
      if (at >= end || mappings.charCodeAt(at) === COMMA) continue;
      at = skipValue(mappings, skipValue(mappings, skipValue(mappings, at)));
      if (at < end && mappings.charCodeAt(at) !== COMMA) {
        at = skipValue(mappings, at);
      }
    }
    lines++;
    at = end + 1;
  } while (at <= length);
  return { lines, segments };
}

/** The map of a frame's file, or why there is none. */
export type MapLookup = (file: string) => ParsedMap | string;

function sourceLines(parsed: ParsedMap, source: string): string[] | null {
  let lines = parsed.lines.get(source);
  if (lines === undefined) {
    const content = sourceContentFor(parsed.map, source);
    lines = content === null ? null : content.split(/\r\n|\r|\n/);
    parsed.lines.set(source, lines);
    parsed.bytes += (lines?.length ?? 0) * WEIGHT.sourceLine;
  }
  return lines;
}

/**
 * Declarations a line may hold, the name captured; each starts where no
 * name character stands before it, so that a long word is tried once, not
 * from each of its characters.
 */
const DECLARED = [
  // `\s*(?:\*\s*)?`, not `\s*\*?\s*`: two runs of spaces side by side split
  // a long one every way (a map's line of 500 spaces, 7 ms a frame).
  /function\s*(?:\*\s*)?([A-Za-z_$][\w$]*)\s*\(/,
  /(?<![\w$])([A-Za-z_$][\w$]*)\s*[:=]\s*(?:async\s+)?(?:function\b|(?:\([^()]*\)|[A-Za-z_$][\w$]*)\s*=>)/,
  /^\s*(?:(?:async|static|public|private|protected|get|set)\s+)*([A-Za-z_$][\w$]*)\s*\([^)]*\)\s*(?::[^{]*)?\{/,
];
const NOT_NAMES = new Set(["if", "for", "while", "switch", "catch", "return"]);

/** The name of the function declared nearest above `line` (1-based). */
function enclosingName(lines: string[], line: number): string | null {
  const from = Math.min(line, lines.length);
  for (let i = from; i > 0 && i > from - NAME_SEARCH_LINES; i--) {
    const text = lines[i - 1]!.slice(0, 500);
    for (const pattern of DECLARED) {
      const name = pattern.exec(text)?.[1];
      if (name !== undefined && !NOT_NAMES.has(name)) return name;
    }
  }
  return null;
}

/** A frame as sent, not resolved, and why. */
function unresolved(frame: StackFrame, why: string): ShownFrame {
  return {
    function: frame.function,
    file: frame.file,
    line: frame.line,
    column: frame.column,
    resolved: false,
    why,
  };
}

interface Position {
  parsed: ParsedMap;
  source: string;
  line: number;
  column: number;
  name: string | null;
}

/** Where a frame's generated position maps to, or why it does not. */
function positionOf(
  frame: StackFrame,
  lookup: MapLookup,
): Position | string {
  if (isRuntimeFrame(frame)) return RUNTIME_WHY;
  if (frame.line === null || frame.column === null) {
    return "the frame has no line and column";
  }
  const parsed = lookup(frame.file);
  if (typeof parsed === "string") return parsed;
  const pos = originalPositionFor(parsed.map, {
    line: frame.line,
    column: Math.max(0, frame.column - 1),
  });
  if (pos.source === null) {
    return `the map has no mapping at line ${frame.line}, column ${frame.column}`;
  }
  return {
    parsed,
    source: pos.source,
    line: pos.line,
    column: pos.column + 1,
    name: pos.name,
  };
}

/**
 * `frames` (top first) resolved through the maps `lookup` finds. A frame's
 * original function is the name its caller's call site maps to, else the
 * function declared above its line in the source, else the minified name.
 *
 * @example
 * ```ts
 * resolveFrames(parseStack(stack), (file) => file.endsWith("/app.min.js") ? parsed : "no map");
 * ```
 */
export function resolveFrames(
  frames: StackFrame[],
  lookup: MapLookup,
): ShownFrame[] {
  const positions = frames.map((frame) => positionOf(frame, lookup));
  return frames.map((frame, i) => {
    const pos = positions[i]!;
    if (typeof pos === "string") return unresolved(frame, pos);
    const caller = positions[i + 1];
    const lines = pos.parsed.hasSources
      ? sourceLines(pos.parsed, pos.source)
      : null;
    const name = (typeof caller === "object" ? caller.name : null) ??
      (lines ? enclosingName(lines, pos.line) : null) ?? frame.function;
    const shown: ShownFrame = {
      function: name.slice(0, MAX_NAME),
      file: pos.source.slice(0, MAX_NAME),
      line: pos.line,
      column: pos.column,
      resolved: true,
    };
    const source = lines?.[pos.line - 1];
    if (source !== undefined) {
      shown.source = source.trim().slice(0, MAX_SOURCE_LINE);
    } else {
      shown.why = "the map holds no sources";
    }
    return shown;
  });
}

/**
 * `frames` as shown when they cannot be resolved at all, each with `why`.
 *
 * @example
 * ```ts
 * unresolvedFrames(parseStack(stack), "the entry has no release");
 * ```
 */
export function unresolvedFrames(
  frames: StackFrame[],
  why: string,
): ShownFrame[] {
  return frames.map((frame) =>
    unresolved(frame, isRuntimeFrame(frame) ? RUNTIME_WHY : why)
  );
}

/** What a frame says when it is the runtime's own code. */
export const RUNTIME_WHY = "the runtime's own code";

/**
 * Why the frames of a stack that resolved nothing did not resolve, each
 * reason once (the runtime's own frames aside); `[]` when one resolved.
 *
 * @example
 * ```ts
 * unresolvedReasons(stack); // ['no source maps uploaded for release "1.0.0"']
 * ```
 */
export function unresolvedReasons(stack: ResolvedStack): string[] {
  if (stack.frames.some((f) => f.resolved)) return [];
  return [
    ...new Set(
      stack.frames.map((f) => f.why ?? "").filter((why) =>
        why !== "" && why !== RUNTIME_WHY
      ),
    ),
  ];
}

/**
 * A resolved stack as lines of text, top first: `at fn (file:line:column)`,
 * the source line under a resolved frame, and why beside one that is not
 * resolved.
 *
 * @example
 * ```ts
 * shownFrameLines(stack); // ["at checkout (src/cart.js:3:11)", "    throw new TypeError(…);", …]
 * ```
 */
export function shownFrameLines(stack: ResolvedStack): string[] {
  const lines: string[] = [];
  for (const f of stack.frames) {
    const where = [f.file, f.line, f.column].filter((p) => p !== null)
      .join(":");
    const call = f.function === ""
      ? `at ${where}`
      : `at ${f.function} (${where})`;
    lines.push(
      f.resolved || f.why === undefined
        ? call
        : `${call}  [not resolved: ${f.why}]`,
    );
    if (f.source !== undefined) lines.push(`    ${f.source}`);
  }
  return lines;
}

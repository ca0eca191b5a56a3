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
 * @module
 */
import {
  AnyMap,
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

/** A source map read for resolving. */
export interface ParsedMap {
  map: TraceMap;
  hasSources: boolean;
  /** Lines of its sources, split once when first needed. */
  lines: Map<string, string[] | null>;
}

/**
 * Reads a source map's text (a plain or a sectioned map).
 *
 * @example
 * ```ts
 * const parsed = parseSourceMap(text);
 * ```
 */
export function parseSourceMap(text: string): ParsedMap {
  const map = new AnyMap(text);
  const hasSources = (map.sourcesContent ?? []).some((c) =>
    typeof c === "string"
  );
  return { map, hasSources, lines: new Map() };
}

/** The map of a frame's file, or why there is none. */
export type MapLookup = (file: string) => ParsedMap | string;

function sourceLines(parsed: ParsedMap, source: string): string[] | null {
  let lines = parsed.lines.get(source);
  if (lines === undefined) {
    const content = sourceContentFor(parsed.map, source);
    lines = content === null ? null : content.split(/\r\n|\r|\n/);
    parsed.lines.set(source, lines);
  }
  return lines;
}

/**
 * Declarations a line may hold, the name captured; each starts where no
 * name character stands before it, so that a long word is tried once, not
 * from each of its characters.
 */
const DECLARED = [
  /function\s*\*?\s*([A-Za-z_$][\w$]*)\s*\(/,
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

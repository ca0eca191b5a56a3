/**
 * Stack traces read into frames: the formats of Chrome and V8 (Node, Deno,
 * Bun: `at fn (url:line:col)`), Firefox and Safari (`fn@url:line:col`),
 * Hermes (React Native: `at fn (address at bundle:line:col)`), Apple crash
 * lines (`3  Shop  0x0000000102a4b2c4 -[Cart pay:] + 120`), and a
 * `data.stack` given as an array of such strings or of frame objects.
 * Pure and bounded ({@linkcode MAX_STACK_FRAMES}, {@linkcode MAX_STACK_CHARS}):
 * the consumer reads every error's stack, and a sender writes it.
 *
 * It also knows which frames are the runtime's own (`<anonymous>`,
 * `native`, `node:internal/…`, `ext:`, the browser's code), which grouping
 * skips when it picks the top frame (docs/errors.md#stacks-and-grouping).
 *
 * @module
 */

/** Frames read from one stack at most; the rest are not looked at. */
export const MAX_STACK_FRAMES = 100;
/** Characters of a stack read at most (of a string, or of an array's strings). */
export const MAX_STACK_CHARS = 65_536;

/** One frame of a stack, as sent. */
export interface StackFrame {
  /** The function's name as the stack gives it; `""` when none. */
  function: string;
  /** Where the frame is, as written: `url:line:column`, or `native`. */
  location: string;
  /** The file or URL, without line and column. */
  file: string;
  /** 1-based, `null` when the stack gives none. */
  line: number | null;
  /** 1-based, `null` when the stack gives none. */
  column: number | null;
}

/** Characters `.` does not match in a regular expression. */
const LINE_END = /[\n\r\u2028\u2029]/;
const SPACE = /\s/;

/** A location without `:line:column`, query or fragment. */
export function fileOf(location: string): string {
  return location.replace(/[?#][^:]*/, "").replace(/(?::\d+){1,2}$/, "");
}

function text(value: unknown): string {
  return typeof value === "string"
    ? value
    : typeof value === "number"
    ? String(value)
    : "";
}

/** Function, file, line and column of a frame object (Sentry's and others' names). */
export function frameParts(
  frame: Record<string, unknown>,
): { fn: string; file: string; line: string; column: string } | null {
  const fn = text(
    frame.function ?? frame.functionName ?? frame.fn ?? frame.method,
  );
  const file = text(
    frame.file ?? frame.fileName ?? frame.filename ?? frame.url ??
      frame.abs_path,
  );
  if (fn === "" && file === "") return null;
  return {
    fn,
    file,
    line: text(frame.line ?? frame.lineNumber ?? frame.lineno),
    column: text(frame.column ?? frame.columnNumber ?? frame.colno),
  };
}

/**
 * The function and the location of a line `at [async ]fn (location)`:
 * what `/^\s*at\s+(?:async\s+)?(.*?)\s+\((.*)\)\s*$/` captures, found
 * in one pass. The expression itself backtracks over every split of a run
 * of spaces (minutes for a line of 60,000 spaces); a sender writes the
 * stack, and the consumer reads it.
 */
export function v8Call(line: string): [fn: string, location: string] | null {
  const space = (i: number) => i < line.length && SPACE.test(line[i]!);
  const skip = (i: number) => {
    while (space(i)) i++;
    return i;
  };
  const atAt = skip(0);
  if (!line.startsWith("at", atAt) || !space(atAt + 2)) return null;
  // The location runs from the "(" to the last character, which must be
  // ")" (spaces aside), with no line end in between.
  let close = line.length - 1;
  while (close >= 0 && space(close)) close--;
  if (line[close] !== ")") return null;
  let lastEnd = close - 1;
  while (lastEnd >= 0 && !LINE_END.test(line[lastEnd]!)) lastEnd--;
  const opens = (q: number) => line[q] === "(" && q > lastEnd && q < close;
  const call = (fn: string, q: number): [string, string] => [
    fn,
    line.slice(q + 1, close),
  ];
  // The shortest function from `from`: up to the first run of spaces
  // followed by a "(" that opens the location; a line end cannot be in it.
  const search = (from: number): [string, string] | null => {
    for (let i = from; i < line.length;) {
      if (!space(i)) {
        i++;
        continue;
      }
      const q = skip(i);
      if (opens(q)) return call(line.slice(from, i), q);
      for (let k = i; k < q; k++) if (LINE_END.test(line[k]!)) return null;
      i = q;
    }
    return null;
  };
  const fnAt = skip(atAt + 2);
  if (line.startsWith("async", fnAt) && space(fnAt + 5)) {
    const afterAsync = skip(fnAt + 5);
    const found = search(afterAsync);
    if (found) return found;
    // Backtracking gives a space back: an empty function before the "(".
    if (afterAsync - fnAt - 5 >= 2 && opens(afterAsync)) {
      return call("", afterAsync);
    }
  }
  const found = search(fnAt);
  if (found) return found;
  return fnAt - atAt - 2 >= 2 && opens(fnAt) ? call("", fnAt) : null;
}

// `at file:1:2`, `fn@file:1:2` (Firefox, Safari); `at fn (file:1:2)` is
// read by v8Call.
const V8_BARE = /^\s*at\s+(?:async\s+)?(\S+)\s*$/;
const GECKO = /^\s*([^@\s]*)@(\[native code\]|\S+)\s*$/;
/**
 * The head of an Apple crash line: index, binary, address. The symbol and
 * its offset that follow are read by {@linkcode appleCall}: as one pattern
 * (`\s+(.{1,500}?)(?:\s+\+\s+\d{1,12})?\s*$`) they backtracked over
 * runs of spaces, quadratic in a sender's line (a 6 KB line 11 s).
 */
const APPLE_HEAD = /^\s*\d{1,5}\s+(\S{1,200})\s+0x[0-9a-fA-F]{1,16}(\s+)/;
/** Longest symbol of an Apple crash line. */
const APPLE_SYMBOL_CHARS = 500;
/** Hermes writes a bytecode location as `address at bundle:1:2`. */
const HERMES_ADDRESS = /^address at /;
const LINE_COLUMN = /^(.*?):(\d{1,10})(?::(\d{1,10}))?$/;

/**
 * The function and the location of one stack line, `null` when it is no
 * frame. A location is kept as written, for the fingerprint.
 */
export function lineCall(line: string): [fn: string, location: string] | null {
  const call = v8Call(line);
  if (call) return call;
  let m = V8_BARE.exec(line);
  if (m) return ["", m[1]!];
  m = GECKO.exec(line);
  if (m) return [m[1]!, m[2]!];
  return appleCall(line);
}

/**
 * An Apple crash line's symbol and binary: the symbol is what follows the
 * address up to an offset (` + 12`) and spaces at the end, 1 to 500
 * characters on one line; each character is looked at a bounded number of
 * times. It reads what the pattern read, but where nothing but spaces and
 * an offset (`\t +   0`) or a line break (U+2028, U+2029) among spaces
 * follows the address: the pattern took a space for the symbol, and this
 * finds no frame.
 */
function appleCall(line: string): [fn: string, location: string] | null {
  const head = APPLE_HEAD.exec(line);
  if (!head) return null;
  const from = head[0].length;
  let end = line.length;
  while (end > from && SPACE.test(line[end - 1]!)) end--;
  if (end === from) {
    // Only spaces follow: the pattern gave the last of them that is no line
    // break as the symbol, leaving it one space before.
    for (let k = line.length - 1; k > from - head[2]!.length; k--) {
      if (!LINE_END.test(line[k]!)) return [line[k]!, head[1]!];
    }
    return null;
  }
  let symbolEnd = end;
  let i = end;
  while (
    i > from && line.charCodeAt(i - 1) >= 48 && line.charCodeAt(i - 1) <= 57
  ) i--;
  const digits = end - i;
  if (digits >= 1 && digits <= 12 && SPACE.test(line[i - 1] ?? "")) {
    let j = i - 1;
    while (j > from && SPACE.test(line[j - 1]!)) j--;
    if (line[j - 1] === "+" && j - 1 > from && SPACE.test(line[j - 2]!)) {
      let k = j - 2;
      while (k > from && SPACE.test(line[k - 1]!)) k--;
      if (k > from) symbolEnd = k;
    }
  }
  const symbol = line.slice(from, symbolEnd);
  return symbol.length <= APPLE_SYMBOL_CHARS && !LINE_END.test(symbol)
    ? [symbol, head[1]!]
    : null;
}

/** A frame of a function and a location as written. */
function frameOf(fn: string, location: string): StackFrame {
  const where = location.replace(HERMES_ADDRESS, "");
  const m = LINE_COLUMN.exec(where);
  return {
    function: fn,
    location,
    file: m ? m[1]! : where,
    line: m ? Number(m[2]) : null,
    column: m?.[3] === undefined ? null : Number(m[3]),
  };
}

/** The frame of a frame object, `null` when it names neither function nor file. */
function objectFrame(value: Record<string, unknown>): StackFrame | null {
  const f = frameParts(value);
  if (f === null) return null;
  const line = /^\d{1,10}$/.test(f.line) ? Number(f.line) : null;
  const column = /^\d{1,10}$/.test(f.column) ? Number(f.column) : null;
  return { function: f.fn, location: f.file, file: f.file, line, column };
}

/**
 * The frames of a `data.stack`: a string's lines, or an array's strings
 * and frame objects, top first; lines that are no frame (the message) are
 * left out. At most {@linkcode MAX_STACK_FRAMES} frames from the first
 * {@linkcode MAX_STACK_CHARS} characters.
 *
 * @example
 * ```ts
 * parseStack("TypeError: x\n    at pay (https://shop/app.js:10:5)");
 * // [{ function: "pay", file: "https://shop/app.js", line: 10, column: 5, … }]
 * ```
 */
export function parseStack(stack: unknown): StackFrame[] {
  const frames: StackFrame[] = [];
  let chars = 0;
  const readLine = (line: string) => {
    chars += line.length + 1;
    const call = lineCall(line);
    if (call) frames.push(frameOf(call[0], call[1]));
  };
  if (typeof stack === "string") {
    const lines = stack.slice(0, MAX_STACK_CHARS).split(/\r\n|\r|\n/);
    for (const line of lines) {
      if (frames.length >= MAX_STACK_FRAMES) break;
      readLine(line);
    }
  } else if (Array.isArray(stack)) {
    for (const item of stack) {
      if (frames.length >= MAX_STACK_FRAMES || chars > MAX_STACK_CHARS) break;
      if (typeof item === "string") {
        readLine(item.slice(0, MAX_STACK_CHARS));
      } else if (typeof item === "object" && item !== null) {
        chars += 100;
        const frame = objectFrame(item as Record<string, unknown>);
        if (frame) frames.push(frame);
      }
    }
  }
  return frames;
}

/** Files of the runtime's own code, and the browser's. */
const RUNTIME_FILE =
  /^(?:<anonymous>|native|\[native code\]|node:|ext:|deno:|internal\/|InternalBytecode\.js|(?:chrome|chrome-extension|moz-extension|safari-extension|safari-web-extension|webkit-masked-url|resource|about):)/;

/**
 * Whether a frame is the runtime's own code rather than the app's:
 * `<anonymous>`, `native`, `[native code]`, `node:…`, `ext:…`, `deno:…`,
 * Hermes's `InternalBytecode.js`, a frame without a file, and the
 * browser's own (`chrome-extension:`, `moz-extension:`, …).
 *
 * @example
 * ```ts
 * isRuntimeFrame(parseStack("at JSON.parse (<anonymous>)")[0]!); // true
 * ```
 */
export function isRuntimeFrame(frame: StackFrame): boolean {
  const file = frame.location.replace(HERMES_ADDRESS, "");
  return file === "" || RUNTIME_FILE.test(file);
}

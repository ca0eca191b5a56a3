/**
 * Text shown on an operator's terminal made inert: what a sender, a project
 * or an operator's own argument carries is printed as characters, never
 * acted on (cli/format.ts's columns, every error line).
 *
 * @module
 */

/**
 * Characters a terminal acts on or hides instead of showing: C0 and C1
 * controls and DEL (escape sequences, title changes, screen clearing),
 * invisible format characters (bidi overrides and isolates, zero-width
 * characters) and line and paragraph separators.
 */
const UNSAFE = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/gu;

/**
 * Makes text a sender or a project supplied inert on a terminal: every
 * character in {@linkcode UNSAFE} is shown as a `\u{...}` escape, so what is
 * printed is what was sent, visibly. Every human-readable output passes such
 * text through it; `--json` output is exact JSON through {@linkcode jsonText}.
 *
 * @example
 * ```ts
 * inert("\u001b]0;PWNED\u0007"); // "\\u{1b}]0;PWNED\\u{7}"
 * ```
 */
export function inert(text: string): string {
  return text.replace(
    UNSAFE,
    (c) => `\\u{${c.codePointAt(0)!.toString(16)}}`,
  );
}

/**
 * {@linkcode inert}, line by line: the line breaks of a message written over
 * several lines are kept, every other unsafe character escaped.
 *
 * @example
 * ```ts
 * inertLines("Cannot find \u001b[2J\nsee --help"); // "Cannot find \\u{1b}[2J\nsee --help"
 * ```
 */
export function inertLines(text: string): string {
  return text.split("\n").map(inert).join("\n");
}

/**
 * `value` as one line of JSON that parses to exactly the same value, with
 * every character of {@linkcode UNSAFE} that JSON leaves raw (C1 controls,
 * DEL, bidi and zero-width characters, line separators) written as a `\uXXXX`
 * escape: `--json` output is exact and still inert on a terminal.
 *
 * @example
 * ```ts
 * jsonText({ appid: "\u009b2J\u202e" }); // '{"appid":"\\u009b2J\\u202e"}'
 * ```
 */
export function jsonText(value: unknown): string {
  return JSON.stringify(value).replace(UNSAFE, (c) => {
    let out = "";
    for (let i = 0; i < c.length; i++) {
      out += `\\u${c.charCodeAt(i).toString(16).padStart(4, "0")}`;
    }
    return out;
  });
}

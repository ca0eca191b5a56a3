/**
 * A `data.stack` as the lines of a `<pre>`, the top frames first: a string
 * is split at its newlines, an array of frames or strings gives one line
 * each (domain/fingerprint.ts `stackLines`), and a Python traceback, which
 * lists the top frame last, is turned around. Past the first lines, the
 * rest is folded in a `<details>`.
 *
 * @module
 */
import type { ResolvedStack } from "../../domain/entry.ts";
import { stackLines } from "../../domain/fingerprint.ts";
import {
  shownFrameLines,
  unresolvedReasons,
} from "../../domain/symbolicate.ts";

/** Lines shown before the rest is folded. */
export const STACK_SHOWN = 8;

const PYTHON = /^Traceback \(most recent call last\):/;

/**
 * The lines of a stack, top frames first; `[]` when it is none.
 *
 * @example
 * ```ts
 * orderedStack("Error: x\n    at f (a.js:1:2)"); // ["Error: x", "    at f (a.js:1:2)"]
 * ```
 */
export function orderedStack(stack: unknown): string[] {
  const lines = stackLines(stack);
  if (lines.length > 1 && PYTHON.test(lines[0]!)) {
    // Header, frames oldest first, then the exception: exception first,
    // then the frames newest first.
    const frames = lines.slice(1, -1).reverse();
    return [lines.at(-1)!, ...frames];
  }
  return lines;
}

/**
 * The lines of a stack a preview shows: those that fit in `bytes`, each
 * whole.
 *
 * @example
 * ```ts
 * stackWithin(["Error: x", "    at f (a.js:1:2)"], 10); // ["Error: x"]
 * ```
 */
export function stackWithin(lines: string[], bytes: number): string[] {
  let left = bytes;
  const shown: string[] = [];
  for (const line of lines) {
    left -= line.length + 1;
    if (left < 0) break;
    shown.push(line);
  }
  return shown;
}

/** The lines of an entry's stack ({@linkcode orderedStack}); nothing when there are none. */
export function StackView(props: { lines: string[] }) {
  const { lines } = props;
  if (lines.length === 0) return null;
  const shown = lines.slice(0, STACK_SHOWN);
  const rest = lines.slice(STACK_SHOWN);
  return (
    <section class="stack-trace">
      <h4>Stack</h4>
      <pre class="stack-top">{shown.join("\n")}</pre>
      {rest.length > 0 && (
        <details class="stack-rest">
          <summary>
            {rest.length} more {rest.length === 1 ? "line" : "lines"}
          </summary>
          <pre>{rest.join("\n")}</pre>
        </details>
      )}
    </section>
  );
}

/**
 * An entry's stack resolved through its release's source maps
 * (docs/errors.md#source-maps): the original frames, each with its source
 * line or why it did not resolve; when none resolved, one line saying why.
 * Nothing for an entry without frames.
 */
export function ResolvedStackView(
  props: { stack: ResolvedStack | null | undefined },
) {
  const { stack } = props;
  if (!stack || stack.frames.length === 0) return null;
  const reasons = unresolvedReasons(stack);
  if (!stack.frames.some((f) => f.resolved)) {
    if (reasons.length === 0) return null;
    return (
      <p class="stack-note" id="stack-unresolved">
        Frames not resolved: {reasons.join("; ")}
      </p>
    );
  }
  const lines = shownFrameLines(stack);
  return (
    <section class="stack-trace" id="stack-resolved">
      <h4>Original stack (release {stack.release})</h4>
      <pre class="stack-top">{lines.slice(0, 2 * STACK_SHOWN).join("\n")}</pre>
      {lines.length > 2 * STACK_SHOWN && (
        <details class="stack-rest">
          <summary>{lines.length - 2 * STACK_SHOWN} more lines</summary>
          <pre>{lines.slice(2 * STACK_SHOWN).join("\n")}</pre>
        </details>
      )}
    </section>
  );
}

/**
 * The top frame of an error group as its parts (function, file, line,
 * column), for `errors --json`, the pages and the alerts' deliveries: one
 * small function, read from the group's stored `file:function`, so that a
 * frame resolved by a source map can take its place in one spot.
 *
 * @module
 */

/** A stack frame's parts; `null` where the frame does not say. */
export interface FrameParts {
  function: string | null;
  file: string | null;
  line: number | null;
  column: number | null;
}

/**
 * The frame of a group's `topFrame` (`file:function`, as db/error_groups.ts
 * stores it: without line or column), `null` without one.
 *
 * @example
 * ```ts
 * groupFrame({ topFrame: "https://shop/app.js:pay" });
 * // { function: "pay", file: "https://shop/app.js", line: null, column: null }
 * ```
 */
export function groupFrame(
  group: { topFrame: string | null },
): FrameParts | null {
  const top = group.topFrame;
  if (top === null || top === "") return null;
  const at = top.lastIndexOf(":");
  const file = at < 0 ? top : top.slice(0, at);
  const fn = at < 0 ? "" : top.slice(at + 1);
  return {
    function: fn === "" ? null : fn,
    file: file === "" ? null : file,
    line: null,
    column: null,
  };
}

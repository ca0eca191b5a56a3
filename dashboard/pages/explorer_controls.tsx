/**
 * The explorer's controls: level chips in the levels' colours and the time
 * range (presets and absolute UTC times). Each is a link or a form to the
 * same page with another state.
 *
 * @module
 */
import { STANDARD_LEVELS } from "../../domain/entry.ts";
import {
  type ExplorerState,
  formatUtc,
  type RangeName,
  RANGES,
} from "../explorer_state.ts";
import { explorerHref } from "./explorer_list.tsx";
import { levelClass, link } from "./format.ts";
import type { PageContext } from "./layout.tsx";

/** Time presets and the absolute range form. */
export function TimeControls(
  props: {
    ctx: PageContext;
    projectId: string;
    state: ExplorerState;
    /** Start of the window shown, for the form. */
    since: number;
  },
) {
  const { ctx, state, projectId } = props;
  const absolute = state.since !== undefined;
  return (
    <div class="times">
      <div class="presets" role="group" aria-label="Time range">
        {(Object.keys(RANGES) as RangeName[]).map((range) => {
          const next: ExplorerState = { ...state, range };
          delete next.since;
          delete next.until;
          delete next.cursor;
          delete next.around;
          return (
            <a
              class="chip"
              href={explorerHref(ctx.base, projectId, next)}
              aria-pressed={!absolute && state.range === range
                ? "true"
                : "false"}
            >
              {range}
            </a>
          );
        })}
      </div>
      <details class="absolute" open={absolute}>
        <summary>
          {absolute ? "Custom range" : "Custom…"}{" "}
          (<span class="tz-label">UTC</span>)
        </summary>
        <form method="get" action={link(ctx.base, `/projects/${projectId}`)}>
          {state.q !== "" && <input type="hidden" name="q" value={state.q} />}
          {state.levels.length > 0 && (
            <input type="hidden" name="level" value={state.levels.join(",")} />
          )}
          <label>
            From{" "}
            <input
              name="since"
              type="datetime-local"
              data-time-input
              placeholder="2026-01-15T09:30"
              value={formatUtc(props.since).slice(0, 16)}
              size={16}
            />
          </label>
          <label>
            to{" "}
            <input
              name="until"
              type="datetime-local"
              data-time-input
              placeholder="now"
              value={state.until === undefined
                ? ""
                : formatUtc(state.until).slice(0, 16)}
              size={16}
            />
          </label>
          <button type="submit">Apply</button>
        </form>
      </details>
    </div>
  );
}

/** One chip per level, in its colour; a chip toggles its level. */
export function LevelChips(
  props: {
    ctx: PageContext;
    project: { id: string; levels: string[] };
    state: ExplorerState;
  },
) {
  const { ctx, state, project } = props;
  const levels = [
    ...new Set([...STANDARD_LEVELS, ...project.levels, ...state.levels]),
  ];
  return (
    <div class="levels" role="group" aria-label="Levels">
      {levels.map((level) => {
        const on = state.levels.includes(level);
        const next: ExplorerState = {
          ...state,
          levels: on
            ? state.levels.filter((l) => l !== level)
            : [...state.levels, level],
        };
        delete next.cursor;
        delete next.around;
        return (
          <a
            class={`chip level ${levelClass(level)}`}
            href={explorerHref(ctx.base, project.id, next)}
            aria-pressed={on ? "true" : "false"}
            data-level={level}
          >
            {level}
          </a>
        );
      })}
    </div>
  );
}

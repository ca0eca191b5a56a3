/**
 * The explorer's histogram: counts of entries per interval, stacked by
 * level in the levels' colours, as an SVG whose bars are links that zoom
 * the view to their interval (so it works without JavaScript too). Bars
 * older than what a word or field query could count in its time budget
 * (dashboard/histogram.ts) are drawn hatched and said to be uncounted.
 *
 * @module
 */
import type { ExplorerHistogram } from "../histogram.ts";
import { formatDuration, formatTime, levelClass } from "./format.ts";

/** The counts the chart draws. */
export type Histogram = ExplorerHistogram;

/** Stacking order, bottom first; custom levels go on top. */
const ORDER = ["info", "warning", "error", "critical"];

/** Props of {@linkcode HistogramChart}. */
export interface HistogramProps {
  histogram: Histogram;
  /** Link that zooms to `[start, end)`. */
  zoom(start: number, end: number): string;
}

const BAR = 10;
const HEIGHT = 60;

/** The stacked bar chart. */
export function HistogramChart(props: HistogramProps) {
  const { buckets, intervalMs } = props.histogram;
  const totals = buckets.map((b) =>
    Object.values(b.counts).reduce((n, c) => n + c, 0)
  );
  const max = Math.max(1, ...totals);
  const total = totals.reduce((n, c) => n + c, 0);
  const first = buckets[0];
  const last = buckets.at(-1);
  const countedFrom = props.histogram.countedFrom;
  const counted = (start: number) =>
    countedFrom === null || start >= countedFrom;
  return (
    <figure class="histogram">
      <svg
        viewBox={`0 0 ${Math.max(1, buckets.length) * BAR} ${HEIGHT}`}
        preserveAspectRatio="none"
        role="img"
        aria-label={`${total} entries, per ${formatDuration(intervalMs)}`}
      >
        {buckets.map((bucket, i) => {
          const levels = Object.keys(bucket.counts).sort((a, b) => {
            const ra = ORDER.indexOf(a), rb = ORDER.indexOf(b);
            return (ra < 0 ? 9 : ra) - (rb < 0 ? 9 : rb) || (a < b ? -1 : 1);
          });
          let y = HEIGHT;
          const end = bucket.start + intervalMs;
          if (!counted(bucket.start)) {
            return (
              <a href={props.zoom(bucket.start, end)} class="bucket uncounted">
                <title>
                  {`${
                    formatTime(bucket.start, false)
                  } · not counted: click to zoom in and count`}
                </title>
                <rect
                  class="hit"
                  x={i * BAR}
                  y={0}
                  width={BAR}
                  height={HEIGHT}
                />
                <rect
                  class="todo"
                  x={i * BAR + 1}
                  y={HEIGHT - 8}
                  width={BAR - 2}
                  height={8}
                />
              </a>
            );
          }
          const label =
            `${formatTime(bucket.start, false)} · ${totals[i]} entries` +
            levels.map((l) => `\n${l}: ${bucket.counts[l]}`).join("");
          return (
            <a href={props.zoom(bucket.start, end)} class="bucket">
              <title>{label}</title>
              <rect class="hit" x={i * BAR} y={0} width={BAR} height={HEIGHT} />
              {levels.map((level) => {
                const h = (bucket.counts[level]! / max) * (HEIGHT - 2);
                y -= h;
                return (
                  <rect
                    class={`bar ${levelClass(level)}`}
                    x={i * BAR + 1}
                    y={y}
                    width={BAR - 2}
                    height={h}
                  />
                );
              })}
            </a>
          );
        })}
      </svg>
      <figcaption>
        <span>{first ? formatTime(first.start, false) : ""}</span>
        <span>
          {total} {total === 1 ? "entry" : "entries"}
          {countedFrom !== null && ` since ${formatTime(countedFrom, false)}`} ·
          {" "}
          {formatDuration(intervalMs)} per bar · peak{" "}
          {max === 1 && total === 0 ? 0 : max}
          {countedFrom !== null && (
            <span class="uncounted-note">
              {" "}· older bars not counted (too many matches to count at once:
              click one to zoom in)
            </span>
          )}
        </span>
        <span>{last ? formatTime(last.start + intervalMs, false) : ""}</span>
      </figcaption>
    </figure>
  );
}

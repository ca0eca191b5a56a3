/**
 * The explorer's histogram: counts of entries per interval, stacked by
 * level in the levels' colours (or by the top values of a field, each in a
 * colour of its own, with a legend), as an SVG whose bars are links that zoom
 * the view to their interval (so it works without JavaScript too). Bars
 * older than what a word or field query could count in its time budget
 * (dashboard/histogram.ts) are drawn hatched and said to be uncounted.
 * A y-axis gives the counts; each bar carries its start and counts, so that
 * the live tail's script adds the entries it shows to their bar
 * (dashboard/assets/explorer.js). Times are UTC, labelled so; the page's
 * script can show them in local time.
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

/** The full height of bucket `index`: what a click on the bucket hits. */
function HitArea(props: { index: number }) {
  return (
    <rect class="hit" x={props.index * BAR} y={0} width={BAR} height={HEIGHT} />
  );
}

/**
 * The top of the y-axis: the smallest of 1, 2 or 5 times a power of ten at
 * or above `max`, so that the ticks read as round numbers.
 *
 * @example
 * ```ts
 * niceMax(37); // 50
 * ```
 */
export function niceMax(max: number): number {
  if (max <= 1) return 1;
  const power = 10 ** Math.floor(Math.log10(max));
  for (const step of [1, 2, 5, 10]) {
    if (step * power >= max) return step * power;
  }
  return 10 * power;
}

/** A time with its zone label, as the captions show it. */
function Stamp(props: { ms: number }) {
  return (
    <>
      <time datetime={new Date(props.ms).toISOString()} data-format="s">
        {formatTime(props.ms, false)}
      </time>{" "}
      <span class="tz-label">UTC</span>
    </>
  );
}

/** The levels of `counts` in stacking order, bottom first. */
function stacked(counts: Record<string, number>): string[] {
  return Object.keys(counts).sort((a, b) => {
    const ra = ORDER.indexOf(a), rb = ORDER.indexOf(b);
    return (ra < 0 ? 9 : ra) - (rb < 0 ? 9 : rb) || (a < b ? -1 : 1);
  });
}

/** A bucket older than what the query could count: a hatched stub. */
function UncountedBar(props: { index: number; start: number; href: string }) {
  const { index, start } = props;
  return (
    <a href={props.href} class="bucket uncounted">
      <title>
        {`${
          formatTime(start, false)
        } · not counted: click to zoom in and count`}
      </title>
      <HitArea index={index} />
      <rect
        class="todo"
        x={index * BAR + 1}
        y={HEIGHT - 8}
        width={BAR - 2}
        height={8}
      />
    </a>
  );
}

/**
 * A counted bucket: one rect per level (or per value of the split field),
 * stacked, scaled to `max`.
 */
function CountedBar(
  props: {
    index: number;
    bucket: Histogram["buckets"][number];
    total: number;
    max: number;
    href: string;
    series?: string[];
  },
) {
  const { index, bucket, max, series } = props;
  const levels = series
    ? series.filter((name) => bucket.counts[name] !== undefined)
    : stacked(bucket.counts);
  const barClass = (name: string) =>
    series ? `bar series-${series.indexOf(name)}` : `bar ${levelClass(name)}`;
  const label = `${formatTime(bucket.start, false)} · ${props.total} entries` +
    levels.map((l) => `\n${l}: ${bucket.counts[l]}`).join("");
  let y = HEIGHT;
  return (
    <a
      href={props.href}
      class="bucket"
      data-start={bucket.start}
      data-counts={JSON.stringify(bucket.counts)}
    >
      <title>{label}</title>
      <HitArea index={index} />
      {levels.map((level) => {
        const h = (bucket.counts[level]! / max) * HEIGHT;
        y -= h;
        return (
          <rect
            class={barClass(level)}
            x={index * BAR + 1}
            y={y}
            width={BAR - 2}
            height={h}
          />
        );
      })}
    </a>
  );
}

/** The caption: the first and last times, the total, the interval, the peak. */
function Caption(
  props: { histogram: Histogram; total: number; peak: number },
) {
  const { buckets, intervalMs, countedFrom } = props.histogram;
  const { total } = props;
  const first = buckets[0];
  const last = buckets.at(-1);
  return (
    <figcaption>
      <span>{first ? <Stamp ms={first.start} /> : ""}</span>
      <span>
        <span id="histogram-total">{total}</span>{" "}
        {total === 1 ? "entry" : "entries"}
        {countedFrom !== null && ` since ${formatTime(countedFrom, false)}`} ·
        {" "}
        {formatDuration(intervalMs)} per bar · peak{" "}
        <span id="histogram-peak">{total === 0 ? 0 : props.peak}</span>
        {countedFrom !== null && (
          <span class="uncounted-note">
            {" "}· older bars not counted (too many matches to count at once:
            click one to zoom in)
          </span>
        )}
      </span>
      <span>{last ? <Stamp ms={last.start + intervalMs} /> : ""}</span>
    </figcaption>
  );
}

/** The colours of a split histogram's series, bottom of the stack first. */
function Legend(props: { split: NonNullable<Histogram["split"]> }) {
  return (
    <ul class="legend" aria-label={`Split by ${props.split.field}`}>
      {props.split.series.map((name, i) => (
        <li>
          <span class={`swatch series-${i}`} aria-hidden="true"></span>
          {name}
        </li>
      ))}
    </ul>
  );
}

/** The stacked bar chart. */
export function HistogramChart(props: HistogramProps) {
  const { buckets, intervalMs, countedFrom } = props.histogram;
  const totals = buckets.map((b) =>
    Object.values(b.counts).reduce((n, c) => n + c, 0)
  );
  const peak = Math.max(1, ...totals);
  const max = niceMax(peak);
  const total = totals.reduce((n, c) => n + c, 0);
  const width = Math.max(1, buckets.length) * BAR;
  return (
    <figure
      class="histogram"
      id="histogram"
      data-interval={intervalMs}
      data-counted-from={countedFrom ?? ""}
      data-split={props.histogram.split?.field}
    >
      <div class="plot">
        <div class="y-axis" aria-hidden="true">
          <span class="tick" data-tick="max">{max}</span>
          <span class="tick" data-tick="half">{max / 2}</span>
          <span class="tick">0</span>
        </div>
        <svg
          viewBox={`0 0 ${width} ${HEIGHT}`}
          preserveAspectRatio="none"
          role="img"
          aria-label={`${total} entries, per ${formatDuration(intervalMs)}`}
        >
          {[0, HEIGHT / 2].map((y) => (
            <line
              class="grid"
              x1={0}
              x2={width}
              y1={y + 0.5}
              y2={y + 0.5}
              vector-effect="non-scaling-stroke"
            />
          ))}
          {buckets.map((bucket, i) => {
            const href = props.zoom(bucket.start, bucket.start + intervalMs);
            return countedFrom === null || bucket.start >= countedFrom
              ? (
                <CountedBar
                  key={bucket.start}
                  index={i}
                  bucket={bucket}
                  total={totals[i]!}
                  max={max}
                  href={href}
                  {...(props.histogram.split
                    ? { series: props.histogram.split.series }
                    : {})}
                />
              )
              : (
                <UncountedBar
                  key={bucket.start}
                  index={i}
                  start={bucket.start}
                  href={href}
                />
              );
          })}
        </svg>
      </div>
      <Caption histogram={props.histogram} total={total} peak={peak} />
      {props.histogram.split && <Legend split={props.histogram.split} />}
    </figure>
  );
}

/**
 * The explorer's answer to a query that ends with a pipe (`| count by …`,
 * `| top N F`, `| uniq F`; docs/query.md#aggregations): the rows as a
 * table, and a chart drawn on the server — bars for values, or the
 * histogram's stacked bars when the rows are time buckets — so it needs no
 * script. Each row links to the explorer listing its entries: the query
 * before the pipe with the row's values added as field terms, and a time
 * bucket as the range. A CSV of the rows is a link away.
 *
 * @module
 */
import type { Cell, Pipe } from "../source.ts";
import {
  addTerm,
  type ExplorerState,
  fieldTerm,
  queryBeforePipe,
} from "../explorer_state.ts";
import { NONE, OTHER, SPLIT_SERIES } from "../histogram.ts";
import { explorerHref } from "./explorer_list.tsx";
import { formatTime } from "./format.ts";
import { type Histogram, HistogramChart } from "./histogram.tsx";
import type { PageContext } from "./layout.tsx";

/** The rows of an aggregation, as the page shows them. */
export interface RowsData {
  pipe: Pipe;
  columns: string[];
  rows: Record<string, Cell>[];
  /** Groups counted (rows past the answered ones are not shown). */
  groups: number;
  /** Matching entries counted. */
  total: number;
  estimate?: true;
  /** The budget ran out: counted back to this receipt time. */
  searchedTo?: number;
}

/** Value rows the bar chart draws at most; the table lists them all. */
const CHART_ROWS = 20;
/** Time buckets the stacked chart draws at most. */
const CHART_BUCKETS = 1000;

/** The time bucket of a pipe, when it groups by one. */
function timeBucketMs(pipe: Pipe): number | null {
  if (pipe.op !== "count") return null;
  const time = pipe.by.find((b) => b.kind === "time");
  return time?.kind === "time" ? time.ms : null;
}

/** The field columns of a row (not `time`, `count`, `share`, `estimate`). */
function fieldColumns(pipe: Pipe): string[] {
  if (pipe.op === "top") return [pipe.field];
  if (pipe.op === "uniq") return [];
  return pipe.by.flatMap((b) => b.kind === "field" ? [b.path] : []);
}

/**
 * The explorer state listing the entries of `row`: the query before the
 * pipe narrowed to the row's values (a missing value as `-F:*`), and to its
 * time bucket.
 */
export function rowState(
  state: ExplorerState,
  pipe: Pipe,
  row: Record<string, Cell>,
): ExplorerState {
  let q = queryBeforePipe(state.q, pipe.column);
  // `*` alone is every entry: a term says as much.
  if (q === "*") q = "";
  for (const path of fieldColumns(pipe)) {
    const value = row[path] ?? null;
    q = addTerm(
      q,
      value === null ? `-${path}:*` : fieldTerm(path, String(value)),
    );
  }
  const next: ExplorerState = { ...state, q };
  delete next.cursor;
  delete next.open;
  delete next.around;
  const ms = timeBucketMs(pipe);
  if (ms !== null && typeof row.time === "string") {
    next.since = Date.parse(row.time);
    next.until = next.since + ms;
  }
  return next;
}

/** A cell as the table shows it. */
function cellText(column: string, cell: Cell | undefined): string {
  if (cell === undefined || cell === null) {
    return column === "count" ? "0" : NONE;
  }
  if (column === "share" && typeof cell === "number") {
    return `${(cell * 100).toFixed(1)}%`;
  }
  if (column === "time" && typeof cell === "string") {
    return `${formatTime(Date.parse(cell), false)}`;
  }
  return String(cell);
}

/** A row's label in the chart: its field values. */
function rowLabel(pipe: Pipe, row: Record<string, Cell>): string {
  return fieldColumns(pipe).map((c) => cellText(c, row[c])).join(" · ");
}

/** Bars for the values of the first rows, the largest first. */
function ValueBars(
  props: {
    pipe: Pipe;
    rows: Record<string, Cell>[];
    href: (i: number) => string;
  },
) {
  const rows = props.rows.slice(0, CHART_ROWS);
  const max = Math.max(1, ...rows.map((r) => Number(r.count ?? 0)));
  return (
    <figure class="rows-chart" id="rows-chart">
      <ol class="bars">
        {rows.map((row, i) => (
          <li>
            <a href={props.href(i)}>
              <span class="label">{rowLabel(props.pipe, row)}</span>
              <svg
                viewBox="0 0 100 10"
                preserveAspectRatio="none"
                aria-hidden="true"
              >
                <rect
                  class="value-bar"
                  x={0}
                  y={0}
                  width={Number(row.count ?? 0) / max * 100}
                  height={10}
                />
              </svg>
              <span class="n">{String(row.count ?? 0)}</span>
            </a>
          </li>
        ))}
      </ol>
      {props.rows.length > CHART_ROWS && (
        <figcaption>
          The {CHART_ROWS} largest of {props.rows.length} rows
        </figcaption>
      )}
    </figure>
  );
}

/**
 * The rows of a `count by (time …, F…)` as a histogram: one bar per bucket
 * over the window, stacked by the {@linkcode SPLIT_SERIES} largest
 * combinations of the other fields plus "other".
 */
export function rowsHistogram(
  data: RowsData,
  window: { since: number; until: number },
): Histogram | null {
  const ms = timeBucketMs(data.pipe);
  if (ms === null) return null;
  const first = Math.floor(window.since / ms) * ms;
  const count = Math.ceil((window.until - first) / ms);
  if (count < 1 || count > CHART_BUCKETS) return null;
  const totals = new Map<string, number>();
  const named = data.rows.map((row) => {
    const name = rowLabel(data.pipe, row) || "count";
    const n = Number(row.count ?? 0);
    totals.set(name, (totals.get(name) ?? 0) + n);
    return { name, n, start: Date.parse(String(row.time)) };
  });
  const top = [...totals].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1))
    .slice(0, SPLIT_SERIES).map(([name]) => name);
  const series = totals.size > top.length ? [...top, OTHER] : top;
  const buckets = Array.from({ length: count }, (_, i) => ({
    start: first + i * ms,
    counts: {} as Record<string, number>,
  }));
  for (const { name, n, start } of named) {
    const bucket = buckets[Math.floor((start - first) / ms)];
    if (!bucket) continue;
    const key = top.includes(name) ? name : OTHER;
    bucket.counts[key] = (bucket.counts[key] ?? 0) + n;
  }
  const countedFrom = data.searchedTo === undefined ? null : Math.min(
    buckets.at(-1)!.start,
    first + Math.max(0, Math.ceil((data.searchedTo - first) / ms)) * ms,
  );
  return {
    intervalMs: ms,
    buckets,
    countedFrom,
    split: { field: fieldColumns(data.pipe).join(", ") || "count", series },
  };
}

/** The href of the CSV of a view's rows. */
export function rowsCsvHref(
  base: string,
  projectId: string,
  state: ExplorerState,
): string {
  const view: ExplorerState = { ...state };
  delete view.cursor;
  delete view.open;
  delete view.around;
  return explorerHref(base, projectId, view, "/rows.csv");
}

/** The rows as a table, each with a link to its entries when `listed`. */
function RowsTable(
  props: { data: RowsData; listed: boolean; href: (i: number) => string },
) {
  const { data, listed, href } = props;
  return (
    <table class="rows" id="rows">
      <thead>
        <tr>
          {data.columns.map((c) => <th key={c} scope="col">{c}</th>)}
          {listed && <th scope="col"></th>}
        </tr>
      </thead>
      <tbody>
        {data.rows.map((row, i) => (
          <tr>
            {data.columns.map((c) => (
              <td class={c === "count" || c === "share" ? "num" : ""}>
                {cellText(c, row[c])}
              </td>
            ))}
            {listed && (
              <td>
                <a class="row-entries" href={href(i)}>Entries</a>
              </td>
            )}
          </tr>
        ))}
      </tbody>
    </table>
  );
}

/** The rows of an aggregation: partial notice, chart, table, CSV link. */
export function AggregationView(
  props: {
    ctx: PageContext;
    projectId: string;
    state: ExplorerState;
    window: { since: number; until: number };
    data: RowsData;
  },
) {
  const { ctx, projectId, state, data } = props;
  const href = (i: number) =>
    explorerHref(
      ctx.base,
      projectId,
      rowState(state, data.pipe, data.rows[i]!),
    );
  const chart = rowsHistogram(data, props.window);
  const listed = data.pipe.op !== "uniq" &&
    (data.pipe.op !== "count" || data.pipe.by.length > 0);
  return (
    <section class="aggregation" id="aggregation">
      {data.searchedTo !== undefined && (
        <p class="partial" id="partial">
          {`Partial, searched back to ${
            formatTime(data.searchedTo, false)
          } UTC: entries received before that were not counted. Narrow the time range to count them.`}
        </p>
      )}
      {chart
        ? (
          <HistogramChart
            histogram={chart}
            zoom={(start, end) =>
              explorerHref(ctx.base, projectId, {
                ...state,
                q: queryBeforePipe(state.q, data.pipe.column),
                since: start,
                until: end,
              })}
          />
        )
        : listed && data.rows.length > 0 && (
          <ValueBars pipe={data.pipe} rows={data.rows} href={href} />
        )}
      <RowsTable data={data} listed={listed} href={href} />
      <p class="rows-foot">
        {`${data.total} ${data.total === 1 ? "entry" : "entries"} counted`}
        {data.groups > data.rows.length &&
          ` · the ${data.rows.length} largest of ${data.groups} groups`}
        {data.estimate && " · an estimate (about 1 % off)"} ·{" "}
        <a
          href={rowsCsvHref(ctx.base, projectId, state)}
          id="rows-csv"
          download
        >
          CSV
        </a>
      </p>
    </section>
  );
}

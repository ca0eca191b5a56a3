/**
 * An error group's own page (`/projects/:id/errors/:fingerprint`): its count,
 * first and last seen, its entries per hour over 24 hours and per day over
 * 14 days, the users affected and the top ones, environments, releases with
 * their first and last seen, the latest entry with its stack, and a link to
 * all its entries in the explorer (db/error_group_detail.ts). The charts are
 * inline SVG, with no script.
 *
 * @module
 */
import type { GroupDetail, ValueCount } from "../../db/error_group_detail.ts";
import { DEFAULT_RANGE } from "../explorer_state.ts";
import { explorerHref } from "./explorer_list.tsx";
import { groupQuery } from "./errors.tsx";
import { formatTime, levelClass, link, summary } from "./format.ts";
import {
  Card,
  ListTable,
  type PageContext,
  ProjectLayout,
  SeenCells,
  TimeAgo,
} from "./layout.tsx";
import { orderedStack, ResolvedStackView, StackView } from "./stack.tsx";
import type { ResolvedStack } from "../../domain/entry.ts";
import type { GroupTriage } from "../../db/error_group_triage.ts";
import { TriageCard } from "./triage.tsx";

/** Data of an error group's page. */
export interface ErrorGroupData {
  project: { id: string; name: string };
  detail: GroupDetail;
  now: number;
  /** The latest entry's stack resolved through source maps. @default none */
  resolved?: ResolvedStack | null;
  /** The group's triage. @default none: unresolved */
  triage?: GroupTriage;
  /** Accounts the group may be assigned to. @default none */
  accounts?: string[];
  /** A notice, after a change. @default none */
  notice?: { kind: "ok" | "error"; text: string };
}

const BAR = 12;
const HEIGHT = 48;

/** Counts as a bar chart (inline SVG), oldest first, with its label. */
export function BarChart(
  props: { counts: number[]; label: string; id: string },
) {
  const { counts } = props;
  const max = Math.max(1, ...counts);
  const width = counts.length * BAR;
  return (
    <svg
      class="spark"
      id={props.id}
      width={width}
      height={HEIGHT}
      viewBox={`0 0 ${width} ${HEIGHT}`}
      role="img"
      aria-label={props.label}
      data-counts={counts.join(",")}
    >
      <title>{props.label}</title>
      {counts.map((count, i) => {
        const h = count === 0 ? 0 : Math.max(1, (count / max) * HEIGHT);
        return (
          <rect key={i} x={i * BAR} y={HEIGHT - h} width={BAR - 2} height={h} />
        );
      })}
    </svg>
  );
}

function total(counts: number[]): number {
  return counts.reduce((a, b) => a + b, 0);
}

/** A heading with the total of `counts` over `span`, then their chart. */
function SpanChart(
  props: { id: string; counts: number[]; span: string; per: string },
) {
  const sum = total(props.counts);
  return (
    <>
      <h3>Last {props.span} ({sum})</h3>
      <BarChart
        id={props.id}
        counts={props.counts}
        label={`${sum} entries in the last ${props.span}, per ${props.per}, oldest first`}
      />
    </>
  );
}

/**
 * A card `name` with a table of the values of `context.<field>` and their
 * counts, or `none` without any.
 */
function ValuesCard(
  props: {
    name: string;
    title: string;
    field: string;
    rows: ValueCount[];
    none: string;
  },
) {
  const { name, rows } = props;
  return (
    <Card titleId={name} title={props.title}>
      {rows.length === 0 ? <p class="empty">{props.none}</p> : (
        <ListTable
          class="values"
          id={`group-${name}`}
          columns={[`context.${props.field}`, {
            label: "Entries",
            class: "num",
          }]}
        >
          {rows.map((row) => (
            <tr key={row.value ?? ""}>
              <td>{row.value ?? <span class="hint">(none)</span>}</td>
              <td class="num">{row.count.toLocaleString("en-US")}</td>
            </tr>
          ))}
        </ListTable>
      )}
    </Card>
  );
}

/** What the page says when the scan ran out of time. */
function Partial(props: { detail: GroupDetail }) {
  const { searchedTo } = props.detail;
  if (searchedTo === undefined) return null;
  return (
    <p class="notice info partial" id="partial">
      Partial: the breakdowns below count the entries received since{" "}
      {formatTime(searchedTo, false)} UTC only (the time to read ran out).
    </p>
  );
}

/** The counts, first and last seen, and the link to the entries. */
function Facts(props: { ctx: PageContext; data: ErrorGroupData }) {
  const { ctx, data } = props;
  const { detail, now } = data;
  const { group } = detail;
  const partial = detail.searchedTo !== undefined;
  const users = `${detail.usersCapped || partial ? "≥ " : ""}${
    detail.users.toLocaleString("en-US")
  }`;
  const since = group?.firstSeen ?? detail.latest?.receivedAt ?? now;
  const href = explorerHref(ctx.base, data.project.id, {
    q: groupQuery(detail.fingerprint),
    levels: [],
    range: DEFAULT_RANGE,
    since: Math.floor(since / 60_000) * 60_000,
    paused: false,
  });
  return (
    <dl class="pairs facts" id="group-facts">
      <dt>Count</dt>
      <dd id="group-count">
        {group === null ? "—" : group.count.toLocaleString("en-US")}
      </dd>
      <dt>Users affected</dt>
      <dd id="group-users">{users}</dd>
      <dt>First seen</dt>
      <dd>
        {group === null ? "—" : <TimeAgo at={group.firstSeen} now={now} />}
      </dd>
      <dt>Last seen</dt>
      <dd>
        {group === null ? "—" : <TimeAgo at={group.lastSeen} now={now} />}
      </dd>
      <dt>Entries</dt>
      <dd>
        <a id="group-entries" href={href}>
          All its entries in the explorer
        </a>{" "}
        <code>{groupQuery(detail.fingerprint)}</code>
      </dd>
    </dl>
  );
}

/** The releases with their first and last seen. */
function Releases(props: { detail: GroupDetail; now: number }) {
  const { releases } = props.detail;
  if (releases.length === 0) return <p class="empty">No entries.</p>;
  return (
    <ListTable
      class="values"
      id="group-releases"
      columns={[
        "Release",
        { label: "Entries", class: "num" },
        "First seen",
        "Last seen",
      ]}
    >
      {releases.map((row) => (
        <tr key={row.value ?? ""}>
          <td>{row.value ?? <span class="hint">(none)</span>}</td>
          <td class="num">{row.count.toLocaleString("en-US")}</td>
          <SeenCells seen={row} now={props.now} />
        </tr>
      ))}
    </ListTable>
  );
}

/** The latest entry: its level, time, summary and stack. */
function Latest(props: { ctx: PageContext; data: ErrorGroupData }) {
  const { ctx, data } = props;
  const record = data.detail.latest;
  if (record === null) {
    return <p class="empty">No entry in the last 14 days.</p>;
  }
  return (
    <div id="group-latest">
      <p>
        <span class={`lvl ${levelClass(record.level)}`}>{record.level}</span>
        {" "}
        <TimeAgo at={record.receivedAt} now={data.now} />{" "}
        <a
          href={link(
            ctx.base,
            `/projects/${encodeURIComponent(data.project.id)}/entries/${
              encodeURIComponent(record.id)
            }`,
          )}
        >
          {summary(record) || record.id}
        </a>
      </p>
      <ResolvedStackView stack={data.resolved} />
      <StackView lines={orderedStack(record.data.stack)} />
    </div>
  );
}

/** An error group's page. */
export function ErrorGroupPage(
  props: { ctx: PageContext; data: ErrorGroupData },
) {
  const { ctx, data } = props;
  const { detail } = data;
  const title = detail.group?.title ?? "";
  return (
    <ProjectLayout
      ctx={ctx}
      project={data.project}
      tab="errors"
      title={`Error ${detail.fingerprint}`}
    >
      <p>
        <a href={link(ctx.base, `/projects/${data.project.id}/errors`)}>
          All errors
        </a>
      </p>
      <h1 id="group-title">{title || "(no title)"}</h1>
      {detail.group?.topFrame && (
        <p>
          <code class="frame">{detail.group.topFrame}</code>
        </p>
      )}
      <Facts ctx={ctx} data={data} />
      <TriageCard ctx={ctx} data={data} />
      <Partial detail={detail} />
      <Card titleId="over-time" title="Over time">
        <SpanChart
          id="chart-hours"
          counts={detail.hourly}
          span="24 hours"
          per="hour"
        />
        <SpanChart
          id="chart-days"
          counts={detail.daily}
          span="14 days"
          per="day (UTC)"
        />
      </Card>
      <ValuesCard
        name="top-users"
        title="Top users"
        field="userId"
        rows={detail.topUsers}
        none="No entry names a user (context.userId)."
      />
      <ValuesCard
        name="environments"
        title="Environments"
        field="environment"
        rows={detail.environments}
        none="No entries."
      />
      <Card titleId="releases" title="Releases">
        <Releases detail={detail} now={data.now} />
      </Card>
      <Card titleId="latest" title="Latest entry">
        <Latest ctx={ctx} data={data} />
      </Card>
    </ProjectLayout>
  );
}

/**
 * The error groups of a project (`/projects/:id/errors`): its `error` and
 * `critical` entries grouped by fingerprint (domain/fingerprint.ts), the
 * most recently seen first, each with its count, first and last seen, a
 * sparkline of the last 24 hours, its users, a link to the explorer showing
 * its entries and one to its own page (error_group.tsx); groups first seen
 * in the last 24 hours are marked new.
 *
 * @module
 */
import {
  type ErrorGroup,
  MAX_LIST_GROUPS,
} from "../../db/error_group_reads.ts";
import type { GroupTriage, StatusFilter } from "../../db/error_group_triage.ts";
import {
  BulkActions,
  BulkCheckbox,
  StatusBadge,
  StatusFilterNav,
  triagePath,
} from "./triage.tsx";
import { DEFAULT_RANGE, type ExplorerState } from "../explorer_state.ts";
import { explorerHref } from "./explorer_list.tsx";
import { levelClass, link } from "./format.ts";
import {
  ListTable,
  type PageContext,
  ProjectLayout,
  SeenCells,
} from "./layout.tsx";

/** Data of the errors page. */
export interface ErrorsData {
  project: { id: string; name: string };
  /** One page of groups, the most recently seen first. */
  groups: ErrorGroup[];
  now: number;
  /** Distinct users per fingerprint (absent: none). @default none */
  users?: Map<string, number>;
  /** The users were counted within a budget that ran out: at least. @default false */
  usersPartial?: boolean;
  /** The cursor of the next page, `null` on the last. @default null */
  older?: string | null;
  /** This is a page after the first. @default false */
  paged?: boolean;
  /** The status filter. @default "unresolved" */
  status?: StatusFilter;
  /** Each group's triage, by group id. @default none: all unresolved */
  triage?: Map<string, GroupTriage>;
  /** A notice, after a change. @default none */
  notice?: { kind: "ok" | "error"; text: string };
}

/** The explorer query that lists one group's entries. */
export function groupQuery(fingerprint: string): string {
  return `level>=error fingerprint:${fingerprint}`;
}

/** The explorer view of one group's entries, from its first one on. */
export function groupState(group: ErrorGroup): ExplorerState {
  return {
    q: groupQuery(group.fingerprint),
    levels: [],
    range: DEFAULT_RANGE,
    since: Math.floor(group.firstSeen / 60_000) * 60_000,
    paused: false,
  };
}

const SPARK_BAR = 4;
const SPARK_HEIGHT = 20;

/** Hourly counts as a small bar chart (inline SVG), oldest hour first. */
export function Sparkline(props: { hourly: number[]; now: number }) {
  const { hourly } = props;
  const max = Math.max(1, ...hourly);
  const total = hourly.reduce((a, b) => a + b, 0);
  return (
    <svg
      class="spark"
      width={hourly.length * SPARK_BAR}
      height={SPARK_HEIGHT}
      viewBox={`0 0 ${hourly.length * SPARK_BAR} ${SPARK_HEIGHT}`}
      role="img"
      aria-label={`${total} in the last 24 hours`}
      data-hourly={hourly.join(",")}
    >
      <title>{`${total} in the last 24 hours (per hour, oldest first)`}</title>
      {hourly.map((count, i) => {
        const h = count === 0 ? 0 : Math.max(1, (count / max) * SPARK_HEIGHT);
        return (
          <rect
            x={i * SPARK_BAR}
            y={SPARK_HEIGHT - h}
            width={SPARK_BAR - 1}
            height={h}
          />
        );
      })}
    </svg>
  );
}

/** One group: its title, top frame and latest title, counts and times. */
function GroupRow(
  props: {
    ctx: PageContext;
    projectId: string;
    group: ErrorGroup;
    now: number;
    users: number;
    usersPartial: boolean;
    triage: GroupTriage | undefined;
    bulk: boolean;
  },
) {
  const { ctx, group, now } = props;
  const page = link(
    ctx.base,
    `/projects/${
      encodeURIComponent(props.projectId)
    }/errors/${group.fingerprint}`,
  );
  return (
    <tr
      data-fingerprint={group.fingerprint}
      class={group.isNew ? "new" : undefined}
    >
      {props.bulk && (
        <td>
          <BulkCheckbox fingerprint={group.fingerprint} />
        </td>
      )}
      <td>
        <StatusBadge triage={props.triage} />{" "}
        <span class={`lvl ${levelClass(group.level)}`}>
          {group.level}
        </span>{" "}
        {group.isNew && <span class="badge new">new</span>}{" "}
        <a
          class="group-link strong"
          href={explorerHref(ctx.base, props.projectId, groupState(group))}
          title="Show this group's entries in the explorer"
        >
          {group.title || "(no title)"}
        </a>
        {group.topFrame !== null && (
          <div>
            <code class="frame">{group.topFrame}</code>
          </div>
        )}
        {group.sampleTitle !== "" &&
          group.sampleTitle !== group.title && (
          <div class="hint sample">
            Latest: {group.sampleTitle}
          </div>
        )}
        <div>
          <a class="group-page" href={page}>Details</a>
        </div>
      </td>
      <td class="num count">
        {group.count.toLocaleString("en-US")}
      </td>
      <td class="num users">
        {props.usersPartial ? "≥ " : ""}
        {props.users.toLocaleString("en-US")}
      </td>
      <td>
        <Sparkline hourly={group.hourly} now={now} />
      </td>
      <SeenCells seen={group} now={now} />
    </tr>
  );
}

/** The table of groups, a checkbox each when `bulk`. */
function GroupsTable(
  props: { ctx: PageContext; data: ErrorsData; bulk: boolean },
) {
  const { ctx, data, bulk } = props;
  return (
    <ListTable
      class="errors"
      id="groups"
      columns={[
        ...(bulk ? [{ label: "", title: "Select for a bulk action" }] : []),
        "Error",
        { label: "Count", class: "num" },
        {
          label: "Users",
          class: "num",
          title: "Distinct context.userId of the group's entries",
        },
        "Last 24 h",
        "First seen",
        "Last seen",
      ]}
    >
      {data.groups.map((group) => (
        <GroupRow
          key={group.id}
          ctx={ctx}
          projectId={data.project.id}
          group={group}
          now={data.now}
          users={data.users?.get(group.fingerprint) ?? 0}
          usersPartial={data.usersPartial ?? false}
          triage={data.triage?.get(group.id)}
          bulk={bulk}
        />
      ))}
    </ListTable>
  );
}

/**
 * What a page without groups says: with groups seen earlier still unread,
 * that the status filter found none among the groups read
 * ({@linkcode MAX_LIST_GROUPS}), not that there are none.
 */
function emptyText(data: ErrorsData): string {
  const read = MAX_LIST_GROUPS.toLocaleString("en-US");
  if (data.older) {
    return data.paged
      ? `None among the next ${read} groups seen earlier.`
      : `None among the ${read} most recently seen groups.`;
  }
  return data.paged ? "No older groups." : "No errors yet.";
}

/** The errors page. */
export function ErrorsPage(props: { ctx: PageContext; data: ErrorsData }) {
  const { ctx, data } = props;
  const { project } = data;
  const fresh = data.groups.filter((g) => g.isNew).length;
  const status = data.status ?? "unresolved";
  const bulk = ctx.posts(triagePath(project.id));
  return (
    <ProjectLayout ctx={ctx} project={project} tab="errors">
      <h1>Errors</h1>
      <p class="hint">
        Entries of level error and critical, grouped by their title (numbers,
        ids and quoted text set aside) and the top frame of their stack. Times
        in UTC.
      </p>
      <StatusFilterNav ctx={ctx} projectId={project.id} current={status} />
      {data.notice && (
        <p class={`notice ${data.notice.kind}`} id="triage-notice">
          {data.notice.text}
        </p>
      )}
      {data.groups.length === 0
        ? (
          <p class="empty" id="no-groups">
            {emptyText(data)}
          </p>
        )
        : (
          <>
            <p id="groups-summary">
              {data.older && !data.paged ? "The most recently seen " : ""}
              {data.groups.length}{" "}
              {data.groups.length === 1 ? "group" : "groups"}
              {data.paged ? " seen earlier" : ""}
              {fresh > 0 && `, ${fresh} new in the last 24 hours`}.
            </p>
            <GroupsTable ctx={ctx} data={data} bulk={bulk} />
            {bulk && (
              <BulkActions ctx={ctx} projectId={project.id} status={status} />
            )}
          </>
        )}
      {data.older && (
        <p class="pager">
          <a
            id="older-groups"
            href={link(
              ctx.base,
              `/projects/${
                encodeURIComponent(project.id)
              }/errors?status=${status}&after=${
                encodeURIComponent(data.older)
              }`,
            )}
          >
            Groups seen earlier
          </a>
        </p>
      )}
    </ProjectLayout>
  );
}

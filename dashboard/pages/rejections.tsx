/**
 * "Why are my entries missing?" (`/projects/:id/rejections`): a project's
 * rejections by reason (all time, and the last 24 hours among the recent
 * ones), the rejected entries the service keeps with their content (for
 * `bad_signature` the text it expected to be signed), what to do for each
 * reason, Replay buttons for after the settings are fixed (one entry, or
 * all), the outcome of the last replay, and the recent rejections (reason,
 * time, level, origin or app id) with a one-click "allow".
 *
 * @module
 */
import type { BacklogPart, StorageBacklog } from "../../db/backlog.ts";
import type { KeptEntry } from "../../db/rejected.ts";
import type { ReplayResult } from "../../queue/replay.ts";
import type { Rejection } from "../../db/stats.ts";
import { formatTime, levelClass, link } from "./format.ts";
import {
  Card,
  FlashNotice,
  ListTable,
  type PageContext,
  ProjectLayout,
} from "./layout.tsx";
import { REASON_HELP } from "./reasons.ts";
import {
  KeptEntryItem,
  QuickAllow,
  ReplayForm,
  ReplayResults,
} from "./rejected_entry.tsx";

/** A row of the storage backlog: entries waiting and the oldest's age. */
function BacklogRow(
  props: { label: string; part: BacklogPart; hint: string },
) {
  const { part } = props;
  return (
    <tr class="backlog">
      <th scope="row">{props.label}</th>
      <td class="num">{part.entries.toLocaleString("en-US")}</td>
      <td class="num">
        {part.oldestAgeMs === null
          ? ""
          : `oldest ${(part.oldestAgeMs / 1000).toFixed(1)} s`}
      </td>
      <td class="hint">{props.hint}</td>
    </tr>
  );
}

/** Data of the rejections page. */
export interface RejectionsData {
  project: { id: string; name: string; allowedOrigin: string[] };
  accepted: number;
  /** Rejected entries later stored by a replay (counted in `accepted`). */
  replayed: number;
  /** What storage has not caught up with yet (docs/storage.md#backlog). */
  backlog?: StorageBacklog;
  /** Counters by reason, all time. */
  rejected: Record<string, number>;
  /** Rejections of the last 24 hours by reason, from the recent ones. */
  lastDay: Record<string, number>;
  /** Every recent one is from the last 24 hours: the counts are lower bounds. */
  lastDayAtLeast: boolean;
  /** Recent rejections, newest first. */
  recent: Rejection[];
  /** Kept rejected entries shown (of `reason` when set), newest first. */
  kept: KeptEntry[];
  /** Kept rejected entries that a replay of all would try. */
  keptReplayable: number;
  /** The reason the kept entries are narrowed to. */
  reason?: string;
  /** Outcome of the replay just done. */
  results?: ReplayResult[];
  notice?: { kind: "ok" | "error"; text: string };
}

function Counts(props: { data: RejectionsData }) {
  const { data } = props;
  const reasons = Object.entries(data.rejected).filter(([, n]) => n > 0)
    .sort(([, a], [, b]) => b - a);
  const total = reasons.reduce((n, [, c]) => n + c, 0);
  const day = (n: number | undefined) =>
    `${data.lastDayAtLeast && n ? "≥ " : ""}${
      (n ?? 0).toLocaleString("en-US")
    }`;
  const dayTotal = Object.values(data.lastDay).reduce((n, c) => n + c, 0);
  return (
    <Card titleId="counts-title" title="By reason">
      <table class="list counts">
        <thead>
          <tr>
            <th scope="col"></th>
            <th scope="col" class="num">All time</th>
            <th
              scope="col"
              class="num"
              title="Counted from the last 100 rejections kept"
            >
              Last 24 h
            </th>
            <th scope="col"></th>
          </tr>
        </thead>
        <tbody>
          <tr>
            <th scope="row">Stored</th>
            <td class="num">{data.accepted.toLocaleString("en-US")}</td>
            <td></td>
            <td class="hint">
              {data.replayed > 0 &&
                `${data.replayed.toLocaleString("en-US")} of them by a replay`}
            </td>
          </tr>
          <tr>
            <th scope="row">Rejected</th>
            <td class="num">{total.toLocaleString("en-US")}</td>
            <td class="num">{day(dayTotal)}</td>
            <td></td>
          </tr>
          {reasons.map(([reason, n]) => (
            <tr class="reason" data-reason={reason}>
              <th scope="row">
                <code>{reason}</code>
              </th>
              <td class="num">{n.toLocaleString("en-US")}</td>
              <td class="num">{day(data.lastDay[reason])}</td>
              <td class="hint">{REASON_HELP[reason]?.meaning ?? ""}</td>
            </tr>
          ))}
          {data.backlog && (
            <>
              <BacklogRow
                label="Not yet stored"
                part={data.backlog.queued}
                hint="Accepted, waiting for the consumer (all projects)"
              />
              <BacklogRow
                label="Not yet merged"
                part={data.backlog.unmerged}
                hint="Stored and searchable, in small chunks the merger has not combined yet"
              />
            </>
          )}
        </tbody>
      </table>
      <p class="hint">
        There are no rejection counters by time: the last 24 h are counted from
        the last 100 rejections the service keeps
        {data.lastDayAtLeast
          ? ", all of which are that recent, so there may have been more."
          : "."}
      </p>
    </Card>
  );
}

function KeptEntries(props: { ctx: PageContext; data: RejectionsData }) {
  const { ctx, data } = props;
  const id = data.project.id;
  const reasons = [...new Set(data.recent.map((r) => r.reason))].sort();
  const here = link(ctx.base, `/projects/${id}/rejections`);
  return (
    <Card id="rejected-content" titleId="kept-title" title="Rejected entries">
      <p>
        The service keeps the last 100 rejected entries for 7 days, with what
        was sent. Fix the settings (or the sender), then replay: each entry is
        authenticated again on the current settings and stored once if it
        passes; one that fails again stays here.
      </p>
      <div class="row">
        {reasons.length > 1 && (
          <nav class="chips" aria-label="Reason">
            <a
              class="chip"
              href={`${here}#rejected-content`}
              aria-pressed={data.reason === undefined ? "true" : "false"}
            >
              all
            </a>
            {reasons.map((reason) => (
              <a
                class="chip"
                href={`${here}?reason=${reason}#rejected-content`}
                aria-pressed={data.reason === reason ? "true" : "false"}
              >
                {reason}
              </a>
            ))}
          </nav>
        )}
        {data.keptReplayable > 0 && (
          <ReplayForm
            ctx={ctx}
            projectId={id}
            entry="all"
            label={`Replay all ${data.keptReplayable} kept ${
              data.keptReplayable === 1 ? "entry" : "entries"
            }`}
          />
        )}
      </div>
      {data.kept.length === 0
        ? <p class="empty">No rejected entry kept.</p>
        : (
          <div class="kept-list" id="kept">
            {data.kept.map((kept, i) => (
              <KeptEntryItem
                ctx={ctx}
                projectId={id}
                allowed={data.project.allowedOrigin}
                kept={kept}
                open={i === 0}
              />
            ))}
          </div>
        )}
    </Card>
  );
}

function RecentTable(props: { ctx: PageContext; data: RejectionsData }) {
  const { ctx, data } = props;
  const allow = (value: string | undefined) => (
    <QuickAllow
      ctx={ctx}
      projectId={data.project.id}
      allowed={data.project.allowedOrigin}
      value={value}
    />
  );
  return (
    <Card titleId="recent-title" title="Recent rejections">
      {data.recent.length === 0
        ? <p class="empty">No recent rejections.</p>
        : (
          <ListTable
            class="recent"
            id="recent"
            columns={[
              "Time (UTC)",
              "Reason",
              "Level",
              "Origin / app id",
              "Entry id",
            ]}
          >
            {data.recent.map((r) => (
              <tr data-reason={r.reason}>
                <td>
                  <time datetime={new Date(r.at).toISOString()}>
                    {formatTime(r.at, false)}
                  </time>
                </td>
                <td>
                  <code>{r.reason}</code>
                </td>
                <td>
                  <span class={`lvl ${levelClass(r.level)}`}>
                    {r.level}
                  </span>
                </td>
                <td>
                  {[r.origin, r.appid].filter((v) => v !== undefined)
                    .join(" ") || "—"}{" "}
                  {r.reason === "bad_origin" && allow(r.origin)}
                  {r.reason === "unknown_appid" && allow(r.appid)}
                </td>
                <td>
                  <code class="small">{r.entryId}</code>
                </td>
              </tr>
            ))}
          </ListTable>
        )}
      <p class="hint">
        The last 100 rejections are listed for 30 days, their content kept for
        7.
      </p>
    </Card>
  );
}

/** The rejections page. */
export function RejectionsPage(
  props: { ctx: PageContext; data: RejectionsData },
) {
  const { ctx, data } = props;
  return (
    <ProjectLayout ctx={ctx} project={data.project} tab="rejections">
      <h1>Why are my entries missing?</h1>
      <FlashNotice notice={data.notice} />
      <p>
        The endpoint answers <code>queued</code>{" "}
        before it checks credentials, so a refused entry still got{" "}
        <code>200</code>. Every refusal is counted here with its reason.
      </p>
      {data.results && (
        <ReplayResults
          ctx={ctx}
          projectId={data.project.id}
          results={data.results}
        />
      )}
      <Counts data={data} />
      <KeptEntries ctx={ctx} data={data} />
      <Card titleId="fix-title" title="What to do">
        <dl class="reasons">
          {Object.entries(REASON_HELP).map(([reason, help]) => (
            <>
              <dt>
                <code>{reason}</code>
              </dt>
              <dd>{help.meaning} {help.fix}</dd>
            </>
          ))}
        </dl>
        {ctx.opens(`/projects/${data.project.id}/settings`) && (
          <p class="hint">
            Settings changes apply to the next entry processed after them. See
            the{" "}
            <a href={link(ctx.base, `/projects/${data.project.id}/settings`)}>
              settings
            </a>.
          </p>
        )}
      </Card>
      <RecentTable ctx={ctx} data={data} />
    </ProjectLayout>
  );
}

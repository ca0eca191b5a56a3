/**
 * "Why are my entries missing?" (`/projects/:id/rejections`): a project's
 * rejections counted by reason, its recent rejections (reason, time, level,
 * origin or app id), and for each reason what to do — with a one-click
 * "allow" for an origin or app id that was refused. The content of rejected
 * entries and their replay have their own section, which says plainly that
 * the service does not keep that content yet.
 *
 * @module
 */
import type { Rejection } from "../../db/stats.ts";
import { formatTime, levelClass, link } from "./format.ts";
import { Csrf, Layout, Notice, type PageContext } from "./layout.tsx";

/** Data of the rejections page. */
export interface RejectionsData {
  project: { id: string; name: string; allowedOrigin: string[] };
  accepted: number;
  /** Counters by reason, all time. */
  rejected: Record<string, number>;
  /** Recent rejections, newest first. */
  recent: Rejection[];
  notice?: { kind: "ok" | "error"; text: string };
}

/** What a reason means and what to do about it. */
export const REASON_HELP: Record<string, { meaning: string; fix: string }> = {
  bad_origin: {
    meaning: "The Origin header is not in the allow-list.",
    fix:
      "If the page is yours, allow its origin exactly as the browser sends it: scheme, host and port, no path, no trailing slash.",
  },
  unknown_appid: {
    meaning: "The appid is not in the allow-list.",
    fix:
      "If the app is yours, allow its app id (reverse domain notation, e.g. com.example.shop.ios).",
  },
  bad_signature: {
    meaning:
      "The signature does not match the one computed with the project's secret.",
    fix:
      "Sign projectId + the compact JSON of level, projectId, device, context, data (in that order) + the timestamp, with HMAC-SHA256 and the current secret, in upper-case hex. Common slips: Python's json.dumps default separators add spaces, Go sorts map keys, json.Encoder adds a trailing newline, echo adds one where printf does not, and a secret rotated past its grace period.",
  },
  stale_timestamp: {
    meaning:
      "The signature matches but the timestamp is too far from the time of receipt.",
    fix:
      "Send the current Unix time in milliseconds (not seconds) and keep the server's clock in sync.",
  },
  replayed: {
    meaning: "This signature was already used.",
    fix:
      "Sign every entry afresh with a new timestamp; do not resend a signed request as is.",
  },
  no_credentials: {
    meaning: "The entry carried no Origin, no appid and no signature.",
    fix:
      "Browsers send Origin themselves; mobile apps must send appid; servers must sign.",
  },
  unknown_level: {
    meaning:
      "The level is not one of the four standard ones and the project does not declare it.",
    fix:
      "Declare the level under Custom levels in the settings, or send info, warning, error or critical.",
  },
};

function QuickAllow(
  props: { ctx: PageContext; data: RejectionsData; value: string | undefined },
) {
  const { ctx, data, value } = props;
  if (value === undefined || data.project.allowedOrigin.includes(value)) {
    return null;
  }
  return (
    <form
      method="post"
      action={link(ctx.base, `/projects/${data.project.id}/settings/allow`)}
      class="inline"
    >
      <Csrf ctx={ctx} />
      <input type="hidden" name="value" value={value} />
      <input type="hidden" name="back" value="rejections" />
      <button type="submit" class="small">Allow</button>
    </form>
  );
}

/** The rejections page. */
export function RejectionsPage(
  props: { ctx: PageContext; data: RejectionsData },
) {
  const { ctx, data } = props;
  const reasons = Object.entries(data.rejected).filter(([, n]) => n > 0)
    .sort(([, a], [, b]) => b - a);
  const total = reasons.reduce((n, [, c]) => n + c, 0);
  return (
    <Layout
      ctx={ctx}
      title={`${data.project.name} · Rejections`}
      section="projects"
      project={{
        id: data.project.id,
        name: data.project.name,
        current: "rejections",
      }}
    >
      <h1>Why are my entries missing?</h1>
      {data.notice && (
        <Notice kind={data.notice.kind}>{data.notice.text}</Notice>
      )}
      <p>
        The endpoint answers <code>queued</code>{" "}
        before it checks credentials, so a refused entry still got{" "}
        <code>200</code>. Every refusal is counted here with its reason.
      </p>
      <section class="card" aria-labelledby="counts-title">
        <h2 id="counts-title">By reason (all time)</h2>
        <table class="list counts">
          <tbody>
            <tr>
              <th scope="row">Stored</th>
              <td class="num">{data.accepted.toLocaleString("en-US")}</td>
              <td></td>
            </tr>
            <tr>
              <th scope="row">Rejected</th>
              <td class="num">{total.toLocaleString("en-US")}</td>
              <td></td>
            </tr>
            {reasons.map(([reason, n]) => (
              <tr class="reason" data-reason={reason}>
                <th scope="row">
                  <code>{reason}</code>
                </th>
                <td class="num">{n.toLocaleString("en-US")}</td>
                <td class="hint">{REASON_HELP[reason]?.meaning ?? ""}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </section>
      <section class="card" aria-labelledby="recent-title">
        <h2 id="recent-title">Recent rejections</h2>
        {data.recent.length === 0
          ? <p class="empty">No recent rejections.</p>
          : (
            <div class="scroll">
              <table class="list recent" id="recent">
                <thead>
                  <tr>
                    <th scope="col">Time (UTC)</th>
                    <th scope="col">Reason</th>
                    <th scope="col">Level</th>
                    <th scope="col">Origin / app id</th>
                    <th scope="col">Entry id</th>
                  </tr>
                </thead>
                <tbody>
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
                        {r.reason === "bad_origin" && (
                          <QuickAllow ctx={ctx} data={data} value={r.origin} />
                        )}
                        {r.reason === "unknown_appid" && (
                          <QuickAllow ctx={ctx} data={data} value={r.appid} />
                        )}
                      </td>
                      <td>
                        <code class="small">{r.entryId}</code>
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          )}
        <p class="hint">The last 100 rejections are kept, for 30 days.</p>
      </section>
      <section class="card" aria-labelledby="fix-title">
        <h2 id="fix-title">What to do</h2>
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
        <p class="hint">
          Settings changes apply to entries processed after them. See the{" "}
          <a href={link(ctx.base, `/projects/${data.project.id}/settings`)}>
            settings
          </a>.
        </p>
      </section>
      <section
        class="card unavailable"
        id="rejected-content"
        aria-labelledby="content-title"
      >
        <h2 id="content-title">Content of rejected entries and replay</h2>
        <p>
          Not available yet: this version of the service keeps the reason, time,
          level and sender of each rejection, not the entry itself, so a
          rejected entry cannot be shown here or replayed after the settings are
          fixed. Until then, fix the settings and have the sender send again.
        </p>
      </section>
    </Layout>
  );
}

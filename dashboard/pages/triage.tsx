/**
 * The triage controls of the errors pages (docs/errors.md#triage): the
 * status filter of the errors list, a group's status badge, the bulk
 * actions under the list (the checked groups are resolved, ignored or
 * reopened at once) and the triage card of a group's own page (resolve,
 * in a release; ignore, forever, until a date or until N more entries;
 * reopen; assign). Plain forms, no script; shown only to accounts that may
 * send them.
 *
 * @module
 */
import type { GroupTriage, StatusFilter } from "../../db/error_group_triage.ts";
import { STATUS_FILTERS } from "../../db/error_group_triage.ts";
import { link } from "./format.ts";
import { Card, type PageContext, PostForm } from "./layout.tsx";

/** The path the triage forms post to. */
export function triagePath(projectId: string): string {
  return `/projects/${encodeURIComponent(projectId)}/errors/triage`;
}

/** The links of the status filter, the current one marked. */
export function StatusFilterNav(
  props: { ctx: PageContext; projectId: string; current: StatusFilter },
) {
  const base = `/projects/${encodeURIComponent(props.projectId)}/errors`;
  return (
    <nav class="status-filter" aria-label="Status" id="status-filter">
      {STATUS_FILTERS.map((status) => (
        <a
          href={link(props.ctx.base, `${base}?status=${status}`)}
          aria-current={status === props.current ? "page" : undefined}
          data-status={status}
        >
          {status}
        </a>
      ))}
    </nav>
  );
}

/** A group's status, and its assignee. */
export function StatusBadge(props: { triage: GroupTriage | undefined }) {
  const status = props.triage?.status ?? "unresolved";
  const t = props.triage?.triage;
  const inRelease = status === "resolved" && t?.inRelease
    ? ` in ${t.inRelease}`
    : "";
  return (
    <span class={`badge status ${status}`} data-status={status}>
      {status}
      {inRelease}
      {props.triage?.assignee && ` · ${props.triage.assignee}`}
    </span>
  );
}

/** A group's checkbox of the bulk actions. */
export function BulkCheckbox(props: { fingerprint: string }) {
  return (
    <input
      type="checkbox"
      name="fp"
      value={props.fingerprint}
      form="bulk"
      aria-label={`Select group ${props.fingerprint}`}
    />
  );
}

/** The bulk actions of the errors list: the checkboxes name the groups. */
export function BulkActions(
  props: { ctx: PageContext; projectId: string; status: StatusFilter },
) {
  return (
    <PostForm
      ctx={props.ctx}
      to={triagePath(props.projectId)}
      id="bulk"
      class="bulk"
    >
      <input type="hidden" name="back" value={props.status} />
      <span>Checked groups:</span>{" "}
      <button type="submit" name="action" value="resolve">Resolve</button>{" "}
      <button type="submit" name="action" value="ignore">Ignore</button>{" "}
      <button type="submit" name="action" value="reopen">Reopen</button>
    </PostForm>
  );
}

/** The forms of a group's triage card. */
function TriageForms(
  props: {
    ctx: PageContext;
    to: string;
    fingerprint: string;
    assignee: string | null;
    accounts: string[];
  },
) {
  const { ctx, to } = props;
  const hidden = (
    <>
      <input type="hidden" name="fp" value={props.fingerprint} />
      <input type="hidden" name="back" value="group" />
    </>
  );
  return (
    <>
      <PostForm ctx={ctx} to={to} id="resolve-form">
        {hidden}
        <label>
          In release (optional){" "}
          <input name="in_release" maxlength={200} placeholder="1.4.0" />
        </label>{" "}
        <button type="submit" name="action" value="resolve">
          Resolve
        </button>
      </PostForm>
      <PostForm ctx={ctx} to={to} id="ignore-form">
        {hidden}
        <label>
          Until (date, optional) <input name="until" type="date" />
        </label>{" "}
        <label>
          or until N more entries{" "}
          <input name="until_count" type="number" min={1} />
        </label>{" "}
        <button type="submit" name="action" value="ignore">Ignore</button>
      </PostForm>
      <PostForm ctx={ctx} to={to} id="reopen-form">
        {hidden}
        <button type="submit" name="action" value="reopen">Reopen</button>
      </PostForm>
      <PostForm ctx={ctx} to={to} id="assign-form">
        {hidden}
        <label>
          Assignee{" "}
          <select name="assignee">
            <option value="">nobody</option>
            {props.accounts.map((email) => (
              <option value={email} selected={email === props.assignee}>
                {email}
              </option>
            ))}
          </select>
        </label>{" "}
        <button type="submit" name="action" value="assign">Assign</button>
      </PostForm>
    </>
  );
}

/** The triage card of a group's page, after the notice of a change. */
export function TriageCard(
  props: {
    ctx: PageContext;
    data: {
      project: { id: string };
      detail: { fingerprint: string };
      triage?: GroupTriage;
      /** Accounts a group may be assigned to. */
      accounts?: string[];
      notice?: { kind: "ok" | "error"; text: string };
    };
  },
) {
  const { ctx, data } = props;
  const { triage } = data;
  const fingerprint = data.detail.fingerprint;
  const accounts = data.accounts ?? [];
  const to = triagePath(data.project.id);
  const may = ctx.posts(to);
  return (
    <>
      {data.notice && (
        <p class={`notice ${data.notice.kind}`} id="triage-notice">
          {data.notice.text}
        </p>
      )}
      <Card titleId="triage" title="Triage" id="triage-card">
        <p>
          Status: <StatusBadge triage={triage} />
        </p>
        {may && (
          <TriageForms
            ctx={ctx}
            to={to}
            fingerprint={fingerprint}
            assignee={triage?.assignee ?? null}
            accounts={accounts}
          />
        )}
      </Card>
    </>
  );
}

/**
 * A project's alert rules (`/projects/:id/alerts`): each rule with its
 * query, threshold, pace and webhook, a button to remove it and its
 * delivery history; a form to add one. A new rule's signing secret is shown
 * once, after the redirect that follows adding it (dashboard/flash.ts).
 *
 * @module
 */
import type { AlertRule, DeliveryAttempt } from "../../db/alerts.ts";
import { formatAlertDuration } from "../../alerts/rules.ts";
import { formatTime, link } from "./format.ts";
import {
  Card,
  CopyableCode,
  FlashNotice,
  ListTable,
  type PageContext,
  PostForm,
  ProjectLayout,
} from "./layout.tsx";

/** Form values sent back with a refusal. */
export interface AlertForm {
  query: string;
  /** A rule on error groups: new, regressed or escalating. @default "" */
  on?: string;
  /** Of escalating. @default "" */
  factor?: string;
  webhook: string;
  threshold: string;
  window: string;
  every: string;
}

/** Data of the alerts page. */
export interface AlertsData {
  project: { id: string; name: string };
  rules: { rule: AlertRule; history: DeliveryAttempt[] }[];
  notice?: { kind: "ok" | "error"; text: string };
  /** A rule just added, with its secret, shown this once. */
  created?: { ruleId: string; secret: string };
  /** The add form as sent, when it was refused. */
  form?: AlertForm;
}

function scope(rule: AlertRule): string {
  if (rule.on === "escalating") {
    return `an escalating error group (over ${rule.factor} times its hourly average)`;
  }
  if (rule.on !== undefined) return `a ${rule.on} error group`;
  return rule.threshold === undefined
    ? "every match"
    : `more than ${rule.threshold} within ${
      formatAlertDuration(rule.windowMs ?? 0)
    }`;
}

function History(props: { history: DeliveryAttempt[] }) {
  if (props.history.length === 0) {
    return <p class="empty">No deliveries yet.</p>;
  }
  return (
    <ListTable
      class="history"
      columns={[
        "Time (UTC)",
        { label: "Attempt", class: "num" },
        { label: "Count", class: "num" },
        "Answer",
        "Outcome",
      ]}
    >
      {props.history.map((a) => (
        <tr>
          <td>{formatTime(a.at, false)}</td>
          <td class="num">{a.attempt}</td>
          <td class="num">{a.count}</td>
          <td class={a.status === undefined ? "error-text" : undefined}>
            {a.status === undefined ? a.error ?? "—" : `HTTP ${a.status}`}
          </td>
          <td>{a.outcome}</td>
        </tr>
      ))}
    </ListTable>
  );
}

/** A rule: its query, when it fires, its webhook, its deliveries. */
function RuleCard(
  props: {
    ctx: PageContext;
    rule: AlertRule;
    history: DeliveryAttempt[];
    /** Where its remove form posts. */
    remove: string;
  },
) {
  const { ctx, rule, history } = props;
  return (
    <section class="card" id={`rule-${rule.id}`}>
      <h2>
        {rule.on === undefined
          ? <code>{rule.query}</code>
          : <>Error groups: {rule.on}</>}
      </h2>
      <dl class="pairs">
        <dt>Rule id</dt>
        <dd>
          <code>{rule.id}</code>
        </dd>
        <dt>Fires on</dt>
        <dd>{scope(rule)}</dd>
        <dt>At most every</dt>
        <dd>{formatAlertDuration(rule.everyMs)}</dd>
        <dt>Webhook</dt>
        <dd>
          <code>{rule.webhook}</code>
        </dd>
      </dl>
      <details>
        <summary>Deliveries ({history.length})</summary>
        <History history={history} />
      </details>
      <PostForm ctx={ctx} action={props.remove} class="inline">
        <input type="hidden" name="rule" value={rule.id} />
        <button type="submit" class="small">Remove rule</button>
      </PostForm>
    </section>
  );
}

/** The webhook field of the forms that add a rule. */
function WebhookField(props: { value: string }) {
  return (
    <label>
      Webhook URL
      <input
        name="webhook"
        type="url"
        required
        placeholder="https://hooks.slack.com/services/…"
        value={props.value}
      />
    </label>
  );
}

/** The form that adds a rule, filled again with what was refused. */
function AddRuleCard(
  props: { ctx: PageContext; form: AlertForm; add: string },
) {
  const { ctx, form } = props;
  return (
    <Card id="add" titleId="add-title" title="Add a rule">
      <PostForm ctx={ctx} action={props.add} id="add-form" class="stack">
        <label>
          Query
          <input
            name="query"
            required
            placeholder='level:critical or "payment declined"'
            value={form.query}
          />
        </label>
        <WebhookField value={form.on ? "" : form.webhook} />
        <div class="row">
          <label>
            Only above N matches (optional)
            <input
              name="threshold"
              type="number"
              min={0}
              class="short"
              value={form.threshold}
            />
          </label>
          <label>
            within
            <input
              name="window"
              class="short"
              placeholder="5m"
              value={form.window}
            />
          </label>
          <label>
            At most one message every
            <input
              name="every"
              class="short"
              placeholder="1m"
              value={form.every}
            />
          </label>
        </div>
        <button type="submit">Add rule</button>
      </PostForm>
    </Card>
  );
}

/** The form that adds a rule on error groups. */
function AddGroupRuleCard(
  props: { ctx: PageContext; form: AlertForm; add: string },
) {
  const { ctx, form } = props;
  return (
    <Card
      id="add-group"
      titleId="add-group-title"
      title="Add a rule on error groups"
    >
      <p class="hint">
        One message per error group that is new (its first entry), regressed
        (resolved, then seen in a later release) or escalating (more entries
        this hour than N times its hourly average over the week before; N is 10
        by default), with the entry's title, top frame, release and a link to
        the group's page.
      </p>
      <PostForm ctx={ctx} action={props.add} id="add-group-form" class="stack">
        <div class="row">
          <label>
            On
            <select name="on">
              {["new", "regressed", "escalating"].map((on) => (
                <option value={on} selected={form.on === on}>{on}</option>
              ))}
            </select>
          </label>
          <label>
            N (escalating)
            <input
              name="factor"
              type="number"
              min={2}
              max={1000}
              class="short"
              placeholder="10"
              value={form.factor ?? ""}
            />
          </label>
        </div>
        <WebhookField value={form.on ? form.webhook : ""} />
        <button type="submit">Add rule</button>
      </PostForm>
    </Card>
  );
}

/** The alerts page. */
export function AlertsPage(props: { ctx: PageContext; data: AlertsData }) {
  const { ctx, data } = props;
  const { project } = data;
  const form = data.form ??
    { query: "", webhook: "", threshold: "", window: "", every: "" };
  const action = (path: string) =>
    link(ctx.base, `/projects/${project.id}/alerts/${path}`);
  return (
    <ProjectLayout ctx={ctx} project={project} tab="alerts">
      <h1>Alerts</h1>
      <FlashNotice notice={data.notice} />
      {data.created && (
        <div class="created" id="created-rule">
          <p>
            Rule <code>{data.created.ruleId}</code>{" "}
            added. Its signing secret, shown this once:{" "}
            <CopyableCode id="rule-secret" value={data.created.secret} secret />
          </p>
          <p class="hint">
            Each delivery carries X-Logs-Signature: t=&lt;ms&gt;,v1=&lt;hex&gt;,
            the HMAC-SHA256 of "&lt;t&gt;.&lt;body&gt;" with this secret.
          </p>
        </div>
      )}
      <p>
        When new entries match a rule's query, a JSON message is POSTed to its
        webhook (Slack-compatible: it has a <code>text</code>{" "}
        field), at most once per the rule's pace; what matches meanwhile is
        counted in the next message. Failed deliveries are retried after 1 s, 5
        s, 30 s, 2 min and 10 min.
      </p>
      {data.rules.length === 0
        ? <p class="empty" id="no-rules">No alert rules yet.</p>
        : (
          <div class="rules" id="rules">
            {data.rules.map(({ rule, history }) => (
              <RuleCard
                ctx={ctx}
                rule={rule}
                history={history}
                remove={action("remove")}
              />
            ))}
          </div>
        )}
      <AddRuleCard ctx={ctx} form={form} add={action("add")} />
      <AddGroupRuleCard ctx={ctx} form={form} add={action("add")} />
    </ProjectLayout>
  );
}

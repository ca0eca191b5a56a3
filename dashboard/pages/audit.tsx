/**
 * The audit log of a project (`/projects/:id/audit`): who changed what and
 * when, newest first. The table is shared with the users page, which shows
 * the service's own events (accounts).
 *
 * @module
 */
import type { AuditEvent } from "../../db/audit.ts";
import { formatTime } from "./format.ts";
import { ListTable, type PageContext, ProjectLayout } from "./layout.tsx";

/** The events as a table, or a line saying there are none. */
export function AuditTable(props: { events: AuditEvent[] }) {
  if (props.events.length === 0) {
    return <p class="empty" id="no-audit">Nothing recorded yet.</p>;
  }
  return (
    <ListTable
      class="audit"
      id="audit"
      columns={["When (UTC)", "Who", "What", "Detail"]}
    >
      {props.events.map((event) => (
        <tr>
          <td>{formatTime(event.at, false)}</td>
          <td>{event.actor}</td>
          <td>
            <code>{event.action}</code>
            {event.repeated !== undefined && (
              <span
                class="repeated"
                title={`${event.repeated} events from ${
                  formatTime(event.since ?? event.at, false)
                }, folded: past the account's daily budget`}
              >
                {` ×${event.repeated}`}
              </span>
            )}
          </td>
          <td>{event.detail ?? ""}</td>
        </tr>
      ))}
    </ListTable>
  );
}

/** Data of the audit page. */
export interface AuditData {
  project: { id: string; name: string };
  events: AuditEvent[];
  /** Link to the page of earlier events, `null` on the last. @default null */
  older?: string | null;
}

/** A project's audit page. */
export function AuditPage(props: { ctx: PageContext; data: AuditData }) {
  const { ctx, data } = props;
  return (
    <ProjectLayout ctx={ctx} project={data.project} tab="audit">
      <h1>Audit log</h1>
      <p class="hint">
        Changes to this project's settings, secret, read tokens, alerts and
        accounts, newest first. Events are kept 180 days; an account's events
        past 200 a day are folded into one line per action (×N).
      </p>
      <AuditTable events={data.events} />
      {data.older && (
        <p class="pager">
          <a id="older-events" href={data.older}>Earlier events</a>
        </p>
      )}
    </ProjectLayout>
  );
}

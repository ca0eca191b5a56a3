/**
 * The usage page (`/usage`): per project the account may read, and per UTC
 * day, entries accepted, stored, dropped by reason, bytes stored and the
 * share of the per-day quota used (docs/privacy.md#usage), today first.
 *
 * @module
 */
import type { UsageDay } from "../../db/usage.ts";
import { ListTable, type PageContext, SectionLayout } from "./layout.tsx";

/** One project's usage. */
export interface UsageProject {
  id: string;
  name: string;
  quota?: { perDay?: number; perMinute?: number };
  spike?: { multiple: number; keep: number };
  /** Days with counts, newest first. */
  days: UsageDay[];
}

/** Data of the usage page. */
export interface UsageData {
  projects: UsageProject[];
  /** Days shown. */
  days: number;
}

function quotaUsed(day: UsageDay, perDay: number | undefined): string {
  if (perDay === undefined) return "-";
  return `${Math.round(Math.min(day.stored, perDay) / perDay * 100)}%`;
}

function bounds(project: UsageProject): string {
  const parts: string[] = [];
  if (project.quota?.perDay !== undefined) {
    parts.push(`${project.quota.perDay} a day`);
  }
  if (project.quota?.perMinute !== undefined) {
    parts.push(`${project.quota.perMinute} a minute`);
  }
  const quota = parts.length > 0 ? `quota ${parts.join(", ")}` : "no quota";
  const spike = project.spike
    ? `1 in ${project.spike.keep} kept past ${project.spike.multiple}× the hourly average`
    : "no spike protection";
  return `${quota}; ${spike}`;
}

/** The usage page. */
export function UsagePage(props: { ctx: PageContext; data: UsageData }) {
  const { ctx, data } = props;
  return (
    <SectionLayout ctx={ctx} section="usage">
      <p class="hint">
        The last {data.days}{" "}
        UTC days. Accepted entries passed authentication; each was stored,
        dropped over the quota, or sampled in a spike. Rejected entries failed
        authentication. Bytes are the characters of the stored entries' JSON.
      </p>
      {data.projects.length === 0 && (
        <p class="empty" id="no-usage">No project to show.</p>
      )}
      {data.projects.map((project) => (
        <section aria-labelledby={`usage-${project.id}`}>
          <h2 id={`usage-${project.id}`}>{project.name}</h2>
          <p class="hint">{bounds(project)}</p>
          {project.days.length === 0
            ? <p class="empty">Nothing counted in these days.</p>
            : (
              <ListTable
                class="usage"
                id={`usage-table-${project.id}`}
                columns={[
                  "Day",
                  "Accepted",
                  "Stored",
                  "Over quota",
                  "Sampled",
                  "Rejected",
                  "Bytes",
                  "Quota used",
                ]}
              >
                {project.days.map((day) => (
                  <tr>
                    <td>{day.day}</td>
                    <td>{day.accepted}</td>
                    <td>{day.stored}</td>
                    <td>{day.over_quota}</td>
                    <td>{day.sampled}</td>
                    <td>{day.rejected}</td>
                    <td>{day.bytes}</td>
                    <td>{quotaUsed(day, project.quota?.perDay)}</td>
                  </tr>
                ))}
              </ListTable>
            )}
        </section>
      ))}
    </SectionLayout>
  );
}

/**
 * A project's releases (`/projects/:id/releases`): the latest first, each
 * with its first and last seen, entries, errors and the error groups first
 * seen in it (db/releases.ts).
 *
 * @module
 */
import type { Release } from "../../db/releases.ts";
import {
  ListTable,
  type PageContext,
  ProjectLayout,
  SeenCells,
} from "./layout.tsx";

/** Data of the releases page. */
export interface ReleasesData {
  project: { id: string; name: string };
  releases: Release[];
  now: number;
}

/** The releases page. */
export function ReleasesPage(props: { ctx: PageContext; data: ReleasesData }) {
  const { ctx, data } = props;
  return (
    <ProjectLayout ctx={ctx} project={data.project} tab="releases">
      <h1>Releases</h1>
      <p class="hint">
        The context.release of the project's entries (the client library's
        release option): versions such as 1.4.0 in version order, other names by
        when they were first seen; the latest first. Times in UTC.
      </p>
      {data.releases.length === 0
        ? <p class="empty" id="no-releases">No releases yet.</p>
        : (
          <ListTable
            class="releases"
            id="releases"
            columns={[
              "Release",
              "First seen",
              "Last seen",
              { label: "Entries", class: "num" },
              { label: "Errors", class: "num" },
              {
                label: "New groups",
                class: "num",
                title: "Error groups whose first entry was of this release",
              },
            ]}
          >
            {data.releases.map((r) => (
              <tr data-release={r.name}>
                <td>
                  <code>{r.name}</code>
                </td>
                <SeenCells seen={r} now={data.now} />
                <td class="num">{r.entries.toLocaleString("en-US")}</td>
                <td class="num">{r.errors.toLocaleString("en-US")}</td>
                <td class="num">{r.newGroups.toLocaleString("en-US")}</td>
              </tr>
            ))}
          </ListTable>
        )}
    </ProjectLayout>
  );
}

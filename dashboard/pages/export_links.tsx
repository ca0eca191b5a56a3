/**
 * The explorer's download links: the current query (text, level chips and
 * time window) as a read API request (dashboard/routes/api.ts), in NDJSON
 * or CSV, up to 1,000 entries, newest first; the answer's `Link` header
 * names the next page for a script.
 *
 * @module
 */
import { link } from "./format.ts";
import type { PageContext } from "./layout.tsx";

/** The read API address of a view. */
export function exportHref(
  base: string,
  projectId: string,
  view: {
    q: string;
    levels: string[];
    since: number;
    /** Exclusive, as the explorer's window; `null` while live. */
    until: number | null;
  },
  format: "ndjson" | "csv",
): string {
  const params = new URLSearchParams();
  if (view.q !== "") params.set("q", view.q);
  if (view.levels.length > 0) params.set("level", view.levels.join(","));
  params.set("since", new Date(view.since).toISOString());
  // The API's until is inclusive.
  if (view.until !== null) {
    params.set("until", new Date(view.until - 1).toISOString());
  }
  params.set("limit", "1000");
  params.set("format", format);
  return link(base, `/api/v1/projects/${projectId}/logs?${params}`);
}

/** Download links of the current view. */
export function ExportLinks(props: {
  ctx: PageContext;
  projectId: string;
  state: { q: string; levels: string[] };
  window: { since: number; until: number; live: boolean };
}) {
  const { ctx, projectId, state, window } = props;
  const view = {
    q: state.q,
    levels: state.levels,
    since: window.since,
    until: window.live ? null : window.until,
  };
  return (
    <div class="export" id="export">
      <span class="hint">Download:</span>{" "}
      <a
        href={exportHref(ctx.base, projectId, view, "ndjson")}
        id="export-ndjson"
        download
      >
        NDJSON
      </a>{" "}
      <a
        href={exportHref(ctx.base, projectId, view, "csv")}
        id="export-csv"
        download
      >
        CSV
      </a>
    </div>
  );
}

/**
 * One entry of the explorer on a page of its own, in full: where "Show the
 * full entry" of a cut preview leads when the script does not fetch it in
 * place.
 *
 * @module
 */
import type { LogRecord, ResolvedStack } from "../../domain/entry.ts";
import type { ExplorerState } from "../explorer_state.ts";
import { EntryRow } from "./entry.tsx";
import { entryLinks, explorerHref } from "./explorer_list.tsx";
import { type PageContext, ProjectLayout } from "./layout.tsx";

/** The full entry page. */
export function ExplorerEntryPage(
  props: {
    ctx: PageContext;
    project: { id: string; name: string };
    state: ExplorerState;
    record: LogRecord;
    /** Its stack resolved through source maps. @default none */
    resolved?: ResolvedStack | null;
  },
) {
  const { ctx, project, state, record } = props;
  const back: ExplorerState = { ...state, open: record.id };
  return (
    <ProjectLayout
      ctx={ctx}
      project={project}
      tab="explorer"
      title={`Entry ${record.id}`}
      styles={["explorer.css"]}
    >
      <p class="context-head">
        <a href={explorerHref(ctx.base, project.id, back)}>Back to the list</a>
      </p>
      <div class="entries">
        <EntryRow
          record={record}
          links={entryLinks(ctx.base, project.id, state)}
          open
          full
          resolved={props.resolved ?? null}
        />
      </div>
    </ProjectLayout>
  );
}

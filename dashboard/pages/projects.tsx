/**
 * The projects page (`/`): every project with its entries and rejections of
 * the last 24 hours, its all-time counters and the time of its last entry,
 * the form that creates one, and — right after creating — the new project's
 * id and secret, shown this once.
 *
 * @module
 */
import type { SavedView } from "../../db/views.ts";
import { link } from "./format.ts";
import { SavedViewList } from "./views.tsx";
import {
  Card,
  CopyableCode,
  CreateFormCard,
  ListTable,
  Notice,
  type PageContext,
  SectionLayout,
  TimeAgo,
} from "./layout.tsx";

const ALLOW_PLACEHOLDER = "https://shop.example.com\ncom.example.shop.ios";

/** Rejections of the last 24 hours, as far as the recent ones tell. */
export interface RecentCount {
  count: number;
  /**
   * Every kept recent rejection is that recent, and as many are kept as
   * ever are: there may have been more (`≥ count`).
   */
  atLeast: boolean;
}

/** One row of the projects table. */
export interface ProjectRow {
  id: string;
  name: string;
  /** Entries received in the last 24 hours and stored (exact). */
  entriesDay: number;
  /** Rejections of the last 24 hours, among the recent ones kept. */
  rejectedDay: RecentCount;
  /** Entries stored since the project was created (counter). */
  accepted: number;
  /** Entries refused since the project was created (counters). */
  rejected: number;
  /** Receipt time of the newest stored entry, or `null`. */
  lastEntryAt: number | null;
}

/** Data of the projects page. */
export interface ProjectsData {
  projects: ProjectRow[];
  now: number;
  /** Entries naming no existing project, all time. */
  unknownProject: number;
  /** A project just created: its secret is shown once. */
  created?: { id: string; name: string; secret: string };
  /** Outcome of the last action. */
  notice?: { kind: "ok" | "error"; text: string };
  /** Values of the create form to show again after a refusal. */
  form?: { name: string; allow: string };
  /** Saved views, by project id. */
  views?: Record<string, SavedView[]>;
}

function Created(
  props: { ctx: PageContext; created: NonNullable<ProjectsData["created"]> },
) {
  const { ctx, created } = props;
  return (
    <Card
      class="created"
      titleId="created-title"
      title={<>Project “{created.name}” created</>}
    >
      <dl class="pairs">
        <dt>Project id</dt>
        <dd>
          <CopyableCode id="created-id" value={created.id} />
        </dd>
        <dt>Secret</dt>
        <dd>
          <CopyableCode id="created-secret" value={created.secret} secret />
        </dd>
      </dl>
      <Notice kind="info">
        Copy the secret now: it is shown only this once. Servers sign entries
        with it; it never belongs in a browser or an app. You can rotate it in
        the settings.
      </Notice>
      <p>
        Next:{" "}
        <a href={link(ctx.base, `/projects/${created.id}/settings`)}>
          allow your origins and app ids, and send your first entry
        </a>.
      </p>
    </Card>
  );
}

/** Rejections of the last 24 hours, linked to the rejections page. */
function RejectedDay(props: { ctx: PageContext; row: ProjectRow }) {
  const { ctx, row } = props;
  const { count, atLeast } = row.rejectedDay;
  if (count === 0) return <>0</>;
  const text = `${atLeast ? "≥ " : ""}${count.toLocaleString("en-US")}`;
  return (
    <a
      href={link(ctx.base, `/projects/${row.id}/rejections`)}
      class="warn"
      title={atLeast
        ? "All of the last 100 rejections kept are from the last 24 hours: there may have been more"
        : undefined}
    >
      {text}
    </a>
  );
}

/** A project's row: its name and saved views, its counts, its last entry. */
function ProjectTableRow(
  props: {
    ctx: PageContext;
    row: ProjectRow;
    views: SavedView[];
    now: number;
  },
) {
  const { ctx, row: p, views, now } = props;
  return (
    <tr>
      <td>
        <a
          href={link(ctx.base, `/projects/${p.id}`)}
          class="strong"
        >
          {p.name}
        </a>
        <SavedViewList
          ctx={ctx}
          projectId={p.id}
          views={views}
          removable={ctx.posts(`/projects/${p.id}/views/delete`)}
          back="projects"
        />
      </td>
      <td>
        <code>{p.id}</code>
      </td>
      <td class="num">{p.entriesDay.toLocaleString("en-US")}</td>
      <td class="num">
        <RejectedDay ctx={ctx} row={p} />
      </td>
      <td>
        {p.lastEntryAt === null
          ? "never"
          : <TimeAgo at={p.lastEntryAt} now={now} />}
      </td>
      <td class="num">
        {p.accepted.toLocaleString("en-US")} /{" "}
        {p.rejected.toLocaleString("en-US")}
      </td>
      <td class="links">
        {ctx.opens(`/projects/${p.id}/settings`) && (
          <a href={link(ctx.base, `/projects/${p.id}/settings`)}>
            Settings
          </a>
        )}
      </td>
    </tr>
  );
}

/** The form that creates a project, filled again with what was refused. */
function CreateProjectCard(
  props: { ctx: PageContext; form: ProjectsData["form"] },
) {
  const { ctx, form } = props;
  return (
    <CreateFormCard
      ctx={ctx}
      titleId="create-title"
      title="Create a project"
      to="/projects"
      id="create-form"
      button="Create project"
    >
      <label>
        Name
        <input
          name="name"
          required
          maxlength={200}
          value={form?.name ?? ""}
        />
      </label>
      <label>
        Allowed origins and app ids{" "}
        <span class="hint">(optional, one per line)</span>
        <textarea name="allow" rows={2} placeholder={ALLOW_PLACEHOLDER}>
          {form?.allow ?? ""}
        </textarea>
      </label>
    </CreateFormCard>
  );
}

/** The projects page. */
export function ProjectsPage(props: { ctx: PageContext; data: ProjectsData }) {
  const { ctx, data } = props;
  return (
    <SectionLayout ctx={ctx} section="projects" notice={data.notice}>
      {data.created && <Created ctx={ctx} created={data.created} />}
      {data.projects.length === 0
        ? (
          <p class="empty">
            {ctx.account?.role === "member" || ctx.account?.role === "viewer"
              ? "No project is given to your account yet: ask an administrator."
              : "No projects yet. Create the first one below."}
          </p>
        )
        : (
          <ListTable
            class="projects"
            columns={[
              "Name",
              "Project id",
              { label: "Entries, 24 h", class: "num" },
              {
                label: "Rejected, 24 h",
                class: "num",
                title: "Counted from the last 100 rejections kept per project",
              },
              "Last entry",
              {
                label: "All time: stored / rejected",
                class: "num",
                title: "Counted since the project was created",
              },
              {
                label: <span class="sr">Links</span>,
              },
            ]}
          >
            {data.projects.map((p) => (
              <ProjectTableRow
                ctx={ctx}
                row={p}
                views={data.views?.[p.id] ?? []}
                now={data.now}
              />
            ))}
          </ListTable>
        )}
      {data.projects.length > 0 && (
        <p class="hint">
          Rejections of the last 24 h are counted from the last 100 the service
          keeps per project: “≥ 100” means all of those are that recent.
        </p>
      )}
      {data.unknownProject > 0 && (
        <p class="hint">
          {data.unknownProject.toLocaleString("en-US")}{" "}
          entries named a project id that does not exist (all time); they are
          counted apart and never stored.
        </p>
      )}
      {ctx.posts("/projects") && (
        <CreateProjectCard ctx={ctx} form={data.form} />
      )}
    </SectionLayout>
  );
}

/**
 * The frame of every page: head with the app's stylesheets and scripts (each
 * script tag carries the answer's nonce), the top bar with navigation and
 * sign-out, a project's tabs, and small shared pieces (copy button, notice).
 *
 * @module
 */
import type { Child } from "hono/jsx";
import { PAGES, pathOf, type ProjectTab } from "../page_table.ts";
import { formatAgo, formatTime, link } from "./format.ts";

/** What every page needs from its request. */
export interface PageContext {
  /** Base path: `""` standalone, `/dashboard` when mounted. */
  base: string;
  /** Nonce of this answer's scripts. */
  nonce: string;
  /** CSRF token for forms; `null` when signed out. */
  csrf: string | null;
  /** Cache-busting URLs of the assets, by file name. */
  assets: Record<string, string>;
  /** Who is signed in; absent when signed out. */
  account?: { email: string; role: "admin" | "member" | "viewer" };
  /**
   * Whether the account may open the page at a path below the base (with
   * or without query): a link to a page it may not open is not shown.
   */
  opens(path: string): boolean;
  /** Whether the account may send a form to a path below the base. */
  posts(path: string): boolean;
}

/** The project tabs, when a page belongs to a project. */
export interface ProjectTabs {
  id: string;
  name: string;
  current: ProjectTab;
}

/** The top navigation and the project tabs, from the page table. */
const MAIN_NAV = PAGES.filter((page) => page.nav !== undefined);
const PROJECT_TABS = PAGES.filter((page) => page.tab !== undefined);

/** The section each page of the top navigation is. */
const SECTIONS: Record<string, LayoutProps["section"]> = {
  "/": "projects",
  "/dead-letters": "dead-letters",
  "/users": "users",
  "/usage": "usage",
};

/** A link of the navigation, marked when it leads to the current page. */
function NavLink(
  props: { href: string; current: boolean; children: string },
) {
  return (
    <a href={props.href} aria-current={props.current ? "page" : undefined}>
      {props.children}
    </a>
  );
}

/** Props of {@linkcode Layout}. */
export interface LayoutProps {
  ctx: PageContext;
  title: string;
  /** Script files to load after the common one. */
  scripts?: string[];
  /** Stylesheets to load after the common one. */
  styles?: string[];
  /** Which top-level section is current. */
  section?: "projects" | "dead-letters" | "users" | "usage";
  project?: ProjectTabs;
  /** Extra class on `<body>`. */
  bodyClass?: string;
  children?: Child;
}

/** Props of {@linkcode ProjectLayout}. */
export interface ProjectLayoutProps
  extends Omit<LayoutProps, "title" | "section" | "project"> {
  project: { id: string; name: string };
  /** The project tab the page belongs to. */
  tab: ProjectTabs["current"];
  /** What the title says after the project's name. @default the tab's name */
  title?: string;
}

/** The layout of a page of a project: its name in the title, its tabs. */
export function ProjectLayout(props: ProjectLayoutProps) {
  const { project, tab, title, ...rest } = props;
  const label = PROJECT_TABS.find((t) => t.tab!.name === tab)!.tab!.label;
  return (
    <Layout
      {...rest}
      title={`${project.name} · ${title ?? label}`}
      section="projects"
      project={{ id: project.id, name: project.name, current: tab }}
    />
  );
}

/** Props of {@linkcode SectionLayout}. */
export interface SectionLayoutProps
  extends Omit<LayoutProps, "title" | "section" | "project"> {
  section: NonNullable<LayoutProps["section"]>;
  /** What the last form's answer left to show. */
  notice?: { kind: "ok" | "error"; text: string } | undefined;
}

/**
 * The layout of a top-level section's page (projects, dead letters, users):
 * its label in the navigation as title and heading, then the notice the
 * last change left.
 */
export function SectionLayout(props: SectionLayoutProps) {
  const { notice, children, ...rest } = props;
  const title = MAIN_NAV.find((page) => SECTIONS[page.path] === rest.section)!
    .nav!;
  return (
    <Layout {...rest} title={title}>
      <h1>{title}</h1>
      <FlashNotice notice={notice} />
      {children}
    </Layout>
  );
}

/** The hidden CSRF input of a form. */
export function Csrf(props: { ctx: PageContext }) {
  return props.ctx.csrf === null
    ? null
    : <input type="hidden" name="_csrf" value={props.ctx.csrf} />;
}

/**
 * A form that POSTs, with the CSRF token, to `action`, or to `to`: a path below
 * the dashboard's base.
 */
export function PostForm(
  props: {
    ctx: PageContext;
    action?: string;
    to?: string;
    class?: string;
    id?: string;
    children?: Child;
  },
) {
  const { ctx, action, to, children, ...attributes } = props;
  return (
    <form
      method="post"
      action={to === undefined ? action : link(ctx.base, to)}
      {...attributes}
    >
      <Csrf ctx={ctx} />
      {children}
    </form>
  );
}

/** A card of a page, headed by its title (which names the section). */
export function Card(
  props: {
    /** The title's id, which labels the section. */
    titleId: string;
    title: Child;
    id?: string;
    /** Classes besides `card`. */
    class?: string;
    children?: Child;
  },
) {
  const attributes = {
    class: props.class ? `card ${props.class}` : "card",
    ...(props.id === undefined ? {} : { id: props.id }),
    "aria-labelledby": props.titleId,
  };
  return (
    <section {...attributes}>
      <h2 id={props.titleId}>{props.title}</h2>
      {props.children}
    </section>
  );
}

/**
 * A card holding the form that creates one thing (a project, an account):
 * its fields in a column, then the primary button.
 */
export function CreateFormCard(
  props: {
    ctx: PageContext;
    /** The title's id, which labels the section. */
    titleId: string;
    title: Child;
    /** The path under the dashboard the form posts to. */
    to: string;
    /** The form's id. */
    id: string;
    /** The button's text. */
    button: string;
    children: Child;
  },
) {
  const { ctx } = props;
  return (
    <Card titleId={props.titleId} title={props.title}>
      <PostForm ctx={ctx} to={props.to} class="stack" id={props.id}>
        {props.children}
        <button type="submit" class="primary">{props.button}</button>
      </PostForm>
    </Card>
  );
}

/** A column of a {@linkcode ListTable}: its heading, or that and more. */
export type Column = string | {
  label: Child;
  /** `num` for a column of numbers. */
  class?: string;
  /** What the heading means, on hover. */
  title?: string;
};

/** The heading of a column. */
function Heading(props: { column: Column }) {
  const { label, ...rest } = typeof props.column === "string"
    ? { label: props.column }
    : props.column;
  return <th {...{ scope: "col", ...rest }}>{label}</th>;
}

/**
 * A table of records under column headings, scrolling sideways on a
 * narrow screen; `children` are its rows.
 */
export function ListTable(
  props: { class: string; id?: string; columns: Column[]; children?: Child },
) {
  const table = {
    class: `list ${props.class}`,
    ...(props.id === undefined ? {} : { id: props.id }),
  };
  return (
    <div class="scroll">
      <table {...table}>
        <thead>
          <tr>
            {props.columns.map((column, i) => (
              <Heading key={i} column={column} />
            ))}
          </tr>
        </thead>
        <tbody>{props.children}</tbody>
      </table>
    </div>
  );
}

/** A past time as "5 min ago", with its exact time in UTC on hover. */
export function TimeAgo(props: { at: number; now: number }) {
  return (
    <time
      datetime={new Date(props.at).toISOString()}
      title={`${formatTime(props.at)} UTC`}
    >
      {formatAgo(props.at, props.now)}
    </time>
  );
}

/** Two table cells: when `seen` was first and last seen, as {@link TimeAgo}. */
export function SeenCells(
  props: { seen: { firstSeen: number; lastSeen: number }; now: number },
) {
  return (
    <>
      <td>
        <TimeAgo at={props.seen.firstSeen} now={props.now} />
      </td>
      <td>
        <TimeAgo at={props.seen.lastSeen} now={props.now} />
      </td>
    </>
  );
}

/** A button that copies the text of element `target` (an id). */
export function CopyButton(props: { target: string; label?: string }) {
  return (
    <button type="button" class="copy" data-copy={props.target}>
      {props.label ?? "Copy"}
    </button>
  );
}

/** A value in `<code>` with a button that copies it. */
export function CopyableCode(
  props: { id: string; value: string; secret?: boolean },
) {
  return (
    <>
      <code id={props.id} {...(props.secret ? { class: "secret" } : {})}>
        {props.value}
      </code>{" "}
      <CopyButton target={props.id} />
    </>
  );
}

/** The notice a form's answer left for the page, if any. */
export function FlashNotice(
  props: { notice?: { kind: "ok" | "error"; text: string } },
) {
  return props.notice
    ? <Notice kind={props.notice.kind}>{props.notice.text}</Notice>
    : null;
}

/** A message box: `ok`, `error` or `info`. */
export function Notice(
  props: { kind: "ok" | "error" | "info"; children?: Child },
) {
  return (
    <p
      class={`notice ${props.kind}`}
      role={props.kind === "error" ? "alert" : "status"}
    >
      {props.children}
    </p>
  );
}

/** The page frame. */
export function Layout(props: LayoutProps) {
  const { ctx, project } = props;
  const scripts = ["app.js", ...(props.scripts ?? [])];
  return (
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <meta name="color-scheme" content="light dark" />
        <link rel="icon" href="data:," />
        <title>{props.title} · Logs</title>
        {["app.css", "forms.css", ...(props.styles ?? [])].map((name) => (
          <link rel="stylesheet" href={ctx.assets[name]} />
        ))}
        {scripts.map((name) => (
          <script type="module" src={ctx.assets[name]} nonce={ctx.nonce}>
          </script>
        ))}
      </head>
      <body class={props.bodyClass}>
        <header class="top">
          <a class="brand" href={link(ctx.base, "/")}>Logs</a>
          {ctx.csrf !== null && (
            <nav class="main">
              {MAIN_NAV.filter((page) => ctx.opens(page.path)).map((
                page,
              ) => (
                <NavLink
                  href={link(ctx.base, page.path)}
                  current={props.section === SECTIONS[page.path]}
                >
                  {page.nav!}
                </NavLink>
              ))}
              {ctx.account && (
                <span class="account" id="account">
                  {ctx.account.email} ({ctx.account.role})
                </span>
              )}
              <PostForm ctx={ctx} to="/logout" class="inline">
                <button type="submit" class="link" id="logout">Sign out</button>
              </PostForm>
            </nav>
          )}
        </header>
        {project && (
          <nav class="tabs" aria-label="Project">
            <span class="project-name" title={project.id}>{project.name}</span>
            {PROJECT_TABS.map((t) => ({
              ...t.tab!,
              path: pathOf(t.path, project.id),
            })).filter((t) => ctx.opens(t.path)).map((t) => (
              <NavLink
                href={link(ctx.base, t.path)}
                current={project.current === t.name}
              >
                {t.label}
              </NavLink>
            ))}
          </nav>
        )}
        <main>{props.children}</main>
      </body>
    </html>
  );
}

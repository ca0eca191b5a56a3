/**
 * The page table (dashboard/page_table.ts) against what the app answers:
 * every link a viewer, a member and an administrator are shown leads to a
 * page that answers them `200` (a walk from the project list over seeded
 * data) and every form they are shown posts where their role may, a route
 * the table does not name answers `404` to everyone, and every route the
 * app registers has its row.
 *
 * @module
 */
import assert from "node:assert/strict";
import { saveView } from "../../db/views.ts";
import type { Account } from "../../db/users.ts";
import { findPage, mayPost, PAGES } from "../../dashboard/page_table.ts";
import { addAccount, signInAs } from "../_helpers/dashboard_accounts.ts";
import {
  type Browser,
  dashboardTest,
  type DashHarness,
  signIn,
  store,
} from "../_helpers/dashboard.ts";

/** Pages fetched at most by one walk. */
const MAX_PAGES = 400;
/** Links followed at most per row of the page table (query variants). */
const PER_ROW = 6;

/** The actions of the forms of a page that post, relative to `base`. */
function formActionsOf(html: string, base: string): string[] {
  return [...html.matchAll(/<form\b[^>]*>/g)]
    .filter((m) => /\bmethod="post"/.test(m[0]))
    .map((m) => /\baction="([^"]*)"/.exec(m[0])?.[1] ?? "")
    .map((action) => action.replaceAll("&amp;", "&").slice(base.length));
}

/** The `<a href>` of a page that stay within the dashboard under `base`. */
function linksOf(html: string, base: string): string[] {
  return [...html.matchAll(/<a\b[^>]*\bhref="([^"]*)"/g)]
    .map((m) => m[1]!.replaceAll("&amp;", "&").replace(/#.*$/s, ""))
    .filter((href) => href.startsWith(`${base}/`) && !href.startsWith("//"));
}

/**
 * Follows every link from the project list as `browser`, at most
 * {@linkcode PER_ROW} per row of the page table; returns each link that did
 * not answer `200`, with the page it was found on.
 */
async function walk(
  h: DashHarness,
  browser: Browser,
): Promise<{ failures: string[]; visited: number; forms: Set<string> }> {
  const seen = new Set<string>([`${h.base}/`]);
  const perRow = new Map<string, number>();
  const queue: { href: string; from: string }[] = [
    { href: `${h.base}/`, from: "(start)" },
  ];
  const failures: string[] = [];
  const forms = new Set<string>();
  let visited = 0;
  while (queue.length > 0 && visited < MAX_PAGES) {
    const { href, from } = queue.shift()!;
    visited++;
    const res = await browser.get(href);
    const html = await res.text();
    if (res.status !== 200) {
      failures.push(`${href} (linked from ${from}): ${res.status}`);
      continue;
    }
    if (!(res.headers.get("content-type") ?? "").startsWith("text/html")) {
      continue;
    }
    for (const action of formActionsOf(html, h.base)) forms.add(action);
    for (const next of linksOf(html, h.base)) {
      if (seen.has(next)) continue;
      seen.add(next);
      const path = next.slice(h.base.length).replace(/\?.*$/s, "");
      const row = findPage("GET", path)?.page.path ?? `unknown ${path}`;
      const taken = perRow.get(row) ?? 0;
      if (taken >= PER_ROW) continue;
      perRow.set(row, taken + 1);
      queue.push({ href: next, from: href });
    }
  }
  return { failures, visited, forms };
}

/** The accounts of the walk, as the table sees them. */
function accountsOf(projectId: string): Record<string, Account> {
  const projects = [projectId];
  return {
    viewer: {
      email: "viewer@example.com",
      role: "viewer",
      projects,
      stamp: "",
    },
    member: {
      email: "member@example.com",
      role: "member",
      projects,
      stamp: "",
    },
    admin: { email: "admin", role: "admin", projects: [], stamp: "" },
  };
}

/** A project with entries, an error group, a rejected entry, a saved view and an alert rule. */
async function seed(h: DashHarness, admin: Browser): Promise<string> {
  const project = await h.project(["https://app.example.com"]);
  await store(h, project.id, [
    { level: "info", data: { title: "Signed up", user: "ada" } },
    { level: "error", data: { title: "Order 1 failed" } },
    {
      level: "critical",
      data: {
        message: "Cannot read x",
        stack: "TypeError: x\n    at pay (https://shop.example.com/app.js:3:9)",
      },
    },
  ]);
  await h.post({ projectId: project.id, level: "info", data: {} }, {
    Origin: "https://shop.example.net",
  });
  await h.process();
  await saveView(h.kv, project.id, {
    name: "Errors",
    query: "?q=level%3Aerror",
  });
  const rule = await admin.post(`${h.base}/projects/${project.id}/alerts/add`, {
    query: "level:critical",
    webhook: "http://127.0.0.1:9/hook",
    threshold: "",
    window: "",
    every: "",
  });
  assert.equal(rule.status, 303);
  await rule.body?.cancel();
  return project.id;
}

for (const base of ["", "/dashboard"]) {
  dashboardTest(
    `every link a viewer, a member and an admin are shown answers them 200 (base "${base}")`,
    async (h) => {
      const admin = await signIn(h.dash, base);
      const projectId = await seed(h, admin);
      await addAccount(h.kv, "member@example.com", "member", [projectId]);
      await addAccount(h.kv, "viewer@example.com", "viewer", [projectId]);
      const walks: Record<string, Browser> = {
        viewer: await signInAs(h.dash, "viewer@example.com", undefined, base),
        member: await signInAs(h.dash, "member@example.com", undefined, base),
        admin,
      };
      for (const [who, browser] of Object.entries(walks)) {
        const { failures, visited, forms } = await walk(h, browser);
        assert.deepEqual(failures, [], `links shown to the ${who}`);
        // The walk reached the project's pages, not only the list.
        assert.ok(visited >= 8, `${who} followed ${visited} links`);
        // No form it is shown would be refused (sending them would change
        // what the walk reads, so the table is asked).
        const account = accountsOf(projectId)[who]!;
        const refused = [...forms].filter((a) => !mayPost(account, a));
        assert.deepEqual(refused, [], `forms shown to the ${who}`);
        assert.ok(forms.has("/logout"), `${who} can sign out`);
      }
    },
    { dashboard: { base, allowPrivateTargets: true } },
  );
}

dashboardTest(
  "a route the page table does not name answers 404 to every role, the administrator too",
  async (h) => {
    h.dash.get("/forgotten", (c) => c.text("open to all"));
    h.dash.get("/projects/:id/forgotten", (c) => c.text("open to all"));
    const project = await h.project(["https://app.example.com"]);
    await addAccount(h.kv, "viewer@example.com", "viewer", [project.id]);
    for (
      const browser of [
        await signIn(h.dash),
        await signInAs(h.dash, "viewer@example.com"),
      ]
    ) {
      for (const path of ["/forgotten", `/projects/${project.id}/forgotten`]) {
        const res = await browser.get(path);
        assert.equal(res.status, 404, path);
        assert.doesNotMatch(await res.text(), /open to all/);
      }
    }
  },
);

dashboardTest(
  "every route the dashboard registers has a row in the page table, and every row a route",
  (h) => {
    const registered = new Set(
      h.dash.routes.filter((r) => r.method !== "ALL")
        .map((r) => `${r.method} ${r.path}`),
    );
    const rows = new Set(PAGES.map((p) => `${p.method} ${p.path}`));
    assert.deepEqual([...registered].filter((r) => !rows.has(r)), []);
    assert.deepEqual([...rows].filter((r) => !registered.has(r)), []);
    return Promise.resolve();
  },
);

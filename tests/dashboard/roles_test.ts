/**
 * Roles against every dashboard route: a table of route × role × own or
 * other project → the status expected, checked through `app.request` with
 * real sessions of an admin, a member and a viewer of one project. The
 * table must name every route the app registers, so a route added without
 * a row fails here.
 *
 * @module
 */
import assert from "node:assert/strict";
import { createProject } from "../../db/projects.ts";
import { randomEntry } from "../_helpers/harness.ts";
import {
  ACCOUNT_PASSWORD,
  addAccount,
  signInAs,
} from "../_helpers/dashboard_accounts.ts";
import {
  type Browser,
  get,
  post,
  signIn,
  textOf,
  withDashboard,
} from "../_helpers/dashboard.ts";

/** Who may pass, for the table. */
type Rule = "any" | "read" | "configure" | "admin-project" | "admin";

/** One row: a route, what it needs, and its answer to one who may. */
interface Row {
  method: "GET" | "POST";
  /** Hono's path, `:id` for the project. */
  route: string;
  rule: Rule;
  /** Status for a caller who passes the check. */
  ok: number;
  form?: Record<string, string>;
}

const ROWS: Row[] = [
  { method: "GET", route: "/", rule: "any", ok: 200 },
  { method: "GET", route: "/login", rule: "any", ok: 303 },
  {
    method: "POST",
    route: "/projects",
    rule: "admin",
    ok: 400,
    form: { name: "" },
  },
  { method: "GET", route: "/projects/:id", rule: "read", ok: 200 },
  { method: "GET", route: "/projects/:id/entries", rule: "read", ok: 200 },
  { method: "GET", route: "/projects/:id/tail", rule: "read", ok: 200 },
  { method: "GET", route: "/projects/:id/rejections", rule: "read", ok: 200 },
  {
    method: "POST",
    route: "/projects/:id/rejections/replay",
    rule: "configure",
    ok: 303,
    form: { entry: "nope" },
  },
  { method: "GET", route: "/projects/:id/audit", rule: "read", ok: 200 },
  { method: "GET", route: "/projects/:id/alerts", rule: "read", ok: 200 },
  { method: "GET", route: "/projects/:id/errors", rule: "read", ok: 200 },
  {
    method: "GET",
    route: "/projects/:id/entries/:entryId",
    rule: "read",
    ok: 404,
  },
  {
    method: "POST",
    route: "/projects/:id/views",
    rule: "configure",
    ok: 400,
    form: { name: "" },
  },
  {
    method: "POST",
    route: "/projects/:id/views/delete",
    rule: "configure",
    ok: 303,
    form: { view: "nope" },
  },
  {
    method: "POST",
    route: "/projects/:id/alerts/add",
    rule: "configure",
    ok: 400,
    form: { query: "" },
  },
  {
    method: "POST",
    route: "/projects/:id/alerts/remove",
    rule: "configure",
    ok: 404,
    form: { rule: "nope" },
  },
  {
    method: "GET",
    route: "/projects/:id/settings",
    rule: "configure",
    ok: 200,
  },
  {
    method: "POST",
    route: "/projects/:id/settings/allow",
    rule: "configure",
    ok: 400,
    form: { value: "*" },
  },
  {
    method: "POST",
    route: "/projects/:id/settings/disallow",
    rule: "configure",
    ok: 400,
    form: { value: "https://absent.example.com" },
  },
  {
    method: "POST",
    route: "/projects/:id/settings/levels/add",
    rule: "configure",
    ok: 400,
    form: { level: "Not A Level" },
  },
  {
    method: "POST",
    route: "/projects/:id/settings/levels/remove",
    rule: "configure",
    ok: 400,
    form: { level: "absent" },
  },
  {
    method: "POST",
    route: "/projects/:id/settings/retention",
    rule: "configure",
    ok: 400,
    form: { days: "many" },
  },
  {
    method: "POST",
    route: "/projects/:id/settings/rotate",
    rule: "configure",
    ok: 400,
    form: { grace: "forever" },
  },
  {
    method: "POST",
    route: "/projects/:id/settings/delete",
    rule: "admin-project",
    ok: 400,
    form: { confirm: "not the name" },
  },
  {
    method: "POST",
    route: "/projects/:id/settings/tokens",
    rule: "configure",
    ok: 400,
    form: { name: "" },
  },
  {
    method: "POST",
    route: "/projects/:id/settings/tokens/revoke",
    rule: "configure",
    ok: 400,
    form: { token: "nope" },
  },
  { method: "GET", route: "/api/v1/projects/:id/logs", rule: "read", ok: 200 },
  { method: "GET", route: "/dead-letters", rule: "admin", ok: 200 },
  {
    method: "POST",
    route: "/dead-letters/replay",
    rule: "admin",
    ok: 404,
    form: { id: "nope" },
  },
  { method: "GET", route: "/users", rule: "admin", ok: 200 },
  {
    method: "POST",
    route: "/users",
    rule: "admin",
    ok: 400,
    form: { email: "not an email", role: "viewer", password: "x" },
  },
  {
    method: "POST",
    route: "/users/update",
    rule: "admin",
    ok: 404,
    form: { email: "nobody@example.com", role: "viewer" },
  },
  {
    method: "POST",
    route: "/users/remove",
    rule: "admin",
    ok: 404,
    form: { email: "nobody@example.com" },
  },
];

/** Routes every signed-in account reaches without a row of their own. */
const UNLISTED = new Set(["GET /assets/:name", "POST /login", "POST /logout"]);

type Who = "admin" | "member" | "viewer";

/** The status `who` should get for `row` on its own or another project. */
function expected(row: Row, who: Who, own: boolean): number {
  if (who === "admin" || row.rule === "any") return row.ok;
  if (row.rule === "admin") return 403;
  if (!own) return 404;
  if (row.rule === "read") return row.ok;
  if (row.rule === "configure") return who === "member" ? row.ok : 403;
  return 403;
}

Deno.test("every dashboard route answers each role as the table says, on its own project and another", async () => {
  await withDashboard(async (h) => {
    const own = await createProject(h.kv, { name: "own" });
    const other = await createProject(h.kv, { name: "other" });
    await addAccount(h.kv, "member@example.com", "member", [own.id]);
    await addAccount(h.kv, "viewer@example.com", "viewer", [own.id]);
    const browsers: Record<Who, Browser> = {
      admin: await signIn(h.dash),
      member: await signInAs(h.dash, "member@example.com"),
      viewer: await signInAs(h.dash, "viewer@example.com"),
    };

    const registered = new Set(
      h.dash.routes.filter((r) => r.method !== "ALL")
        .map((r) => `${r.method} ${r.path}`),
    );
    const listed = new Set(ROWS.map((r) => `${r.method} ${r.route}`));
    const missing = [...registered].filter((r) =>
      !listed.has(r) && !UNLISTED.has(r)
    );
    assert.deepEqual(missing, [], "every route has a row in the table");

    const failures: string[] = [];
    for (const row of ROWS) {
      for (const who of ["viewer", "member", "admin"] as const) {
        for (const mine of [true, false]) {
          if (!row.route.includes(":id") && !mine) continue;
          const path = row.route.replace(":id", mine ? own.id : other.id);
          const res = row.method === "GET"
            ? await get(h.dash, browsers[who], path)
            : await post(h.dash, browsers[who], path, row.form ?? {});
          await res.body?.cancel();
          const want = expected(row, who, mine);
          if (res.status !== want) {
            failures.push(
              `${row.method} ${row.route} as ${who} (${
                mine ? "own" : "other"
              }): ${res.status}, expected ${want}`,
            );
          }
        }
      }
    }
    assert.deepEqual(failures, []);
  });
});

Deno.test("a viewer sees only its projects, no settings link and no create form", async () => {
  await withDashboard(async (h) => {
    const own = await createProject(h.kv, { name: "own-project" });
    await createProject(h.kv, { name: "hidden-project" });
    await addAccount(h.kv, "viewer@example.com", "viewer", [own.id]);
    const viewer = await signInAs(h.dash, "viewer@example.com");
    const home = textOf(await (await viewer.get("/")).text());
    assert.match(home, /own-project/);
    assert.doesNotMatch(home, /hidden-project/);
    assert.doesNotMatch(home, /Create a project/);
    assert.doesNotMatch(home, /Dead letters|Users/);
    const explorer = await (await viewer.get(`/projects/${own.id}`))
      .text();
    assert.doesNotMatch(explorer, /\/settings"/);
    assert.match(explorer, /\/audit"/);
  });
});

Deno.test("a member's change is written to the project's audit log with its email", async () => {
  await withDashboard(async (h) => {
    const own = await createProject(h.kv, { name: "own" });
    await addAccount(h.kv, "member@example.com", "member", [own.id]);
    const member = await signInAs(h.dash, "member@example.com");
    const res = await member.post(`/projects/${own.id}/settings/allow`, {
      value: "https://shop.example.com",
    });
    assert.equal(res.status, 303);
    const audit = textOf(
      await (await member.get(`/projects/${own.id}/audit`)).text(),
    );
    assert.match(
      audit,
      /member@example\.com settings\.allow https:\/\/shop\.example\.com/,
    );
  });
});

Deno.test("a role taken away applies to the account's next request", async () => {
  await withDashboard(async (h) => {
    const own = await createProject(h.kv, { name: "own" });
    await addAccount(h.kv, "member@example.com", "member", [own.id]);
    const member = await signInAs(
      h.dash,
      "member@example.com",
      ACCOUNT_PASSWORD,
    );
    const settings = `/projects/${own.id}/settings`;
    assert.equal((await member.get(settings)).status, 200);
    const admin = await signIn(h.dash);
    const res = await admin.post("/users/update", {
      email: "member@example.com",
      role: "viewer",
      [`project_${own.id}`]: "on",
    });
    assert.equal(res.status, 303);
    assert.equal((await member.get(settings)).status, 403);
    assert.equal(
      (await member.get(`/projects/${own.id}`)).status,
      200,
    );
  });
});

Deno.test("a viewer's rejections page offers no Allow and no Replay, an admin's does", async () => {
  await withDashboard(async (h) => {
    const project = await h.project(["https://app.example.com"]);
    await h.post(randomEntry({ projectId: project.id }), {
      Origin: "https://stranger.example.com",
    });
    await h.process();
    await addAccount(h.kv, "viewer@example.com", "viewer", [project.id]);
    const path = `/projects/${project.id}/rejections`;
    const admin = await (await get(h.dash, await signIn(h.dash), path)).text();
    assert.match(admin, /\/rejections\/replay"/);
    assert.match(admin, /\/settings\/allow"/);
    const viewer = await signInAs(h.dash, "viewer@example.com");
    const page = await (await viewer.get(path)).text();
    assert.match(textOf(page), /stranger\.example\.com/);
    assert.doesNotMatch(page, /\/rejections\/replay"|\/settings\/allow"/);
  });
});

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
import { postEntries } from "../_helpers/harness.ts";
import {
  addAccount,
  signInAs,
  signInNew,
} from "../_helpers/dashboard_accounts.ts";
import {
  type Browser,
  dashboardTest,
  get,
  post,
  signIn,
  textOf,
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

/** A row for a GET. */
function getRow(route: string, rule: Rule, ok: number): Row {
  return { method: "GET", route, rule, ok };
}

/** A row for a POST of `form`. */
function postRow(
  route: string,
  rule: Rule,
  ok: number,
  form: Record<string, string>,
): Row {
  return { method: "POST", route, rule, ok, form };
}

/** A row for a POST of `form` below a project that needs `configure`. */
function configureRow(
  path: string,
  ok: number,
  form: Record<string, string>,
): Row {
  return postRow(`/projects/:id${path}`, "configure", ok, form);
}

const ROWS: Row[] = [
  getRow("/", "any", 200),
  getRow("/login", "any", 303),
  postRow("/projects", "admin", 400, { name: "" }),
  getRow("/projects/:id", "read", 200),
  getRow("/projects/:id/entries", "read", 200),
  getRow("/projects/:id/tail", "read", 200),
  getRow("/projects/:id/rows.csv", "read", 400),
  getRow("/projects/:id/rejections", "read", 200),
  configureRow("/rejections/replay", 303, { entry: "0".repeat(28) }),
  getRow("/projects/:id/audit", "read", 200),
  getRow("/projects/:id/alerts", "configure", 200),
  getRow("/projects/:id/errors", "read", 200),
  // `:fingerprint` as it stands is no fingerprint.
  getRow("/projects/:id/errors/:fingerprint", "read", 400),
  getRow("/projects/:id/entries/:entryId", "read", 404),
  getRow("/projects/:id/releases", "read", 200),
  configureRow("/errors/triage", 400, { fp: "nope", action: "resolve" }),
  configureRow("/views", 400, { name: "" }),
  configureRow("/views/delete", 303, { view: "nope" }),
  configureRow("/alerts/add", 400, { query: "" }),
  configureRow("/alerts/remove", 404, { rule: "nope" }),
  getRow("/projects/:id/settings", "configure", 200),
  configureRow("/settings/allow", 400, { value: "*" }),
  configureRow("/settings/disallow", 400, {
    value: "https://absent.example.com",
  }),
  configureRow("/settings/levels/add", 400, { level: "Not A Level" }),
  configureRow("/settings/levels/remove", 400, { level: "absent" }),
  configureRow("/settings/retention", 400, { days: "many" }),
  configureRow("/settings/rotate", 400, { grace: "forever" }),
  postRow("/projects/:id/settings/delete", "admin-project", 400, {
    confirm: "not the name",
  }),
  postRow("/projects/:id/settings/quota", "admin-project", 400, {
    per_day: "0",
  }),
  postRow("/projects/:id/settings/spike", "admin-project", 400, {
    multiple: "x",
  }),
  ...[
    ["scrub/add", { kind: "pattern", value: "(a+)+" }],
    ["scrub/remove", { rule: "key:absent" }],
    ["scrub/dry-run", { kind: "detector", value: "phone" }],
    ["retention-rules/add", { filter: "level~info", days: "3" }],
    ["retention-rules/remove", { filter: "level=absent" }],
  ].map(([path, form]) =>
    postRow(
      `/projects/:id/settings/${path}`,
      "admin-project",
      400,
      form as Record<string, string>,
    )
  ),
  getRow("/usage", "any", 200),
  configureRow("/settings/tokens", 400, { name: "" }),
  configureRow("/settings/tokens/revoke", 400, { token: "nope" }),
  getRow("/api/v1/projects/:id/logs", "read", 200),
  // Uploads take an upload token, never a session.
  postRow("/api/v1/projects/:id/sourcemaps", "any", 401, {}),
  getRow("/dead-letters", "admin", 200),
  postRow("/dead-letters/replay", "admin", 404, { id: "nope" }),
  postRow("/dead-letters/delete", "admin", 404, { id: "nope" }),
  getRow("/users", "admin", 200),
  postRow("/users", "admin", 400, {
    email: "not an email",
    role: "viewer",
    password: "x",
  }),
  postRow("/users/update", "admin", 404, {
    email: "nobody@example.com",
    role: "viewer",
  }),
  postRow("/users/remove", "admin", 404, { email: "nobody@example.com" }),
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

dashboardTest(
  "every dashboard route answers each role as the table says, on its own project and another",
  async (h) => {
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
  },
);

dashboardTest(
  "a viewer sees only its projects, no settings or alerts link and no create form",
  async (h) => {
    const own = await createProject(h.kv, { name: "own-project" });
    await createProject(h.kv, { name: "hidden-project" });
    const viewer = await signInNew(h, "viewer@example.com", "viewer", [own.id]);
    const home = textOf(await (await viewer.get("/")).text());
    assert.match(home, /own-project/);
    assert.doesNotMatch(home, /hidden-project/);
    assert.doesNotMatch(home, /Create a project/);
    assert.doesNotMatch(home, /Dead letters|Users/);
    const explorer = await (await viewer.get(`/projects/${own.id}`))
      .text();
    assert.doesNotMatch(explorer, /\/settings"/);
    assert.doesNotMatch(explorer, /\/alerts"/);
    assert.match(explorer, /\/audit"/);
  },
);

dashboardTest(
  "a member's change is written to the project's audit log with its email",
  async (h) => {
    const own = await createProject(h.kv, { name: "own" });
    const member = await signInNew(h, "member@example.com", "member", [own.id]);
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
  },
);

dashboardTest(
  "a role taken away applies to the account's next request",
  async (h) => {
    const own = await createProject(h.kv, { name: "own" });
    const member = await signInNew(h, "member@example.com", "member", [own.id]);
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
  },
);

dashboardTest(
  "a viewer's rejections page offers no Allow and no Replay, an admin's does",
  async (h) => {
    const project = await h.project(["https://app.example.com"]);
    await postEntries(h, project.id, {
      origin: "https://stranger.example.com",
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
  },
);

/**
 * Triage on the dashboard: the errors list's status filter (unresolved by
 * default) and its bulk action on the checked groups, the group page's
 * triage card (resolve in a release, assign), the audit log, the releases
 * page, and a viewer, who reads errors but cannot change their states.
 *
 * @module
 */
import assert from "node:assert/strict";
import { listAudit } from "../../db/audit.ts";
import {
  type Browser,
  dashboardTest,
  type DashHarness,
  signIn,
  store,
  textOf,
} from "../_helpers/dashboard.ts";
import { addAccount, signInAs } from "../_helpers/dashboard_accounts.ts";

async function seed(h: DashHarness) {
  const project = await h.project(["https://app.example.com"]);
  await store(h, project.id, [
    {
      level: "error",
      data: { title: "Cart failed" },
      context: { release: "1.2.0" },
    },
    {
      level: "error",
      data: { title: "Pay failed" },
      context: { release: "1.2.0" },
    },
    {
      level: "error",
      data: { title: "Ship failed" },
      context: { release: "1.3.0" },
    },
  ]);
  return project;
}

/** Fingerprints of the groups a page lists, by title. */
function listed(html: string): Map<string, string> {
  const rows = [...html.matchAll(
    /<tr data-fingerprint="([0-9a-f]{16})"[\s\S]*?class="group-link strong"[^>]*>([^<]+)</g,
  )];
  return new Map(rows.map((m) => [m[2]!, m[1]!]));
}

/** POSTs the bulk form with `fps` checked, as a browser sends it. */
function bulk(
  browser: Browser,
  projectId: string,
  action: string,
  fps: string[],
): Promise<Response> {
  return browser.post(`/projects/${projectId}/errors/triage`, {
    action,
    back: "unresolved",
    fp: fps,
  });
}

dashboardTest(
  "the errors list's bulk action resolves the checked groups, which leave the default unresolved list",
  async (h) => {
    const project = await seed(h);
    const admin = await signIn(h.dash);
    const page = await (await admin.get(`/projects/${project.id}/errors`))
      .text();
    const groups = listed(page);
    assert.deepEqual([...groups.keys()].sort(), [
      "Cart failed",
      "Pay failed",
      "Ship failed",
    ]);
    assert.equal((page.match(/type="checkbox" name="fp"/g) ?? []).length, 3);
    assert.match(
      page,
      /<form method="post" action="[^"]*\/errors\/triage"[^>]*id="bulk"/,
    );
    const res = await bulk(admin, project.id, "resolve", [
      groups.get("Cart failed")!,
      groups.get("Pay failed")!,
    ]);
    assert.equal(res.status, 303);
    const after = await (await admin.get(res.headers.get("location")!)).text();
    assert.deepEqual([...listed(after).keys()], ["Ship failed"]);
    assert.match(textOf(after), /Resolved\./);
    const resolved = await (await admin.get(
      `/projects/${project.id}/errors?status=resolved`,
    )).text();
    assert.deepEqual([...listed(resolved).keys()].sort(), [
      "Cart failed",
      "Pay failed",
    ]);
    assert.match(resolved, /data-status="resolved"/);
    const audit = await listAudit(h.kv, project.id);
    assert.deepEqual(audit.map((e) => e.action), [
      "error.resolve",
      "error.resolve",
    ]);
    assert.equal(audit[0]!.actor, "admin");
    const bad = await admin.get(`/projects/${project.id}/errors?status=gone`);
    assert.equal(bad.status, 400);
    assert.match((await bad.json()).error, /Cannot read status "gone"/);
    const none = await bulk(admin, project.id, "resolve", []);
    assert.equal(none.status, 400);
  },
);

dashboardTest(
  "a group's page resolves it in a release and assigns it to an account",
  async (h) => {
    const project = await seed(h);
    await addAccount(h.kv, "ana@example.com", "member", [project.id]);
    const admin = await signIn(h.dash);
    const fp = listed(
      await (await admin.get(`/projects/${project.id}/errors`)).text(),
    ).get("Ship failed")!;
    const form = (action: string, extra: Record<string, string>) =>
      admin.post(`/projects/${project.id}/errors/triage`, {
        fp,
        back: "group",
        action,
        ...extra,
      });
    const resolved = await form("resolve", { in_release: "1.4.0" });
    assert.equal(resolved.status, 303);
    assert.equal(
      resolved.headers.get("location"),
      `/projects/${project.id}/errors/${fp}?done=resolve`,
    );
    assert.equal(
      (await form("assign", { assignee: "ana@example.com" })).status,
      303,
    );
    const page = await (await admin.get(`/projects/${project.id}/errors/${fp}`))
      .text();
    assert.match(
      textOf(page),
      /Status: resolved in 1\.4\.0 · ana@example\.com/,
    );
    assert.match(page, /<option value="ana@example.com" selected/);
    // An account of another project is answered as no account at all.
    const other = await h.project();
    await addAccount(h.kv, "bo@example.com", "member", [other.id]);
    const answers: string[] = [];
    for (const email of ["nobody@example.com", "bo@example.com"]) {
      const res = await form("assign", { assignee: email });
      assert.equal(res.status, 400);
      answers.push(textOf(await res.text()).replace(email, "EMAIL"));
    }
    assert.match(answers[0]!, /no account that may read this project/);
    assert.equal(answers[1], answers[0]);
  },
);

dashboardTest(
  "a group's page refuses to ignore it until a partial, past or far date, changing nothing",
  async (h) => {
    const project = await seed(h);
    const admin = await signIn(h.dash);
    const fp = listed(
      await (await admin.get(`/projects/${project.id}/errors`)).text(),
    ).get("Ship failed")!;
    const ignore = (until: string) =>
      admin.post(`/projects/${project.id}/errors/triage`, {
        fp,
        back: "group",
        action: "ignore",
        until,
      });
    const answers: Record<string, RegExp> = {
      "1": /Cannot read date "1": expected YYYY-MM-DD/,
      "2026-02-30": /Cannot read date "2026-02-30"/,
      "2020-01-01": /expected a time after now and at most 36,500 days/,
      "2200-01-01": /expected a time after now and at most 36,500 days/,
      "+275760-09-13": /Cannot read date/,
    };
    for (const [until, reason] of Object.entries(answers)) {
      const res = await ignore(until);
      assert.equal(res.status, 400, until);
      assert.match(textOf(await res.text()), reason);
    }
    assert.deepEqual(await listAudit(h.kv, project.id), []);
    const page = await (await admin.get(`/projects/${project.id}/errors/${fp}`))
      .text();
    assert.match(textOf(page), /Status: unresolved/);
    assert.equal((await ignore("2026-06-30")).status, 303);
    const ignored =
      await (await admin.get(`/projects/${project.id}/errors/${fp}`)).text();
    assert.match(textOf(ignored), /Status: ignored/);
  },
);

dashboardTest(
  "a viewer reads the errors but cannot change a group's state",
  async (h) => {
    const project = await seed(h);
    await addAccount(h.kv, "vic@example.com", "viewer", [project.id]);
    const viewer = await signInAs(h.dash, "vic@example.com");
    const page = await viewer.get(`/projects/${project.id}/errors`);
    assert.equal(page.status, 200);
    const html = await page.text();
    const fp = listed(html).get("Cart failed")!;
    assert.doesNotMatch(html, /name="fp"|id="bulk"/, "no checkboxes, no form");
    const group =
      await (await viewer.get(`/projects/${project.id}/errors/${fp}`))
        .text();
    assert.doesNotMatch(group, /id="resolve-form"/);
    const res = await bulk(viewer, project.id, "resolve", [fp]);
    assert.equal(res.status, 403);
    assert.deepEqual(await listAudit(h.kv, project.id), []);
    const still = await (await viewer.get(`/projects/${project.id}/errors`))
      .text();
    assert.ok(listed(still).has("Cart failed"), "still unresolved");
  },
);

dashboardTest(
  "the releases page lists the project's releases, the latest first",
  async (h) => {
    const project = await seed(h);
    const admin = await signIn(h.dash);
    const res = await admin.get(`/projects/${project.id}/releases`);
    assert.equal(res.status, 200);
    const html = await res.text();
    assert.deepEqual(
      [...html.matchAll(/<tr data-release="([^"]+)"/g)].map((m) => m[1]),
      ["1.3.0", "1.2.0"],
    );
    assert.match(textOf(html), /1\.2\.0 .* 2 2 2/);
  },
);

dashboardTest("the alerts page adds a rule on error groups", async (h) => {
  const project = await h.project(["https://app.example.com"]);
  const admin = await signIn(h.dash);
  const page = await (await admin.get(`/projects/${project.id}/alerts`)).text();
  assert.match(page, /id="add-group-form"/);
  const res = await admin.post(`/projects/${project.id}/alerts/add`, {
    on: "escalating",
    factor: "5",
    webhook: "https://hooks.example.com/a",
  });
  assert.equal(res.status, 303);
  const after = await (await admin.get(res.headers.get("location")!)).text();
  assert.match(textOf(after), /Error groups: escalating/);
  assert.match(textOf(after), /over 5 times its hourly average/);
  const bad = await admin.post(`/projects/${project.id}/alerts/add`, {
    on: "sometimes",
    webhook: "https://hooks.example.com/a",
  });
  assert.equal(bad.status, 400);
  assert.match(
    await bad.text(),
    /Cannot alert on &quot;sometimes&quot;|Cannot alert on "sometimes"/,
  );
});

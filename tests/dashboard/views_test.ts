/**
 * Saved views through `app.request`: the current query and range saved
 * under a name, listed in the explorer and on the projects page, opened as
 * saved, removed; names and counts bounded.
 *
 * @module
 */
import assert from "node:assert/strict";
import { listViews, MAX_VIEWS, saveView } from "../../db/views.ts";
import { signIn, textOf, withDashboard } from "../_helpers/dashboard.ts";

Deno.test("a view saved from the explorer opens as saved and is listed in the explorer and on the projects page", async () => {
  await withDashboard(async (h) => {
    const project = await h.project(["https://app.example.com"]);
    const browser = await signIn(h.dash);
    const explorer = await (await browser.get(
      `/projects/${project.id}?q=checkout&level=error&range=1h`,
    )).text();
    assert.match(explorer, /id="save-view-form"/);
    // What the form carries: the state shown, and a name.
    const res = await browser.post(`/projects/${project.id}/views`, {
      name: "Checkout <errors>",
      q: "checkout",
      level: "error",
      range: "1h",
    });
    assert.equal(res.status, 303);
    assert.equal(
      res.headers.get("location"),
      `/projects/${project.id}?q=checkout&level=error&range=1h`,
    );
    const [view] = await listViews(h.kv, project.id);
    assert.equal(view!.name, "Checkout <errors>");
    const page = await (await browser.get(`/projects/${project.id}`))
      .text();
    assert.doesNotMatch(page, /Checkout <errors>/, "escaped");
    assert.match(
      page,
      new RegExp(
        `<a class="chip view" href="/projects/${project.id}\\?q=checkout&amp;level=error&amp;range=1h">Checkout &lt;errors&gt;</a>`,
      ),
    );
    const projects = await (await browser.get("/")).text();
    assert.match(textOf(projects), /Checkout <errors>/);
    // Removed from the projects page, it goes back there.
    const removed = await browser.post(`/projects/${project.id}/views/delete`, {
      view: view!.id,
      back: "projects",
    });
    assert.equal(removed.status, 303);
    assert.equal(removed.headers.get("location"), "/");
    assert.deepEqual(await listViews(h.kv, project.id), []);
  });
});

Deno.test("a view with an absolute range keeps it, and a view without a name is refused", async () => {
  await withDashboard(async (h) => {
    const project = await h.project(["https://app.example.com"]);
    const browser = await signIn(h.dash);
    const res = await browser.post(`/projects/${project.id}/views`, {
      name: "Incident",
      since: "2026-01-15T09:30",
      until: "2026-01-15T10:00",
      cursor: "ignored",
    });
    assert.equal(res.status, 303);
    const [view] = await listViews(h.kv, project.id);
    assert.equal(
      view!.query,
      "?since=2026-01-15T09%3A30%3A00.000Z&until=2026-01-15T10%3A00%3A00.000Z",
    );
    const refused = await browser.post(`/projects/${project.id}/views`, {
      name: "  ",
    });
    assert.equal(refused.status, 400);
    assert.match(
      textOf(await refused.text()),
      /Cannot save a view named "": expected 1 to 100 characters/,
    );
  });
});

Deno.test("a project keeps at most 50 saved views", async () => {
  const kv = await Deno.openKv(":memory:");
  try {
    for (let i = 0; i < MAX_VIEWS; i++) {
      await saveView(kv, "p1", { name: `v${i}`, query: "" });
    }
    await assert.rejects(
      () => saveView(kv, "p1", { name: "one more", query: "" }),
      /at most 50 views/,
    );
    await assert.rejects(
      () => saveView(kv, "p2", { name: "x", query: "q=no-question-mark" }),
      /its query string is not one/,
    );
  } finally {
    kv.close();
  }
});

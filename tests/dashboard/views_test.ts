/**
 * Saved views through `app.request`: the current query and range saved
 * under a name, listed in the explorer and on the projects page, opened as
 * saved, removed; names and counts bounded.
 *
 * @module
 */
import assert from "node:assert/strict";
import { listAudit } from "../../db/audit.ts";
import { listViews, MAX_VIEWS, saveView } from "../../db/views.ts";
import { projectKey } from "../../db/keys.ts";
import { encodeJson } from "../../db/kv.ts";
import { type Browser, signedInTest, textOf } from "../_helpers/dashboard.ts";
import { kvTest } from "../_helpers/harness.ts";

/** Saves a view of the project's explorer through the form, as accepted. */
async function saved(
  browser: Browser,
  projectId: string,
  form: Record<string, string>,
): Promise<Response> {
  const res = await browser.post(`/projects/${projectId}/views`, form);
  assert.equal(res.status, 303, "the view is saved");
  return res;
}

signedInTest(
  "a view saved from the explorer opens as saved and is listed in the explorer and on the projects page",
  async (h, browser) => {
    const project = await h.project(["https://app.example.com"]);
    const explorer = await (await browser.get(
      `/projects/${project.id}?q=checkout&level=error&range=1h`,
    )).text();
    assert.match(explorer, /id="save-view-form"/);
    // What the form carries: the state shown, and a name.
    const res = await saved(browser, project.id, {
      name: "Checkout <errors>",
      q: "checkout",
      level: "error",
      range: "1h",
    });
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
    // Both changes are in the project's audit log; a second removal is not.
    await browser.post(`/projects/${project.id}/views/delete`, {
      view: view!.id,
    });
    const events = (await listAudit(h.kv, project.id)).map((e) => [
      e.action,
      e.detail,
    ]);
    assert.deepEqual(events, [
      ["view.delete", `Checkout <errors> (${view!.id})`],
      [
        "view.save",
        `Checkout <errors> (${view!.id}): ?q=checkout&level=error&range=1h`,
      ],
    ]);
  },
);

signedInTest(
  "a view with an absolute range keeps it, and a view without a name is refused",
  async (h, browser) => {
    const project = await h.project(["https://app.example.com"]);
    await saved(browser, project.id, {
      name: "Incident",
      since: "2026-01-15T09:30",
      until: "2026-01-15T10:00",
      cursor: "ignored",
    });
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
  },
);

kvTest("a project keeps at most 50 saved views", async (kv) => {
  await kv.set(projectKey("p1"), encodeJson({ id: "p1" }));
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
});

kvTest(
  "a saved view's query is bounded as decoded, so a query of any script fits the same",
  async (kv) => {
    await kv.set(projectKey("p1"), encodeJson({ id: "p1" }));
    for (const char of ["a", "é", "日", "😀"]) {
      const q = char.repeat(2000 / char.length);
      const query = `?${new URLSearchParams({ q, range: "24h" })}`;
      const view = await saveView(kv, "p1", { name: `in ${char}`, query });
      assert.equal(new URLSearchParams(view.query).get("q"), q);
    }
    await assert.rejects(
      () =>
        saveView(kv, "p1", {
          name: "too long",
          query: `?${new URLSearchParams({ q: "日".repeat(3001) })}`,
        }),
      /its query is over 3000 characters/,
    );
  },
);

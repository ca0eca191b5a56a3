/**
 * One reader cannot hold the thread that answers everyone: queries run in
 * a bounded number of slots per account or read token and in all (past
 * them, `429`), and a page of the read API ends early past its size.
 *
 * @module
 */
import assert from "node:assert/strict";
import { QuerySlots } from "../../dashboard/query_slots.ts";
import { createReadToken } from "../../db/tokens.ts";
import { apiRequest, withSignedIn } from "../_helpers/dashboard.ts";

Deno.test("query slots hold per reader and in all, and a slot given back twice counts once", () => {
  const slots = new QuerySlots({ perReader: 2, total: 3 });
  const a1 = slots.take("account:a");
  const a2 = slots.take("account:a");
  assert.equal(typeof a1, "function");
  assert.equal(typeof a2, "function");
  assert.match(slots.take("account:a") as string, /at once for one reader/);
  const b1 = slots.take("token:b");
  assert.equal(typeof b1, "function");
  assert.match(slots.take("token:c") as string, /at once on this dashboard/);
  (a1 as () => void)();
  (a1 as () => void)();
  assert.equal(typeof slots.take("token:c"), "function");
  assert.match(slots.take("token:d") as string, /on this dashboard/);
});

Deno.test("a reader past its query slots gets 429 from the read API (JSON) and the explorer, with Retry-After", async () => {
  await withSignedIn(async (h, browser) => {
    const project = await h.project();
    const { token } = await createReadToken(h.kv, {
      projectId: project.id,
      name: "ci",
      createdBy: "test",
    });
    const api = await apiRequest(
      h,
      `/api/v1/projects/${project.id}/logs`,
      token,
    );
    assert.equal(api.status, 429);
    assert.equal(api.headers.get("retry-after"), "1");
    assert.match((await api.json()).error, /queries at once for one reader/);
    for (const path of ["", "/entries", "/errors", "/releases"]) {
      const page = await browser.get(`/projects/${project.id}${path}`);
      assert.equal(page.status, 429, path);
      await page.text();
    }
    const settings = await browser.get(`/projects/${project.id}/settings`);
    assert.equal(settings.status, 200, "no query there");
    await settings.text();
  }, { dashboard: { queryLimits: { perReader: 0 } } });
});

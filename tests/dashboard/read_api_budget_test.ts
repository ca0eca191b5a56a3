/**
 * A read API page that its time budget stops links a cursor that goes on
 * from where it stopped (`N…`), and following the links gives every match
 * once.
 *
 * @module
 */
import assert from "node:assert/strict";
import { apiRequest, store, withDashboard } from "../_helpers/dashboard.ts";
import { createReadToken } from "../../db/tokens.ts";

Deno.test("a page stopped by its budget links a cursor the next request takes, until every match came", async () => {
  await withDashboard(async (h) => {
    const project = await h.project();
    // Three batches, three chunks; only the oldest holds matches, and a page
    // may read one chunk.
    const matches = await store(h, project.id, [
      { data: { title: "Payment failed" } },
      { data: { title: "Payment failed" } },
    ]);
    for (let i = 0; i < 2; i++) {
      h.clock.advance(60_000);
      await store(h, project.id, [{ data: { title: `Cart opened ${i}` } }]);
    }
    const { token } = await createReadToken(h.kv, {
      projectId: project.id,
      name: "ci",
      createdBy: "cli",
    });
    let path: string | null =
      `/api/v1/projects/${project.id}/logs?q=-cart&since=1d`;
    const ids: string[] = [];
    const statuses: number[] = [];
    for (let pages = 0; path !== null && pages < 10; pages++) {
      const res = await apiRequest(h, path, token);
      statuses.push(res.status);
      const text = await res.text();
      if (res.status !== 200) break;
      ids.push(
        ...text.split("\n").filter(Boolean).map((l) => JSON.parse(l).id),
      );
      const next = /<([^>]+)>/.exec(res.headers.get("link") ?? "")?.[1];
      path = next === undefined ? null : next.replace(/^https?:\/\/[^/]+/, "");
    }
    assert.ok(statuses.length > 1, "the first page was stopped by its budget");
    assert.deepEqual(statuses, statuses.map(() => 200));
    assert.deepEqual(ids, matches.map((r) => r.id).reverse());
  }, { dashboard: { queryBudget: { chunks: 1 } } });
});

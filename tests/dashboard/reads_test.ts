/**
 * The dashboard's searches, aggregations, facets and histograms read with the
 * reads it is given (`reads`, a query thread in the service): the read API,
 * the explorer, its live tail and the error pages call them, and show what they answer.
 *
 * @module
 */
import assert from "node:assert/strict";
import {
  apiRequest,
  signIn,
  store,
  textOf,
  withDashboard,
} from "../_helpers/dashboard.ts";
import { localReads } from "../../db/query/reads.ts";
import { notedReads } from "../_helpers/query.ts";
import { withTimeout } from "../_helpers/harness.ts";
import { fingerprintOf } from "../../domain/fingerprint.ts";
import { createReadToken } from "../../db/tokens.ts";
import { ThreadStalledError } from "../../db/own_thread.ts";

Deno.test("the read API, the explorer, its live tail and the error pages read with the dashboard's reads", async () => {
  const calls: string[] = [];
  let kv: Deno.Kv | undefined;
  await withDashboard(async (h) => {
    kv = h.kv;
    const project = await h.project();
    const stored = await store(h, project.id, [
      { level: "error", data: { title: "Checkout failed" } },
      { level: "info", data: { title: "Cart opened" } },
    ]);
    const { token } = await createReadToken(h.kv, {
      projectId: project.id,
      name: "ci",
      createdBy: "cli",
    });
    const api = `/api/v1/projects/${project.id}/logs`;
    const page = await apiRequest(h, `${api}?q=checkout`, token);
    assert.equal(page.status, 200);
    assert.match(await page.text(), /Checkout failed/);
    assert.deepEqual(calls.splice(0), ["exportPage"]);
    const rows = await apiRequest(h, `${api}?q=*%20%7C%20count`, token);
    assert.equal(await rows.text(), '{"count":2}\n');
    assert.deepEqual(calls.splice(0), ["aggregate"]);

    const browser = await signIn(h.dash);
    const explorer = await browser.get(`/projects/${project.id}?q=checkout`);
    assert.equal(explorer.status, 200);
    assert.match(textOf(await explorer.text()), /Checkout failed/);
    // The histogram counts its bars in several reads.
    assert.deepEqual([...new Set(calls.splice(0))].sort(), [
      "facets",
      "histogram",
      "queryLogs",
    ]);
    const counted = await browser.get(
      `/projects/${project.id}?q=${encodeURIComponent("* | count by level")}`,
    );
    assert.equal(counted.status, 200);
    assert.ok(calls.includes("aggregate"), calls.join(", "));

    h.clock.advance(2000);
    const tail = await browser.get(
      `/projects/${project.id}/tail?after=${stored[0]!.id}`,
    );
    const reader = tail.body!.pipeThrough(new TextDecoderStream()).getReader();
    let sent = "";
    const firstEntry = async () => {
      while (!sent.includes("event: entry")) {
        const { value, done } = await reader.read();
        if (done) break;
        sent += value;
      }
    };
    await withTimeout(firstEntry(), 5_000, "the tail's first entry")
      .finally(() => reader.cancel());
    assert.match(sent, new RegExp(`id: ${stored[1]!.id}`));
    assert.ok(calls.includes("tailLogs"), calls.join(", "));

    calls.length = 0;
    const errors = await browser.get(`/projects/${project.id}/errors`);
    assert.match(textOf(await errors.text()), /Checkout failed/);
    const { fingerprint } = fingerprintOf(stored[0]!);
    const group = await browser.get(
      `/projects/${project.id}/errors/${fingerprint}`,
    );
    assert.equal(group.status, 200);
    assert.match(textOf(await group.text()), /Checkout failed/);
    assert.deepEqual(calls.splice(0), [
      "readGroupUsers",
      "readGroupDetail",
      "shownStack",
    ]);
    const entry = await browser.get(
      `/projects/${project.id}/entries/${stored[0]!.id}`,
    );
    assert.match(textOf(await entry.text()), /Checkout failed/);
    assert.deepEqual(calls, ["shownStack"]);
  }, { dashboard: { reads: notedReads(() => localReads(kv!), calls) } });
});

Deno.test("a read whose thread stalled is a 503 to retry, on a page and in the read API", async () => {
  const stalled = () =>
    Promise.reject(new ThreadStalledError("The query thread", 15_000));
  let kv: Deno.Kv | undefined;
  const lines: unknown[][] = [];
  const error = console.error;
  console.error = (...args: unknown[]) => void lines.push(args);
  try {
    await withDashboard(async (h) => {
      kv = h.kv;
      const project = await h.project();
      const { token } = await createReadToken(h.kv, {
        projectId: project.id,
        name: "ci",
        createdBy: "cli",
      });
      const api = `/api/v1/projects/${project.id}/logs`;
      const page = await apiRequest(h, api, token);
      assert.equal(page.status, 503);
      assert.equal(page.headers.get("retry-after"), "5");
      assert.match(await page.text(), /stopped answering.*Try again/);
      const browser = await signIn(h.dash);
      const explorer = await browser.get(`/projects/${project.id}`);
      assert.equal(explorer.status, 503);
      assert.match(textOf(await explorer.text()), /Try again in a moment/);
    }, {
      dashboard: {
        reads: { ...localReads(kv!), queryLogs: stalled, exportPage: stalled },
      },
    });
  } finally {
    console.error = error;
  }
  assert.equal(lines.length, 2, "one line a request");
  assert.doesNotMatch(lines.map(String).join("\n"), /\n\s+at /);
});

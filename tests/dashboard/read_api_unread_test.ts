/**
 * A read API answer holds its query's slot until its body is sent: a token
 * whose pages are left unread runs out of slots (`429`) until one is read
 * whole or cancelled, a body never read is ended after the slots'
 * `unreadMs`, and a reader that reads gets the bytes it always got, now with
 * their `Content-Length`. A signed-in reader's rows.csv download is held the
 * same way.
 *
 * @module
 */
import assert from "node:assert/strict";
import { createReadToken } from "../../db/tokens.ts";
import { exportPage } from "../../db/query/export.ts";
import { CSV_COLUMNS } from "../../domain/csv.ts";
import { SEND_BODY_MS } from "../../dashboard/query_slots.ts";
import { manualTimers } from "../_helpers/timers.ts";
import {
  apiRequest,
  type DashHarness,
  store,
  withDashboard,
  withSignedIn,
} from "../_helpers/dashboard.ts";

/** Entries stored: their page is past the 65,536 characters sent at once. */
const ENTRIES = 16;

/**
 * Stores {@linkcode ENTRIES} entries of about 8 KB (a surrogate pair in
 * each, one of them across a 65,536 characters' cut of a page), and makes a
 * read token for their project.
 */
async function bigPages(
  h: DashHarness,
): Promise<{ projectId: string; token: string; path: string }> {
  const project = await h.project();
  await store(
    h,
    project.id,
    Array.from({ length: ENTRIES }, (_, i) => ({
      data: {
        i,
        note: "é".repeat(i * 7) + "😀".repeat(2000) + "x".repeat(4000),
      },
    })),
  );
  const { token } = await createReadToken(h.kv, {
    projectId: project.id,
    name: "ci",
    createdBy: "cli",
  });
  return {
    projectId: project.id,
    token,
    path: `/api/v1/projects/${project.id}/logs?limit=1000`,
  };
}

Deno.test("a token's pages left unread hold its 4 slots: a 5th is 429 until one is read whole or cancelled", async () => {
  await withDashboard(async (h) => {
    const { token, path } = await bigPages(h);
    const unread: Response[] = [];
    for (let i = 0; i < 4; i++) {
      const res = await apiRequest(h, path, token);
      assert.equal(res.status, 200);
      unread.push(res);
    }
    const fifth = await apiRequest(h, path, token);
    assert.equal(fifth.status, 429, "4 unread pages hold the 4 slots");
    assert.match((await fifth.json()).error, /at once for one reader/);

    const text = await unread.shift()!.text();
    assert.equal(text.split("\n").filter(Boolean).length, ENTRIES);
    const afterRead = await apiRequest(h, path, token);
    assert.equal(afterRead.status, 200, "a page read whole gives its back");
    unread.push(afterRead);
    const again = await apiRequest(h, path, token);
    assert.equal(again.status, 429);
    await again.body?.cancel();

    await unread.shift()!.body!.cancel();
    const afterCancel = await apiRequest(h, path, token);
    assert.equal(afterCancel.status, 200, "a cancelled page gives its back");
    unread.push(afterCancel);
    for (const res of unread) await res.body!.cancel();
  });
});

Deno.test("a page whose client never reads it is ended after unreadMs, and its slot given back", async () => {
  // The bodies' timers fire when the test says, however slow the machine.
  const timers = manualTimers();
  await withDashboard(async (h) => {
    const { token, path } = await bigPages(h);
    const stalled = await apiRequest(h, path, token);
    assert.equal(stalled.status, 200);
    assert.deepEqual(timers.armed, [SEND_BODY_MS, 40], "its two bounds");
    const held = await apiRequest(h, path, token);
    assert.equal(held.status, 429, "the unread page holds the one slot");
    await held.body?.cancel();
    timers.fire(); // 40 ms unread, and then its 5 minutes: ended once
    const length = Number(stalled.headers.get("content-length"));
    assert.ok(length > 65_536);
    assert.equal(await stalled.text(), "", "ended, short of its length");
    const next = await apiRequest(h, path, token);
    assert.equal(next.status, 200, "the ended page gave its slot back");
    assert.equal(
      (await next.text()).split("\n").filter(Boolean).length,
      ENTRIES,
    );
  }, {
    dashboard: {
      queryLimits: { perReader: 1, unreadMs: 40, after: timers.after },
    },
  });
});

Deno.test("a page read as it comes is the page's rows byte for byte, with its Content-Length, Link and type", async () => {
  await withDashboard(async (h) => {
    const { projectId, token, path } = await bigPages(h);
    for (const csv of [false, true]) {
      const limit = ENTRIES - 1;
      const res = await apiRequest(
        h,
        `${path.replace("1000", String(limit))}${csv ? "&format=csv" : ""}`,
        token,
      );
      assert.equal(res.status, 200);
      const bytes = new Uint8Array(await res.arrayBuffer());
      const page = await exportPage(h.kv, projectId, { limit, csv });
      const expected = (csv ? CSV_COLUMNS.join(",") + "\r\n" : "") +
        page.rows.join("");
      assert.ok(expected.length > 65_536 * 1.5, "sent in pieces");
      assert.deepEqual(bytes, new TextEncoder().encode(expected));
      assert.equal(res.headers.get("content-length"), String(bytes.length));
      assert.equal(
        res.headers.get("content-type"),
        csv
          ? "text/csv; charset=utf-8; header=present"
          : "application/x-ndjson; charset=utf-8",
      );
      assert.equal(
        res.headers.get("link"),
        `</api/v1/projects/${projectId}/logs?limit=${limit}${
          csv ? "&format=csv" : ""
        }&cursor=${page.cursor}>; rel="next"`,
      );
    }
    const next = await apiRequest(h, path, token);
    assert.equal(next.status, 200, "every slot was given back");
    await next.body!.cancel();
  }, { dashboard: { queryLimits: { perReader: 1 } } });
});

Deno.test("rows.csv larger than a piece holds its reader's slot until sent, as a read API page does", async () => {
  await withSignedIn(async (h, browser) => {
    const project = await h.project();
    await store(
      h,
      project.id,
      Array.from({ length: 800 }, (_, i) => ({
        data: { k: `${i}-${"x".repeat(100)}` },
      })),
    );
    const q = encodeURIComponent("* | count by (data.k)");
    const path = `/projects/${project.id}/rows.csv?q=${q}`;
    const unread: Response[] = [];
    for (let i = 0; i < 4; i++) {
      const res = await browser.get(path);
      assert.equal(res.status, 200);
      assert.ok(Number(res.headers.get("content-length")) > 65_536);
      unread.push(res);
    }
    const fifth = await browser.get(path);
    assert.equal(fifth.status, 429, "4 unread downloads hold the 4 slots");
    await fifth.body?.cancel();
    const text = await unread.shift()!.text();
    assert.equal(text.split("\r\n").filter(Boolean).length, 801);
    const afterRead = await browser.get(path);
    assert.equal(afterRead.status, 200, "a download read whole gives its back");
    unread.push(afterRead);
    for (const res of unread) await res.body!.cancel();
  });
});

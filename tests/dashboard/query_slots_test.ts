/**
 * One reader cannot hold the thread that answers everyone: queries run in
 * a bounded number of slots per account or read token and in all (past
 * them, `429`), and a page of the read API ends early past its size.
 *
 * @module
 */
import assert from "node:assert/strict";
import {
  BODY_PIECE_CHARS,
  heldBody,
  QuerySlots,
} from "../../dashboard/query_slots.ts";
import { createReadToken } from "../../db/tokens.ts";
import { localReads } from "../../db/query/reads.ts";
import { notedReads } from "../_helpers/query.ts";
import { withTimeout } from "../_helpers/harness.ts";
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
      createdBy: "cli",
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

Deno.test("read tokens hold at most their project's share and all tokens' share, and signed-in readers keep the rest", () => {
  const slots = new QuerySlots({ perReader: 4, total: 16 });
  assert.equal(slots.perProjectTokens, 8);
  assert.equal(slots.allTokens, 12);
  const held = [1, 2].flatMap((t) =>
    [1, 2, 3, 4].map(() => slots.take(`token:a${t}`, "A"))
  );
  assert.ok(held.every((slot) => typeof slot === "function"));
  assert.match(
    slots.take("token:a3", "A") as string,
    /8 queries at once with one project's read tokens/,
  );
  for (let i = 0; i < 4; i++) {
    assert.equal(typeof slots.take(`token:b${i}`, "B"), "function");
  }
  assert.match(
    slots.take("token:c1", "C") as string,
    /12 queries at once with read tokens: the rest are kept/,
  );
  for (const account of ["account:x", "account:y", "account:x", "account:z"]) {
    assert.equal(typeof slots.take(account), "function", account);
  }
  assert.match(slots.take("account:w") as string, /on this dashboard/);
});

Deno.test("one project's read tokens looping exports leave the explorer to a signed-in reader", async () => {
  let release!: () => void;
  const held = new Promise<void>((resolve) => release = resolve);
  let kv: Deno.Kv | undefined;
  let holding = 0;
  await withSignedIn(async (h, browser) => {
    kv = h.kv;
    const [a, b] = [await h.project(), await h.project()];
    const tokens = await Promise.all(
      [1, 2, 3, 4].map(async (i) =>
        (await createReadToken(h.kv, {
          projectId: a.id,
          name: `t${i}`,
          createdBy: "cli",
        })).token
      ),
    );
    const api = `/api/v1/projects/${a.id}/logs`;
    let refused = 0;
    const exports = tokens.flatMap((token) =>
      [1, 2, 3, 4].map(() =>
        apiRequest(h, api, token).then((res) => {
          if (res.status === 429) refused++;
          return res;
        })
      )
    );
    // Every export holds a slot or was refused before the page is asked.
    await withTimeout(
      (async () => {
        while (holding + refused < exports.length) {
          await new Promise((resolve) => setTimeout(resolve, 5));
        }
      })(),
      10_000,
      "the exports' slots",
    );
    assert.equal(holding, 8);
    const page = await browser.get(`/projects/${b.id}`);
    assert.equal(page.status, 200);
    await page.text();
    release();
    const statuses = await Promise.all(
      exports.map(async (res) => {
        const answer = await res;
        await answer.body?.cancel();
        return answer.status;
      }),
    );
    assert.equal(statuses.filter((s) => s === 200).length, 8);
    assert.equal(statuses.filter((s) => s === 429).length, 8);
  }, {
    dashboard: {
      reads: {
        ...notedReads(() => localReads(kv!), []),
        exportPage: async (projectId, options) => {
          holding++;
          await held;
          return await localReads(kv!).exportPage(projectId, options);
        },
      },
    },
  });
});

Deno.test("a held body is its parts' UTF-8 in pieces, never cutting a surrogate pair, and gives its slot back once, at its end", async () => {
  const text = "a".repeat(BODY_PIECE_CHARS - 1) + "😀" + "é" +
    "b".repeat(BODY_PIECE_CHARS) + "\ud800";
  const parts = [text.slice(0, 10), text.slice(10, -1), "", text.slice(-1)];
  let released = 0;
  const { body, bytes } = heldBody(parts, () => released++, {
    unreadMs: 60_000,
    sendMs: 60_000,
  });
  const expected = new TextEncoder().encode(text);
  assert.equal(bytes, expected.length);
  const reader = body.getReader();
  const first = await reader.read();
  assert.equal(first.value!.length, BODY_PIECE_CHARS - 1, "the pair waits");
  assert.equal(released, 0);
  const chunks = [first.value!];
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    chunks.push(value);
  }
  assert.equal(released, 1);
  assert.deepEqual(
    chunks.flatMap((chunk) => [...chunk]),
    [...expected],
  );
  assert.deepEqual(parts, ["", "", "", ""], "each part let go once sent");
  await reader.cancel();
  assert.equal(released, 1);
});

Deno.test("a held body read a piece at a time but never whole within sendMs is ended short, and its slot given back", async () => {
  const parts = Array.from({ length: 10 }, () => "x".repeat(BODY_PIECE_CHARS));
  let released = 0;
  const { body, bytes } = heldBody(parts, () => released++, {
    unreadMs: 60_000,
    sendMs: 100,
  });
  const reader = body.getReader();
  let read = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    read += value.length;
    // Each piece taken well within unreadMs; the pieces together are not.
    await new Promise((resolve) => setTimeout(resolve, 30));
  }
  assert.ok(read > 0 && read < bytes, `${read} of ${bytes} bytes`);
  assert.equal(released, 1);
});

/**
 * Live tails are bounded per session, per account and in all: past a bound the answer is
 * `429` with a sentence, a closed or ended stream gives its place back, and
 * 500 tails asked for at once over real connections leave the endpoint
 * answering every entry and the process's memory within its budget. The
 * endpoint's latency with the tails open is measured by `deno task
 * bench:tails` (BENCHMARKS.md), not here: it is the machine's speed.
 *
 * @module
 */
import assert from "node:assert/strict";
import { createDashboard } from "../../dashboard/app.ts";
import { randomEntry, serve } from "../_helpers/harness.ts";
import { addAccount, signInAs } from "../_helpers/dashboard_accounts.ts";
import {
  type Browser,
  dashboardProjectTest,
  dashboardTest,
  PASSWORD,
  signIn,
  withDashboard,
} from "../_helpers/dashboard.ts";

/** Opens `count` live tails as `browser`, each answered 200. */
async function openTails(
  browser: Browser,
  tail: string,
  count: number,
): Promise<Response[]> {
  const open: Response[] = [];
  for (let i = 0; i < count; i++) {
    const res = await browser.get(tail);
    assert.equal(res.status, 200);
    open.push(res);
  }
  return open;
}

/** Asks for one more live tail as `browser`: refused with 429 and `reason`. */
async function assertTailRefused(
  browser: Browser,
  tail: string,
  reason: string | RegExp,
): Promise<void> {
  const res = await browser.get(tail);
  assert.equal(res.status, 429);
  assert.equal(res.headers.get("retry-after"), "60");
  const text = await res.text();
  if (typeof reason === "string") assert.equal(text, reason);
  else assert.match(text, reason);
}

Deno.test("a session holds at most its share of live tails and the dashboard its total; past either, 429 says which", async () => {
  await withDashboard(async (h) => {
    const project = await h.project();
    const tail = `/projects/${project.id}/tail`;
    const a = await signIn(h.dash);
    const b = await signIn(h.dash);
    const open: Response[] = [];
    open.push(...await openTails(a, tail, 4));
    await assertTailRefused(
      a,
      tail,
      "Cannot open more than 4 live tails at once in one session: pause the live tail in another tab",
    );
    open.push(...await openTails(b, tail, 2));
    await assertTailRefused(
      b,
      tail,
      /more than 6 live tails at once on this dashboard/,
    );
    // A stream the browser closes gives its place back.
    await open.shift()!.body!.cancel();
    const again = await b.get(tail);
    assert.equal(again.status, 200);
    open.push(again);
    // So does a stream that ends at its time cap.
    h.clock.advance(61_000);
    const ended = await open.shift()!.text();
    assert.match(ended, /^retry: 2000/);
    const after = await a.get(tail);
    assert.equal(after.status, 200);
    open.push(after);
    for (const res of open) await res.body!.cancel();
  }, { dashboard: { tailLimits: { perSession: 4, total: 6 } } });
});

dashboardProjectTest(
  "one account holds at most its share of live tails over all its sessions, and another account still gets one",
  async (h, project) => {
    await addAccount(h.kv, "viewer@example.com", "viewer", [project.id]);
    const tail = `/projects/${project.id}/tail`;
    const a = await signIn(h.dash);
    const b = await signIn(h.dash);
    const open: Response[] = [];
    open.push(...await openTails(a, tail, 4));
    open.push(...await openTails(b, tail, 2));
    await assertTailRefused(
      b,
      tail,
      "Cannot open more than 6 live tails at once for one account: pause the live tail in another tab or browser",
    );
    // A third session of the same account gets none either.
    const c = await signIn(h.dash);
    const third = await c.get(tail);
    assert.equal(third.status, 429);
    await third.body?.cancel();
    // Another account is not held back by the first one's streams.
    const viewer = await signInAs(h.dash, "viewer@example.com");
    open.push(...await openTails(viewer, tail, 1));
    // A stream given back makes room for the account again.
    await open.shift()!.body!.cancel();
    open.push(...await openTails(c, tail, 1));
    for (const res of open) await res.body!.cancel();
  },
  { dashboard: { tailLimits: { perSession: 4, perAccount: 6, total: 64 } } },
);

/** Most the process may grow with 500 tails asked for. */
const TAILS_RSS_BUDGET = 100 * 1024 * 1024;

dashboardTest(
  "500 live tails asked for at once over real connections: 64 stream, the rest get 429, and the endpoint answers every entry",
  async (h) => {
    const project = await h.project(["https://app.example.com"]);
    const dash = createDashboard({
      kv: h.kv,
      password: PASSWORD,
      loginLimit: { burst: 1000 },
      // One account's 25 sessions: here the total is the bound to reach.
      tailLimits: { perAccount: 1000 },
    });
    const dashServer = serve((req, info) =>
      dash.fetch(req, { remoteAddr: info.remoteAddr })
    );
    const ingest = serve((req, info) =>
      h.app.fetch(req, { remoteAddr: info.remoteAddr })
    );
    const endpoint = `http://127.0.0.1:${ingest.addr.port}/api/v1/logs`;
    const sendAll = async (count: number): Promise<number[]> => {
      const statuses: number[] = [];
      for (let i = 0; i < count; i++) {
        const res = await fetch(endpoint, {
          method: "POST",
          headers: {
            "Content-Type": "application/json",
            Origin: "https://app.example.com",
          },
          body: JSON.stringify(randomEntry({ projectId: project.id })),
        });
        await res.body?.cancel();
        statuses.push(res.status);
      }
      return statuses;
    };
    const readers: ReadableStreamDefaultReader<Uint8Array>[] = [];
    try {
      // 25 sessions asking for 20 tails each.
      const sessions: Browser[] = [];
      for (let i = 0; i < 25; i++) sessions.push(await signIn(dash));
      assert.deepEqual(new Set(await sendAll(50)), new Set([200]));
      const rss0 = Deno.memoryUsage().rss;
      const url =
        `http://127.0.0.1:${dashServer.addr.port}/projects/${project.id}/tail`;
      const answers = await Promise.all(
        Array.from({ length: 500 }, async (_, i) => {
          const res = await fetch(url, {
            headers: { cookie: sessions[i % sessions.length]!.cookie },
          });
          if (res.status === 200) {
            const reader = res.body!.getReader();
            readers.push(reader);
            await reader.read(); // the stream's first bytes
            return 200;
          }
          const text = await res.text();
          assert.match(text, /^Cannot open more than /);
          return res.status;
        }),
      );
      const counts = { 200: 0, 429: 0 } as Record<number, number>;
      for (const status of answers) counts[status] = (counts[status] ?? 0) + 1;
      assert.deepEqual(counts, { 200: 64, 429: 436 });
      // With the 64 tails open, every entry sent is answered and stored.
      assert.deepEqual(new Set(await sendAll(200)), new Set([200]));
      await h.process();
      assert.equal((await h.logs(project.id)).length, 250);
      const rss = Deno.memoryUsage().rss - rss0;
      console.log(`500 tails asked for: RSS +${(rss / 1048576).toFixed(1)} MB`);
      assert.ok(rss <= TAILS_RSS_BUDGET, `RSS grew ${rss} bytes`);
    } finally {
      for (const reader of readers) await reader.cancel();
      await dashServer.shutdown();
      await ingest.shutdown();
    }
  },
  {
    config: { rateLimitRps: 1_000_000, rateLimitBurst: 1_000_000 },
  },
);

dashboardProjectTest(
  "a HEAD of the live tail holds no slot: a session's four tails still open after any number of them",
  async (h, project) => {
    const tail = `/projects/${project.id}/tail`;
    const browser = await signIn(h.dash);
    for (let i = 0; i < 10; i++) {
      const res = await h.dash.request(tail, {
        method: "HEAD",
        headers: { cookie: browser.cookie },
      });
      assert.equal(res.status, 200);
      assert.equal(res.headers.get("content-type"), "text/event-stream");
      await res.body?.cancel();
    }
    const open = await openTails(browser, tail, 4);
    for (const res of open) await res.body?.cancel();
  },
);

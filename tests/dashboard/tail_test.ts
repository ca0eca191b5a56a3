/**
 * Live tail over server-sent events through `app.request`: each settled
 * entry sent once with its id as the event id, a reconnect resuming after
 * `Last-Event-ID` (no further back than `TAIL_RESUME_WINDOW_MS`), and the
 * dashboard mounted under `/dashboard/` beside the service.
 *
 * @module
 */
import { textDecoder } from "../_helpers/harness.ts";
import assert from "node:assert/strict";
import { Hono } from "hono";
import { mountDashboard } from "../../dashboard/mount.ts";
import {
  type Browser,
  dashboardTest,
  PASSWORD,
  PEER,
  rowIds,
  setCookies,
  signedInProjectTest,
  signIn,
  store,
  submitLogin,
} from "../_helpers/dashboard.ts";

/**
 * A dashboard whose live tail sends a heartbeat after every poll, so that a
 * test counts polls instead of sleeping.
 */
const EVERY_POLL = {
  dashboard: { tail: { intervalMs: 5, maxMs: 60_000, heartbeatMs: 0 } },
};

/** Entry events of a live tail answer, collected as they come. */
function collect(res: Response) {
  const reader = res.body!.pipeThrough(textDecoder()).getReader();
  const events: { id: string; html: string }[] = [];
  let heartbeats = 0;
  let buffer = "";
  const done = (async () => {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buffer += value;
      let end;
      while ((end = buffer.indexOf("\n\n")) >= 0) {
        const lines = buffer.slice(0, end).split("\n");
        buffer = buffer.slice(end + 2);
        if (lines.includes(": keep-alive")) heartbeats++;
        const id = lines.find((l) => l.startsWith("id: "))?.slice(4);
        if (!id || !lines.includes("event: entry")) continue;
        const html = lines.filter((l) => l.startsWith("data: "))
          .map((l) => l.slice(6)).join("\n");
        events.push({ id, html });
      }
    }
  })();
  return {
    events,
    /** Resolves once `count` events came; fails after 5 s. */
    async wait(count: number) {
      const until = Date.now() + 5000;
      while (events.length < count) {
        if (Date.now() > until) {
          throw new Error(`Only ${events.length} events within 5 s`);
        }
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
      return events;
    },
    /** Resolves once `count` more polls were answered (heartbeats). */
    async polls(count: number) {
      const target = heartbeats + count;
      const until = Date.now() + 5000;
      while (heartbeats < target) {
        if (Date.now() > until) throw new Error(`No ${count} polls within 5 s`);
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
    },
    async close() {
      await reader.cancel();
      await done;
    },
  };
}

/** Reads SSE events from a live tail answer until `count` entries came. */
async function readEvents(
  res: Response,
  count: number,
): Promise<{ id: string; html: string }[]> {
  const stream = collect(res);
  try {
    return [...await stream.wait(count)];
  } finally {
    await stream.close();
  }
}

dashboardTest(
  "live tail sends each settled entry once, with its id, and resumes after Last-Event-ID",
  async (h) => {
    const browser: Browser = await signIn(h.dash);
    const project = await h.project();
    const stored = await store(h, project.id, [{}, { level: "error" }, {}, {
      level: "error",
    }]);
    h.clock.advance(2000);
    const tail = `/projects/${project.id}/tail?after=${stored[0]!.id}`;
    const res = await browser.get(tail);
    assert.equal(
      res.headers.get("content-type"),
      "text/event-stream; charset=utf-8",
    );
    const stream = collect(res);
    let events;
    try {
      await stream.wait(3);
      await stream.polls(3);
      events = [...stream.events];
    } finally {
      await stream.close();
    }
    assert.deepEqual(
      events.map((e) => e.id),
      stored.slice(1).map((r) => r.id),
      "each once",
    );
    assert.deepEqual(
      rowIds(events[0]!.html),
      [stored[1]!.id],
      "the data is the rendered row",
    );

    const resumed = await browser.get(tail, {
      "last-event-id": stored[2]!.id,
    });
    assert.deepEqual((await readEvents(resumed, 1)).map((e) => e.id), [
      stored[3]!.id,
    ]);

    const errors = await browser.get(
      `/projects/${project.id}/tail?level=error&after=${stored[0]!.id}`,
    );
    assert.deepEqual((await readEvents(errors, 2)).map((e) => e.id), [
      stored[1]!.id,
      stored[3]!.id,
    ]);
  },
  EVERY_POLL,
);

signedInProjectTest(
  "live tail holds back an entry until it is settled",
  async (h, browser, project) => {
    const [first] = await store(h, project.id, [{}], 0);
    h.clock.advance(2000);
    const [, young] = await store(h, project.id, [{}], 0);
    const res = await browser.get(
      `/projects/${project.id}/tail?after=${first!.id}`,
    );
    const stream = collect(res);
    try {
      await stream.polls(3);
      assert.deepEqual(stream.events, [], "not settled yet: nothing sent");
      // Settled once received more than 1 s ago.
      h.clock.advance(1001);
      assert.deepEqual((await stream.wait(1)).map((e) => e.id), [young!.id]);
    } finally {
      await stream.close();
    }
  },
  EVERY_POLL,
);

signedInProjectTest(
  "a resume point older than the window starts at its edge: Last-Event-ID of 28 zeros does not replay the history",
  async (h, browser, project) => {
    const old = await store(h, project.id, [{}, {}, {}]);
    h.clock.advance(3_600_000);
    await store(h, project.id, [{}], 4 * 60_000);
    const recent = (await store(h, project.id, [{}], 2000)).slice(old.length);
    assert.equal(recent.length, 2);
    const res = await browser.get(`/projects/${project.id}/tail`, {
      "last-event-id": "0".repeat(28),
    });
    const stream = collect(res);
    try {
      await stream.wait(2);
      await stream.polls(3);
      assert.deepEqual(
        stream.events.map((e) => e.id),
        recent.map((r) => r.id),
        "the last 5 minutes only, not the hour-old entries",
      );
    } finally {
      await stream.close();
    }
  },
  EVERY_POLL,
);

dashboardTest(
  "mounted under /dashboard/, the dashboard links, redirects and scopes cookies there",
  async (h) => {
    const service = new Hono();
    service.notFound(() => new Response("service"));
    mountDashboard(service, { kv: h.kv, password: PASSWORD, now: h.clock.now });
    const serve = (path: string, init: RequestInit = {}) =>
      Promise.resolve(
        service.request(`http://localhost${path}`, init, {
          remoteAddr: PEER.remoteAddr,
        }),
      );
    assert.equal(await (await serve("/api/v1/logs")).text(), "service");
    assert.equal(await (await serve("/dashboards")).text(), "service");
    assert.equal(await (await serve("/x/dashboard/")).text(), "service");
    const bare = await serve("/dashboard");
    assert.equal(bare.status, 301);
    assert.equal(bare.headers.get("location"), "/dashboard/");
    const home = await serve("/dashboard/");
    assert.equal(
      home.headers.get("location"),
      "/dashboard/login?next=%2Fdashboard%2F",
    );
    const app = {
      request: (path: string, init?: RequestInit) => serve(path, init),
    };
    const signedIn = await submitLogin(app as never, PASSWORD, {
      base: "/dashboard",
    });
    assert.equal(signedIn.headers.get("location"), "/dashboard/");
    const line = signedIn.headers.getSetCookie().find((c) =>
      c.startsWith("dash_session=")
    )!;
    assert.match(line, /; Path=\/dashboard\//);
    const cookie = `dash_session=${setCookies(signedIn)["dash_session"]}`;
    const page = await (await serve("/dashboard/", { headers: { cookie } }))
      .text();
    const urls = [...page.matchAll(/(?:href|action|src)="([^"]+)"/g)].map((m) =>
      m[1]!
    )
      .filter((u) => !u.startsWith("data:"));
    assert.ok(urls.length > 3);
    for (const url of urls) assert.match(url, /^\/dashboard\//, url);
  },
);

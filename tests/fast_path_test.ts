/**
 * The server's fast path for POST /api/v1/logs (routes/logs.ts
 * logsFastPath): it answers every request exactly as the app does, stores
 * what the app would store, and hands everything else to the app.
 */
import assert from "node:assert/strict";
import { createApp, LOGS_PATH } from "../app.ts";
import { ErrorLog } from "../routes/error_log.ts";
import { logsFastPath } from "../routes/logs.ts";
import type { Admission } from "../routes/logs.ts";
import { rateLimited } from "../routes/rate_limit/mod.ts";
import type { GroupCommitter } from "../queue/producer.ts";
import { harness, pendingBatches, randomEntry } from "./_helpers.ts";

const info = {
  remoteAddr: { transport: "tcp" as const, hostname: "203.0.113.7", port: 1 },
  completed: Promise.resolve(),
};

/** What a client sees of an answer. */
async function seen(res: Response) {
  return {
    status: res.status,
    body: await res.text(),
    headers: [...res.headers],
  };
}

const ORIGIN = "https://app.example.com";

/** Requests covering every answer of the endpoint and the paths around it. */
function requests(): [string, () => Request][] {
  const url = `http://127.0.0.1${LOGS_PATH}`;
  const post = (body: string, headers: Record<string, string> = {}) =>
    new Request(url, {
      method: "POST",
      body,
      headers: {
        "Content-Type": "application/json",
        Origin: ORIGIN,
        ...headers,
      },
    });
  return [
    ["a valid entry", () => post(JSON.stringify(randomEntry()))],
    ["a valid entry, no Origin", () =>
      new Request(url, {
        method: "POST",
        body: JSON.stringify(randomEntry()),
        headers: { "Content-Type": "text/plain" },
      })],
    ["a query string", () =>
      new Request(`${url}?x=1`, {
        method: "POST",
        body: JSON.stringify(randomEntry()),
        headers: { "Content-Type": "application/json" },
      })],
    [
      "another media type",
      () => post("{}", { "Content-Type": "application/xml" }),
    ],
    ["not JSON", () => post("{oops")],
    ["a repeated member", () => post('{"level":"info","level":"error"}')],
    ["invalid fields", () => post('{"level":"INFO","data":[]}')],
    [
      "too large",
      () => post(JSON.stringify(randomEntry({ pad: "x".repeat(5000) }))),
    ],
    [
      "OPTIONS",
      () =>
        new Request(url, { method: "OPTIONS", headers: { Origin: ORIGIN } }),
    ],
    ["GET", () => new Request(url, { headers: { Origin: ORIGIN } })],
    ["another path", () =>
      new Request("http://127.0.0.1/api/v1/other", {
        method: "POST",
        body: "{}",
      })],
    ["a trailing slash", () =>
      new Request(`${url}/`, {
        method: "POST",
        body: JSON.stringify(randomEntry()),
        headers: { "Content-Type": "application/json" },
      })],
  ];
}

Deno.test("the fast path answers every request as the app does, and queues what the app queues", async () => {
  const h = await harness({ config: { maxBodyBytes: 4096 } });
  const fast = logsFastPath({
    producer: h.pipeline.producer,
    maxBodyBytes: 4096,
    now: h.clock.now,
    path: LOGS_PATH,
    errorLog: new ErrorLog(),
  }, (req, i) => h.app.fetch(req, { remoteAddr: i.remoteAddr }));
  try {
    for (const [what, make] of requests()) {
      const viaApp = await seen(
        await h.app.fetch(make(), { remoteAddr: info.remoteAddr }),
      );
      const viaFast = await seen(await fast(make(), info));
      // Receipt ids differ; the answers must not.
      assert.deepEqual(viaFast, viaApp, what);
    }
    await h.pipeline.producer.flush();
    const counts = (await pendingBatches(h.kv)).map((b) => b.header.count);
    // The three valid entries, once by each path; the trailing slash is
    // the app's to judge, and it refuses it by both paths.
    assert.equal(counts.reduce((a, b) => a + b, 0), 6);
  } finally {
    await h.close();
  }
});

Deno.test("the fast path answers a refused admission and an unexpected error as the app does, and logs the error", async () => {
  const refuse: Admission = {
    admit() {
      throw rateLimited(3, 50);
    },
  };
  const failing = {
    submit: () => Promise.reject(new TypeError("boom")),
  } as unknown as GroupCommitter;
  for (
    const [what, options] of [
      ["rate limited", { admission: refuse }],
      ["a producer that throws", { producer: failing }],
    ] as const
  ) {
    const logged: string[] = [];
    const errorLog = new ErrorLog({ write: (line) => logged.push(line) });
    const h = await harness();
    const routeOptions = {
      producer: h.pipeline.producer,
      maxBodyBytes: 65536,
      errorLog,
      ...options,
    };
    const app = createApp(routeOptions);
    const fast = logsFastPath(
      { ...routeOptions, path: LOGS_PATH },
      (req, i) => app.fetch(req, { remoteAddr: i.remoteAddr }),
    );
    const make = () =>
      new Request(`http://127.0.0.1${LOGS_PATH}`, {
        method: "POST",
        body: JSON.stringify(randomEntry()),
        headers: { "Content-Type": "application/json", Origin: ORIGIN },
      });
    try {
      const viaFast = await seen(await fast(make(), info));
      assert.equal(viaFast.status, what === "rate limited" ? 429 : 503, what);
      if (what !== "rate limited") {
        assert.equal(logged.length, 1, what);
        assert.match(logged[0]!, /TypeError: boom/, what);
      }
      const viaApp = await seen(
        await app.fetch(make(), { remoteAddr: info.remoteAddr }),
      );
      assert.deepEqual(viaFast, viaApp, what);
    } finally {
      await h.close();
    }
  }
});

/**
 * The dashboard's bounds, caused for real on sockets: a `Host` it does not
 * serve (DNS rebinding) refused standalone and mounted while the endpoint
 * beside it still takes entries, and a 200 MB chunked body posted to every
 * form refused once past the form limit, with the memory it cost measured.
 *
 * @module
 */
import assert from "node:assert/strict";
import type { DashboardOptions } from "../../dashboard/app.ts";
import { mountDashboard } from "../../dashboard/mount.ts";
import type { Project } from "../../db/projects.ts";
import { capturingErrors } from "../_helpers/console.ts";
import {
  EVENT_TIMEOUT_MS,
  randomEntry,
  withServed,
  withTimeout,
} from "../_helpers/harness.ts";
import {
  type DashHarness,
  PASSWORD,
  signedInTest,
  withDashboard,
} from "../_helpers/dashboard.ts";
import { postChunked, rawGet } from "../_helpers/raw_http.ts";

/**
 * Runs `fn` with the dashboard mounted beside the endpoint of a harness,
 * served on a port, and a project that allows the app's origin.
 */
async function withMounted(
  fn: (h: DashHarness, project: Project, port: number) => Promise<void>,
): Promise<void> {
  await withDashboard(async (h) => {
    const project = await h.project(["https://app.example.com"]);
    mountDashboard(h.app, { kv: h.kv, password: PASSWORD, now: h.clock.now });
    await withServed(
      (req, info) => h.app.fetch(req, info),
      (port) => fn(h, project, port),
    );
  });
}

/** Serves a dashboard with `options` on a harness's KV while `fn` runs with its port. */
async function withServedDashboard(
  options: Partial<DashboardOptions>,
  fn: (port: number) => Promise<void>,
): Promise<void> {
  await withDashboard(async (h) => {
    await withServed(
      (req, info) => h.dash.fetch(req, { remoteAddr: info.remoteAddr }),
      fn,
    );
  }, { dashboard: options });
}

Deno.test("a Host the dashboard does not serve is refused with 421, loopback names and the public host are served", async () => {
  await withServedDashboard(
    { publicHosts: ["logs.example.com"] },
    async (port) => {
      for (
        const host of [
          "evil.example",
          `evil.example:${port}`,
          "attacker.localhost.evil.example",
          "localhost.evil.example",
          "127.0.0.1.nip.io",
          "example.com@127.0.0.1",
          "",
          "logs.example.com.evil.example",
        ]
      ) {
        const res = await rawGet(port, "/login", host);
        assert.equal(res.status, 421, `Host: ${host}`);
        assert.match(res.body, /Misdirected request/);
        assert.match(res.body, /DASHBOARD_PUBLIC_HOST/);
        assert.doesNotMatch(
          res.head,
          /set-cookie/i,
          "no sign-in token given",
        );
      }
      for (
        const host of [
          `127.0.0.1:${port}`,
          `localhost:${port}`,
          "LOCALHOST",
          `[::1]:${port}`,
          "logs.example.com",
          "Logs.Example.COM:443",
        ]
      ) {
        const res = await rawGet(port, "/login", host);
        assert.equal(res.status, 200, `Host: ${host}`);
        assert.match(res.body, /id="login-form"/);
      }
    },
  );
});

Deno.test("the mounted dashboard refuses a foreign Host with 421 while the endpoint beside it accepts entries from any Host", async () => {
  await withMounted(async (h, project, port) => {
    const page = await rawGet(port, "/dashboard/login", "evil.example");
    assert.equal(page.status, 421);
    const ok = await rawGet(port, "/dashboard/login", `localhost:${port}`);
    assert.equal(ok.status, 200);
    // The endpoint: a POST with a foreign Host is taken as usual.
    const body = JSON.stringify(randomEntry({ projectId: project.id }));
    const conn = await Deno.connect({ hostname: "127.0.0.1", port });
    try {
      await conn.write(
        new TextEncoder().encode(
          `POST /api/v1/logs HTTP/1.1\r\nHost: evil.example\r\nOrigin: https://app.example.com\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`,
        ),
      );
      let text = "";
      const buffer = new Uint8Array(8192);
      for (;;) {
        const n = await conn.read(buffer);
        if (n === null) break;
        text += new TextDecoder().decode(buffer.subarray(0, n));
      }
      assert.match(text, /^HTTP\/1\.1 20[02] /);
    } finally {
      conn.close();
    }
    await h.process();
    assert.equal((await h.logs(project.id)).length, 1);
  });
});

/** Most the process may grow while a 200 MB form is refused. */
const FORM_RSS_BUDGET = 50 * 1024 * 1024;

signedInTest(
  "a 200 MB chunked body to every form is refused with 413 past the form limit, never read whole",
  async (h, browser) => {
    const project = await h.project(["https://app.example.com"]);
    await withServed(
      (req, info) => h.dash.fetch(req, { remoteAddr: info.remoteAddr }),
      async (port) => {
        const signedIn = {
          cookie: browser.cookie,
          origin: `http://127.0.0.1:${port}`,
          "sec-fetch-site": "same-origin",
        };
        const settings = `/projects/${project.id}/settings`;
        const forms: [string, Record<string, string>][] = [
          ["/login", { origin: `http://127.0.0.1:${port}` }],
          ["/logout", signedIn],
          ["/projects", signedIn],
          [`${settings}/allow`, signedIn],
          [`${settings}/disallow`, signedIn],
          [`${settings}/levels/add`, signedIn],
          [`${settings}/levels/remove`, signedIn],
          [`${settings}/retention`, signedIn],
          [`${settings}/rotate`, signedIn],
          [`${settings}/delete`, signedIn],
          [`/projects/${project.id}/rejections/replay`, signedIn],
          ["/dead-letters/replay", signedIn],
          // Not the upload, whose bodies it bounds itself: a path that only
          // ends like it, and a method without a form.
          [`/x/api/v1/projects/${project.id}/sourcemaps`, signedIn],
          ["OPTIONS /", signedIn],
        ];
        for (const [target, headers] of forms) {
          const [method, path] = target.startsWith("OPTIONS ")
            ? ["OPTIONS", target.slice(8)]
            : ["POST", target];
          const result = await postChunked(port, path, {
            totalBytes: 200 * 1024 * 1024,
            headers,
            method,
          });
          assert.equal(result.status, 413, `${method} ${path}`);
          assert.match(
            result.body,
            /Cannot accept a form of more than 65536 bytes/,
          );
          assert.ok(
            result.sent < 32 * 1024 * 1024,
            `${method} ${path}: ${result.sent} bytes sent before the answer`,
          );
          assert.ok(
            result.rssGrowth <= FORM_RSS_BUDGET,
            `${method} ${path}: RSS grew ${result.rssGrowth} bytes`,
          );
          console.log(
            `${method} ${path}: 413 after ${
              (result.sent / 1024).toFixed(0)
            } KiB sent, ${result.ms.toFixed(0)} ms, RSS +${
              (result.rssGrowth / 1048576).toFixed(1)
            } MB`,
          );
        }
        // The session still works: nothing of the refused forms was applied.
        const home = await h.dash.request("/", {
          headers: { cookie: browser.cookie },
        });
        assert.equal(home.status, 200);
      },
    );
  },
);

Deno.test("a form declaring a length past the limit is refused unread, and one within it is read", async () => {
  await withServedDashboard({ formLimitBytes: 2048 }, async (port) => {
    // 200 MB declared, none sent: the answer cannot wait for the body.
    const conn = await Deno.connect({ hostname: "127.0.0.1", port });
    try {
      await conn.write(
        new TextEncoder().encode(
          `POST /login HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 209715200\r\n\r\npassword=`,
        ),
      );
      const buffer = new Uint8Array(65536);
      const n = await conn.read(buffer);
      assert.match(
        new TextDecoder().decode(buffer.subarray(0, n ?? 0)),
        /^HTTP\/1\.1 413 /,
      );
    } finally {
      conn.close();
    }
    const big = await fetch(`http://127.0.0.1:${port}/login`, {
      method: "POST",
      headers: { "Content-Type": "application/x-www-form-urlencoded" },
      body: "password=" + "a".repeat(4000),
    });
    assert.equal(big.status, 413);
    assert.match(await big.text(), /more than 2048 bytes/);
    const small = await fetch(`http://127.0.0.1:${port}/login`, {
      method: "POST",
      headers: { "Content-Type": "application/x-www-form-urlencoded" },
      body: "password=" + "a".repeat(1000),
    });
    assert.equal(small.status, 403, "read, then refused for its token");
    await small.body?.cancel();
  });
});

Deno.test("the mounted dashboard refuses a 200 MB form with 413 while the endpoint beside it keeps answering", async () => {
  await withMounted(async (_h, project, port) => {
    const form = postChunked(port, "/dashboard/login", {
      totalBytes: 200 * 1024 * 1024,
      headers: { origin: `http://127.0.0.1:${port}` },
    });
    const entry = await fetch(`http://127.0.0.1:${port}/api/v1/logs`, {
      method: "POST",
      headers: {
        "Content-Type": "application/json",
        Origin: "https://app.example.com",
      },
      body: JSON.stringify(randomEntry({ projectId: project.id })),
    });
    assert.equal(entry.status, 200);
    await entry.body?.cancel();
    const result = await form;
    assert.equal(result.status, 413);
    assert.ok(result.sent < 32 * 1024 * 1024, `${result.sent} bytes sent`);
    assert.ok(
      result.rssGrowth <= FORM_RSS_BUDGET,
      `RSS +${result.rssGrowth}`,
    );
  });
});

/** A POST of `head` then part of its body on a raw socket, left open. */
async function postPart(port: number, path: string): Promise<Deno.Conn> {
  const conn = await Deno.connect({ hostname: "127.0.0.1", port });
  await conn.write(
    new TextEncoder().encode(
      `POST ${path} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 65000\r\n\r\npassword=`,
    ),
  );
  return conn;
}

Deno.test("a form that is not whole in time answers 408, and one its client cuts short logs nothing", async () => {
  const logged = await capturingErrors(async () => {
    await withServedDashboard({ bodyTimeMs: 200 }, async (port) => {
      for (
        const path of ["/login", "/nowhere", "/api/v1/projects/p/sourcemaps"]
      ) {
        const conn = await postPart(port, path);
        try {
          const buffer = new Uint8Array(65536);
          const n = await withTimeout(
            conn.read(buffer),
            EVENT_TIMEOUT_MS,
            `the answer to ${path}`,
          );
          const text = new TextDecoder().decode(buffer.subarray(0, n ?? 0));
          // The upload, without a token, is refused before its body is read.
          const status = path.endsWith("/sourcemaps") ? 401 : 408;
          assert.match(text, new RegExp(`^HTTP/1\\.1 ${status} `), path);
        } finally {
          conn.close();
        }
      }
      // Cut short: the client goes away part-way.
      for (let i = 0; i < 20; i++) (await postPart(port, "/login")).close();
      // A request after them is answered: the server saw them end.
      const res = await fetch(`http://127.0.0.1:${port}/login`);
      assert.equal(res.status, 200);
      await res.body?.cancel();
    });
  });
  assert.deepEqual(logged, []);
});

Deno.test("a Host header that makes no URL is answered 400 JSON on every path of the mounted dashboard, and nothing is logged", async () => {
  await withMounted(async (_h, project, port) => {
    const logged = await capturingErrors(async () => {
      for (const host of ["localhost:99999", "[::1", "127.0.0.1:abc"]) {
        for (
          const path of [
            "/dashboard/login",
            `/dashboard/api/v1/projects/${project.id}/logs`,
          ]
        ) {
          const res = await rawGet(port, path, host);
          assert.equal(res.status, 400, `${host} ${path}`);
          assert.match(JSON.parse(res.body).error, /Host header/);
        }
      }
    });
    assert.deepEqual(logged, []);
  });
});

/**
 * Dashboard sign-in and protection: the password, the per-address limit on
 * attempts, the session cookie and its server-side end, the refusal of
 * changes from other origins, the CSRF token, and the security headers.
 *
 * @module
 */
import assert from "node:assert/strict";
import { createDashboard } from "../../dashboard/app.ts";
import { safeNext } from "../../dashboard/routes/auth.ts";
import { dashboardSecretKey, dashboardSessionsPrefix } from "../../db/keys.ts";
import { listProjects } from "../../db/projects.ts";
import {
  csrfOf,
  dashboardTest,
  get,
  PASSWORD,
  PEER,
  post,
  setCookies,
  signedInTest,
  signIn,
  submitLogin,
  textOf,
  withDashboard,
  withSignedIn,
} from "../_helpers/dashboard.ts";

dashboardTest(
  "every page but sign-in sends a signed-out browser to /login",
  async (h) => {
    for (
      const path of [
        "/",
        "/projects/x",
        "/projects/x/settings",
        "/dead-letters",
      ]
    ) {
      const res = await h.dash.request(path, {}, PEER);
      assert.equal(res.status, 303, path);
      assert.equal(
        res.headers.get("location"),
        `/login?next=${encodeURIComponent(path)}`,
      );
    }
    const tail = await h.dash.request("/projects/x/tail", {}, PEER);
    assert.equal(tail.status, 401);
    await tail.body?.cancel();
  },
);

dashboardTest(
  "a wrong password is refused with 401 and sets no session",
  async (h) => {
    const res = await submitLogin(h.dash, "wrong password");
    assert.equal(res.status, 401);
    assert.match(textOf(await res.text()), /Wrong email or password/);
    assert.equal(setCookies(res)["dash_session"], undefined);
  },
);

dashboardTest(
  "the right password sets an HttpOnly, SameSite=Strict, expiring session cookie",
  async (h) => {
    const res = await submitLogin(h.dash, PASSWORD, { next: "/dead-letters" });
    assert.equal(res.status, 303);
    assert.equal(res.headers.get("location"), "/dead-letters");
    const line = res.headers.getSetCookie().find((c) =>
      c.startsWith("dash_session=")
    )!;
    assert.match(line, /; HttpOnly/);
    assert.match(line, /; SameSite=Strict/);
    assert.match(line, /; Max-Age=43200/);
    assert.match(line, /; Path=\//);
    assert.doesNotMatch(line, /Secure/, "no Secure flag over plain HTTP");
    const cookie = line.split(";")[0]!;
    const home = await h.dash.request("/", { headers: { cookie } }, PEER);
    assert.equal(home.status, 200);
  },
);

Deno.test("the session cookie is Secure over HTTPS", async () => {
  await withDashboard(async (h) => {
    const form = await h.dash.request(
      "https://dash.example.com/login",
      {},
      PEER,
    );
    const token = setCookies(form)["dash_login"]!;
    assert.match(form.headers.getSetCookie()[0]!, /; Secure/);
    const res = await h.dash.request("https://dash.example.com/login", {
      method: "POST",
      headers: {
        cookie: `dash_login=${token}`,
        origin: "https://dash.example.com",
      },
      body: new URLSearchParams({
        _csrf: csrfOf(await form.text()),
        password: PASSWORD,
      }),
    }, PEER);
    assert.equal(res.status, 303);
    const line = res.headers.getSetCookie().find((c) =>
      c.startsWith("dash_session=")
    )!;
    assert.match(line, /; Secure/);
    assert.equal(
      res.headers.get("strict-transport-security"),
      "max-age=31536000",
    );
  }, { dashboard: { publicHosts: ["dash.example.com"] } });
});

dashboardTest("sign-in without the form's token is refused", async (h) => {
  const res = await h.dash.request("/login", {
    method: "POST",
    body: new URLSearchParams({ password: PASSWORD }),
  }, PEER);
  assert.equal(res.status, 403);
  assert.equal(setCookies(res)["dash_session"], undefined);
});

dashboardTest("sign-in attempts are limited per address", async (h) => {
  for (let i = 0; i < 5; i++) {
    assert.equal((await submitLogin(h.dash, "guess " + i)).status, 401);
  }
  const limited = await submitLogin(h.dash, PASSWORD);
  assert.equal(limited.status, 429, "even the right password waits");
  assert.equal(limited.headers.get("retry-after"), "12");
  assert.match(
    textOf(await limited.text()),
    /Too many attempts: try again in 12 s/,
  );
  const other = {
    remoteAddr: {
      transport: "tcp" as const,
      hostname: "203.0.113.50",
      port: 1,
    },
  };
  assert.equal(
    (await submitLogin(h.dash, PASSWORD, { peer: other })).status,
    303,
  );
  h.clock.advance(12_000);
  assert.equal((await submitLogin(h.dash, PASSWORD)).status, 303);
});

signedInTest(
  "a tampered or expired session cookie signs nobody in",
  async (h, browser) => {
    const [id, expiry, mac] = browser.cookie.slice("dash_session=".length)
      .split(".");
    const later = (parseInt(expiry!, 36) + 3_600_000).toString(36);
    const forged = `dash_session=${id}.${later}.${mac}`;
    assert.equal(
      (await h.dash.request("/", { headers: { cookie: forged } }, PEER)).status,
      303,
    );
    assert.equal((await browser.get("/")).status, 200);
    h.clock.advance(12 * 3_600_000);
    assert.equal((await browser.get("/")).status, 303);
  },
);

signedInTest(
  "signing out ends the session on the server, whoever holds the cookie",
  async (h, browser) => {
    const other = await signIn(h.dash);
    const res = await browser.post("/logout", {});
    assert.equal(res.status, 303);
    assert.equal(res.headers.get("location"), "/login?done=out");
    assert.match(
      res.headers.getSetCookie().join("\n"),
      /dash_session=; Max-Age=0/,
    );
    assert.equal((await browser.get("/")).status, 303, "old cookie refused");
    assert.equal((await other.get("/")).status, 200, "other sessions go on");
  },
);

signedInTest(
  "changing ADMIN_PASSWORD ends every session",
  async (h, browser) => {
    const renewed = createDashboard({
      kv: h.kv,
      password: "another password",
      now: h.clock.now,
    });
    assert.equal((await get(renewed, browser, "/")).status, 303);
  },
);

dashboardTest(
  "the dashboard stores its secret and sessions as bytes",
  async (h) => {
    await signIn(h.dash);
    const secret = await h.kv.get(dashboardSecretKey());
    assert.ok(secret.value instanceof Uint8Array);
    assert.equal((secret.value as Uint8Array).length, 32);
    const sessions = await Array.fromAsync(
      h.kv.list({ prefix: dashboardSessionsPrefix() }),
    );
    assert.equal(sessions.length, 1);
    assert.ok(sessions[0]!.value instanceof Uint8Array);
  },
);

Deno.test("a change sent from another origin is refused with 403 and changes nothing", async (t) => {
  await withSignedIn(async (h, browser) => {
    const cases: [string, Record<string, string>][] = [
      ["Origin of another site", {
        origin: "https://evil.example",
        "sec-fetch-site": "cross-site",
      }],
      ["Origin only", { origin: "https://evil.example", "sec-fetch-site": "" }],
      ["Sec-Fetch-Site only", {
        origin: "http://localhost",
        "sec-fetch-site": "same-site",
      }],
      ["opaque origin", { origin: "null", "sec-fetch-site": "" }],
    ];
    for (const [name, headers] of cases) {
      await t.step(name, async () => {
        const clean = Object.fromEntries(
          Object.entries(headers).filter(([, v]) => v !== ""),
        );
        const res = await h.dash.request("/projects", {
          method: "POST",
          headers: { cookie: browser.cookie, ...clean },
          body: new URLSearchParams({ _csrf: browser.csrf, name: "Evil" }),
        }, PEER);
        assert.equal(res.status, 403);
        assert.match(
          textOf(await res.text()),
          /Cannot accept a change sent from/,
        );
      });
    }
    const logout = await h.dash.request("/logout", {
      method: "POST",
      headers: { cookie: browser.cookie, origin: "https://evil.example" },
      body: new URLSearchParams({ _csrf: browser.csrf }),
    }, PEER);
    assert.equal(logout.status, 403);
    assert.deepEqual(await listProjects(h.kv), []);
    assert.equal((await browser.get("/")).status, 200, "still signed in");
  });
});

signedInTest(
  "a form without the session's CSRF token is refused with 403",
  async (h, browser) => {
    const other = await signIn(h.dash);
    for (const csrf of ["", other.csrf, browser.csrf.slice(1)]) {
      const res = await post(h.dash, { ...browser, csrf }, "/projects", {
        name: "X",
      });
      assert.equal(res.status, 403);
    }
    assert.deepEqual(await listProjects(h.kv), []);
  },
);

signedInTest(
  "every page carries a CSP whose nonce is on each script, fresh per answer",
  async (h, browser) => {
    const nonces = new Set<string>();
    for (const path of ["/login", "/", "/dead-letters", "/nowhere"]) {
      const res = path === "/login"
        ? await h.dash.request(path, {}, PEER)
        : await browser.get(path);
      const csp = res.headers.get("content-security-policy")!;
      const nonce = /script-src 'nonce-([^']+)' 'strict-dynamic'/.exec(csp)
        ?.[1];
      assert.ok(nonce, `${path}: ${csp}`);
      // 128 random bits in base64url, all of them kept.
      assert.match(nonce, /^[A-Za-z0-9_-]{22}$/);
      assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval/);
      assert.match(csp, /default-src 'none'/);
      assert.match(csp, /frame-ancestors 'none'/);
      nonces.add(nonce);
      const html = await res.text();
      const scripts = html.match(/<script[^>]*>/g) ?? [];
      assert.ok(scripts.length >= 1, path);
      for (const tag of scripts) {
        assert.match(tag, new RegExp(`nonce="${nonce}"`));
        assert.match(tag, /src="\/assets\//, "no inline script");
      }
      assert.doesNotMatch(html, /\son[a-z]+="/, "no inline event handler");
      assert.doesNotMatch(html, /\sstyle="/, "no inline style");
      assert.equal(res.headers.get("x-content-type-options"), "nosniff");
      assert.equal(res.headers.get("x-frame-options"), "DENY");
      assert.equal(res.headers.get("cache-control"), "no-store");
    }
    assert.equal(nonces.size, 4);
  },
);

Deno.test("after sign-in the browser goes only to a path of the dashboard", () => {
  assert.equal(safeNext("", "/projects/abc?q=x"), "/projects/abc?q=x");
  assert.equal(safeNext("", "//evil.example/"), "/");
  assert.equal(safeNext("", "https://evil.example/"), "/");
  assert.equal(safeNext("", "/\\evil.example"), "/");
  assert.equal(safeNext("/dashboard", "/other"), "/dashboard/");
  assert.equal(
    safeNext("/dashboard", "/dashboard/projects/a"),
    "/dashboard/projects/a",
  );
  assert.equal(safeNext("", undefined), "/");
});

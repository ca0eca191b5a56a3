/**
 * The dashboard's configuration and what it sends: its variables and their
 * defaults, the refusal to start without `ADMIN_PASSWORD`, and the size and
 * caching of its scripts and stylesheet.
 *
 * @module
 */
import assert from "node:assert/strict";
import { gunzipSync } from "node:zlib";
import { ASSET_FILES, loadAssets } from "../../dashboard/assets.ts";
import {
  dashboardBounds,
  DashboardConfigError,
  dashboardRequested,
  loadDashboardConfig,
} from "../../dashboard/config.ts";
import { signedInTest } from "../_helpers/dashboard.ts";

/** What the pages may send at most, scripts and stylesheet gzipped together. */
const BUDGET_BYTES = 50 * 1024;

Deno.test("loadDashboardConfig gives the documented defaults and reads KV_PATH as the service does", () => {
  const config = loadDashboardConfig({ ADMIN_PASSWORD: "long enough" });
  assert.deepEqual(config, {
    mounted: false,
    hostname: "127.0.0.1",
    port: 8001,
    password: "long enough",
    kvPath: "./data/kv.sqlite",
    servicePort: 8000,
    publicHosts: [],
    formLimitBytes: 65536,
    tailLimits: { total: 64, perSession: 4, perAccount: 8 },
  });
  const custom = loadDashboardConfig({
    ADMIN_PASSWORD: "long enough",
    DASHBOARD: "on",
    DASHBOARD_HOSTNAME: "0.0.0.0",
    DASHBOARD_PORT: "9001",
    KV_PATH: "https://api.deno.com/databases/x/connect",
    PORT: "9000",
  });
  assert.equal(custom.mounted, true);
  assert.equal(custom.hostname, "0.0.0.0");
  assert.equal(custom.port, 9001);
  assert.equal(custom.kvPath, "https://api.deno.com/databases/x/connect");
  assert.equal(custom.servicePort, 9000);
  assert.equal(dashboardRequested({ DASHBOARD: "on" }), true);
  assert.equal(dashboardRequested({}), false);
});

Deno.test("loadDashboardConfig reads the dashboard's bounds and names a malformed one", () => {
  const config = loadDashboardConfig({
    ADMIN_PASSWORD: "long enough",
    DASHBOARD_PUBLIC_HOST: "logs.example.com, ops.example.com:8443",
    DASHBOARD_FORM_BYTES: "8192",
    DASHBOARD_TAILS: "10",
    DASHBOARD_TAILS_PER_SESSION: "2",
    DASHBOARD_TAILS_PER_ACCOUNT: "3",
  });
  assert.deepEqual(dashboardBounds(config), {
    publicHosts: ["logs.example.com", "ops.example.com:8443"],
    formLimitBytes: 8192,
    tailLimits: { total: 10, perSession: 2, perAccount: 3 },
  });
  for (
    const [name, value] of [
      ["DASHBOARD_PUBLIC_HOST", "https://logs.example.com/"],
      ["DASHBOARD_FORM_BYTES", "12"],
      ["DASHBOARD_TAILS", "0"],
      ["DASHBOARD_TAILS_PER_SESSION", "many"],
      ["DASHBOARD_TAILS_PER_ACCOUNT", "0"],
    ]
  ) {
    assert.throws(
      () =>
        loadDashboardConfig({ ADMIN_PASSWORD: "long enough", [name!]: value }),
      (error) =>
        error instanceof DashboardConfigError &&
        error.message.startsWith(`Cannot read "${name}"`),
    );
  }
});

Deno.test("without ADMIN_PASSWORD the dashboard refuses to start, in one line", () => {
  for (const env of [{}, { ADMIN_PASSWORD: "" }, { DASHBOARD: "on" }]) {
    assert.throws(() => loadDashboardConfig(env), (error) => {
      assert.ok(error instanceof DashboardConfigError);
      assert.equal(
        error.message,
        'Cannot start the dashboard: set "ADMIN_PASSWORD" (at least 8 characters); there is no default',
      );
      return true;
    });
  }
  assert.throws(
    () => loadDashboardConfig({ ADMIN_PASSWORD: "short" }),
    /^DashboardConfigError: Cannot read "ADMIN_PASSWORD": expected at least 8 characters$/,
  );
  assert.throws(
    () =>
      loadDashboardConfig({
        ADMIN_PASSWORD: "long enough",
        DASHBOARD_PORT: "x",
      }),
    /Cannot read "DASHBOARD_PORT"/,
  );
  assert.throws(
    () =>
      loadDashboardConfig({ ADMIN_PASSWORD: "long enough", DASHBOARD: "yes" }),
    /Cannot read "DASHBOARD"/,
  );
  assert.throws(
    () => loadDashboardConfig({ ADMIN_PASSWORD: "long enough", PORT: "-1" }),
    /Cannot read "PORT"/,
  );
});

Deno.test("the scripts and stylesheet the pages send weigh at most 50 KB gzipped", () => {
  const assets = [...loadAssets().values()];
  assert.deepEqual(assets.map((a) => a.name), [...ASSET_FILES]);
  const gzipped = assets.reduce((n, a) => n + a.gzip.length, 0);
  const raw = assets.reduce((n, a) => n + a.body.length, 0);
  console.log(
    `Dashboard assets: ${raw} bytes, ${gzipped} bytes gzipped (budget ${BUDGET_BYTES})`,
  );
  assert.ok(gzipped <= BUDGET_BYTES, `${gzipped} bytes gzipped`);
  for (const asset of assets) {
    assert.deepEqual(new Uint8Array(gunzipSync(asset.gzip)), asset.body);
  }
});

signedInTest(
  "assets are served gzipped, cached for good under their hash, and referenced by the pages",
  async (h, browser) => {
    const page = await (await browser.get("/dead-letters")).text();
    const urls = [...page.matchAll(/(?:href|src)="(\/assets\/[^"]+)"/g)].map((
      m,
    ) => m[1]!);
    assert.deepEqual(urls.map((u) => u.split("?")[0]), [
      "/assets/app.css",
      "/assets/forms.css",
      "/assets/app.js",
    ]);
    for (const url of urls) {
      const res = await h.dash.request(url, {
        headers: { "accept-encoding": "gzip, br" },
      });
      assert.equal(res.status, 200, url);
      assert.equal(res.headers.get("content-encoding"), "gzip");
      assert.equal(
        res.headers.get("cache-control"),
        "public, max-age=31536000, immutable",
      );
      assert.match(
        res.headers.get("content-type")!,
        /^text\/(css|javascript); charset=utf-8$/,
      );
      await res.body?.cancel();
    }
    const plain = await h.dash.request("/assets/app.js");
    assert.equal(plain.headers.get("content-encoding"), null);
    assert.equal(
      plain.headers.get("cache-control"),
      "no-cache",
      "no hash: revalidate",
    );
    assert.match(await plain.text(), /data-copy/);
    assert.equal((await h.dash.request("/assets/nothing.js")).status, 404);
  },
);

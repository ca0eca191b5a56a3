/**
 * What the client library adds to `device`: the browser's name and OS,
 * user agent, language, viewport and page URL, the server's runtime, OS and
 * host name, the logger's own `device` over them, and nothing with
 * `deviceContext: false`. In Chromium too (skipped without it).
 *
 * @module
 */
import assert from "node:assert/strict";
import {
  browserContext,
  deviceOf,
  serverContext,
} from "../../client/context.ts";
import { hasChromium, launchBrowser } from "../_helpers/browser.ts";
import { fakeLogger } from "../_helpers/client_logger.ts";
import { startServer } from "../_helpers/client_server.ts";

const BROWSER = {
  document: {},
  navigator: {
    userAgent: "Mozilla/5.0 Test",
    platform: "Linux x86_64",
    language: "fr-FR",
    userAgentData: { platform: "Linux" },
  },
  innerWidth: 390,
  innerHeight: 844,
  location: {
    origin: "https://shop.example.com",
    pathname: "/cart",
    search: "?token=secret",
  },
};

Deno.test("in a browser, device gets browser, OS, user agent, language, viewport and the page URL without its query", () => {
  assert.deepEqual(browserContext(BROWSER), {
    os: "Linux",
    userAgent: "Mozilla/5.0 Test",
    language: "fr-FR",
    viewport: "390x844",
    url: "https://shop.example.com/cart",
  });
});

Deno.test("the browser and OS are named from the user agent, whichever brand it also mentions", async (t) => {
  const cases: [string, string, string][] = [
    [
      "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36 Edg/131.0.0.0",
      "Edge 131",
      "Windows",
    ],
    [
      "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Safari/605.1.15",
      "Safari 18",
      "macOS",
    ],
    [
      "Mozilla/5.0 (iPhone; CPU iPhone OS 18_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Mobile/15E148 Safari/604.1",
      "Safari 18",
      "iOS",
    ],
    [
      "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Mobile Safari/537.36",
      "Chrome 131",
      "Android",
    ],
    [
      "Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0",
      "Firefox 133",
      "Linux",
    ],
  ];
  for (const [userAgent, browser, os] of cases) {
    await t.step(browser + " on " + os, () => {
      const device = browserContext({ document: {}, navigator: { userAgent } });
      assert.equal(device.browser, browser);
      assert.equal(device.os, os);
    });
  }
});

Deno.test("on a server, device gets runtime, OS and host name, each when it can be read", () => {
  assert.deepEqual(
    serverContext({
      process: {
        versions: { node: "22.1.0" },
        platform: "linux",
        arch: "x64",
        env: { HOSTNAME: "api-1" },
      },
    }),
    { runtime: "node 22.1.0", os: "linux x64", host: "api-1" },
  );
  assert.deepEqual(
    serverContext({ Bun: { version: "1.2.0" }, process: { env: {} } }),
    { runtime: "bun 1.2.0" },
  );
  const deno = serverContext(globalThis);
  assert.equal(deno.runtime, `deno ${Deno.version.deno}`);
  assert.equal(deno.os, `${Deno.build.os} ${Deno.build.arch}`);
  // This test runs with --allow-sys? Then the host name is read, else left out.
  const granted =
    Deno.permissions.querySync({ name: "sys", kind: "hostname" }).state ===
      "granted";
  assert.equal(deno.host, granted ? Deno.hostname() : undefined);
});

Deno.test("the logger's own device goes over the context, a device string is sent as it is, and deviceContext false adds nothing", () => {
  assert.deepEqual(deviceOf(BROWSER, true, { language: "en", app: "shop" })(), {
    ...browserContext(BROWSER),
    language: "en",
    app: "shop",
  });
  assert.equal(deviceOf(BROWSER, true, "kiosk-7")(), "kiosk-7");
  assert.equal(deviceOf(BROWSER, false, undefined)(), undefined);
  assert.deepEqual(deviceOf(BROWSER, false, { app: "shop" })(), {
    app: "shop",
  });
});

Deno.test("a logger in Deno sends its runtime and OS in device, and none with deviceContext false", async () => {
  for (const deviceContext of [true, false]) {
    const { time, net, logger } = fakeLogger({
      deviceContext,
      device: { app: "billing" },
    });
    logger.info("Started");
    await time.advance(0);
    const body = JSON.parse(net.calls[0]!.body);
    assert.deepEqual(
      body.device,
      deviceContext
        ? { ...serverContext(globalThis), app: "billing" }
        : { app: "billing" },
    );
    await logger.close();
  }
});

const PAGE = `<!doctype html><meta charset="utf-8"><title>Shop</title>
<script type="module">
  import * as client from "/logger.js";
  window.client = client;
  window.ready = true;
</script>`;

Deno.test({
  name:
    "in Chromium, the browser client adds browser, OS, user agent, language, viewport and page URL to device",
  ignore: !hasChromium(),
  async fn() {
    const server = await startServer({ rps: 1000, burst: 1000 });
    const pages = Deno.serve(
      { port: 0, hostname: "127.0.0.1", onListen() {} },
      async (req) =>
        new URL(req.url).pathname === "/logger.js"
          ? new Response(
            await Deno.readFile(
              new URL("../../client/dist/logger.js", import.meta.url),
            ),
            { headers: { "Content-Type": "text/javascript" } },
          )
          : new Response(PAGE, { headers: { "Content-Type": "text/html" } }),
    );
    const origin = `http://127.0.0.1:${pages.addr.port}`;
    const browser = await launchBrowser();
    try {
      const project = await server.h.project([origin]);
      const page = await browser.newPage();
      page.setDefaultTimeout(10_000);
      await page.setViewport({ width: 800, height: 600 });
      await page.goto(`${origin}/checkout?token=secret#step-2`);
      await page.waitForFunction("window.ready === true");
      const userAgent = await page.evaluate(() => navigator.userAgent);
      await page.evaluate(
        async (endpoint, projectId) => {
          // deno-lint-ignore no-explicit-any
          const { client } = globalThis as any;
          const logger = client.createLogger({ endpoint, projectId });
          logger.info("With context");
          const quiet = client.createLogger({
            endpoint,
            projectId,
            deviceContext: false,
          });
          quiet.info("Without context");
          await logger.flush(5000);
          await quiet.flush(5000);
        },
        server.endpoint,
        project.id,
      );
      const logs = await server.stored(project.id, 2);
      const withContext = logs.find((l) => l.data.title === "With context")!;
      const device = withContext.device as Record<string, string>;
      assert.equal(device.userAgent, userAgent);
      assert.equal(device.viewport, "800x600");
      assert.equal(device.url, `${origin}/checkout`);
      assert.match(device.language ?? "", /^[a-z]{2}/);
      assert.match(device.browser ?? "", /^Chrome \d+$/);
      assert.ok((device.os ?? "") !== "", "an OS is sent");
      const without = logs.find((l) => l.data.title === "Without context")!;
      assert.deepEqual(without.device, {});
    } finally {
      await browser.close();
      await pages.shutdown();
      await server.close();
    }
  },
});

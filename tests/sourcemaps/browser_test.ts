/**
 * A real minified bundle (built by `deno bundle --minify`) throws in
 * headless Chromium; the client library captures the error and sends it
 * over HTTP with its release; the bundle's map was uploaded for that
 * release, so the error group's top frame is the original function and
 * `file:line`, not the minified one.
 *
 * Skipped, with a message, where Chromium is not installed.
 *
 * @module
 */
import assert from "node:assert/strict";
import { listGroups } from "../../db/error_group_reads.ts";
import { uploadSourceMap } from "../../db/sourcemaps.ts";
import { entryTopFrame } from "../../db/symbolicate.ts";
import * as chromium from "../_helpers/browser.ts";
import { buildBundle } from "../_helpers/bundle.ts";
import { startServer } from "../_helpers/client_server.ts";

const PAGE = chromium.capturingPage(
  "Checkout",
  `await import("/assets/app.min.js");
  setTimeout(() => globalThis.pay(), 0);`,
  { context: { release: "3.2.1" } },
);

if (!chromium.hasChromium()) {
  console.log(
    `Skipping the source map browser test: no Chromium at ${chromium.chromiumPath()} (set CHROMIUM_PATH)`,
  );
}

Deno.test({
  name:
    "in Chromium, an error thrown by a minified bundle groups by its original function and file:line once its map is uploaded",
  ignore: !chromium.hasChromium(),
  async fn() {
    const bundle = await buildBundle();
    const server = await startServer({ rps: 10_000, burst: 10_000 });
    const pages = chromium.servePages({
      "/assets/app.min.js": { body: bundle.js, type: "text/javascript" },
    }, { body: PAGE, type: "text/html" });
    const { origin } = pages;
    const browser = await chromium.launchBrowser();
    try {
      const project = await server.h.project([origin]);
      await uploadSourceMap(server.h.kv, {
        projectId: project.id,
        release: "3.2.1",
        url: "~/assets/app.min.js",
        bytes: new TextEncoder().encode(bundle.map),
        now: Date.now(),
      });
      const page = await browser.newPage();
      page.setDefaultTimeout(10_000);
      const query = new URLSearchParams({
        endpoint: server.endpoint,
        projectId: project.id,
      });
      await page.goto(`${origin}/?${query}`);
      const [entry] = await server.stored(project.id, 1);
      assert.ok(entry, "the error arrived");
      assert.match(String(entry.data.stack), /app\.min\.js:1:\d+/);
      const [group] = await listGroups(server.h.kv, project.id, Date.now());
      assert.equal(group!.topFrame, "src/cart.js:checkout");
      const frame = await entryTopFrame(server.h.kv, project.id, entry);
      assert.deepEqual(
        [frame!.function, `${frame!.file}:${frame!.line}`],
        ["checkout", "src/cart.js:3"],
      );
    } finally {
      await browser.close();
      await pages.close();
      await server.close();
    }
  },
});

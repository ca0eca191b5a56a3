/**
 * Credentialed browser requests in a real headless Chromium: a page served
 * from one local origin sends an entry with `fetch(url, { credentials:
 * "include" })` and one with `navigator.sendBeacon` of a JSON `Blob` to the
 * service on another port. Both are CORS requests in credentials mode with a
 * preflight; both entries must be stored, authorized by their origin.
 * Skipped when Chromium is not installed (`CHROMIUM_PATH`).
 */
import assert from "node:assert/strict";
import { hasChromium, launchBrowser } from "../_helpers/browser.ts";
import { harness, serve } from "../_helpers/harness.ts";
import { within } from "../_helpers/timeout.ts";

Deno.test({
  name:
    "a credentialed fetch and a JSON beacon from a page on another origin are both stored",
  ignore: !hasChromium(),
  async fn() {
    const h = await harness();
    const page = serve(
      () =>
        new Response("<!doctype html><title>shop</title><p>shop</p>", {
          headers: { "Content-Type": "text/html" },
        }),
    );
    const service = serve(
      (req, info) => h.app.fetch(req, { remoteAddr: info.remoteAddr }),
    );
    const pageOrigin = `http://127.0.0.1:${page.addr.port}`;
    const url = `http://127.0.0.1:${service.addr.port}/api/v1/logs`;
    const browser = await within(30_000, "Chromium to start", launchBrowser());
    try {
      const project = await h.project([pageOrigin]);
      const tab = await browser.newPage();
      tab.setDefaultTimeout(10_000);
      await tab.goto(pageOrigin);
      const result = await within(
        15_000,
        "the page's requests",
        tab.evaluate(
          async (url: string, projectId: string) => {
            const entry = (title: string) =>
              JSON.stringify({ level: "info", projectId, data: { title } });
            let fetched: string;
            try {
              const res = await fetch(url, {
                method: "POST",
                credentials: "include",
                headers: { "Content-Type": "application/json" },
                body: entry("from fetch"),
              });
              fetched = `${res.status} ${await res.text()}`;
            } catch (error) {
              fetched = `failed: ${error}`;
            }
            // Runs in the page: Deno's types lack the DOM's sendBeacon.
            const nav = navigator as unknown as {
              sendBeacon(url: string, data: Blob): boolean;
            };
            const beaconed = nav.sendBeacon(
              url,
              new Blob([entry("from beacon")], { type: "application/json" }),
            );
            return { fetched, beaconed };
          },
          url,
          project.id,
        ),
      );
      assert.equal(result.fetched, '200 {"status":"queued"}');
      assert.equal(result.beaconed, true);

      // The beacon is sent in the background: wait until it is stored.
      const logs = await within(
        15_000,
        "both entries stored",
        (async () => {
          for (;;) {
            await h.process();
            const stored = await h.logs(project.id);
            if (stored.length >= 2) return stored;
            await new Promise((r) => setTimeout(r, 50));
          }
        })(),
      );
      assert.deepEqual(
        logs.map((l) => (l.data as { title: string }).title).sort(),
        ["from beacon", "from fetch"],
      );
      for (const log of logs) {
        assert.equal(log.auth, "origin");
        assert.equal(log.origin, pageOrigin);
      }
    } finally {
      await browser.close();
      await page.shutdown();
      await service.shutdown();
      await h.close();
    }
  },
});

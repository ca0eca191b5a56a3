/**
 * The client library in headless Chromium: a page served from an allowed
 * origin (a second local server, so the origin differs from the service's)
 * loads the ESM build and sends entries, stored with `auth: origin`, with no
 * CORS preflight; 20 entries still queued when the page is left all arrive
 * (by beacon), as do 20 logged just before leaving with the defaults; and
 * uncaught errors and rejections are captured with their stacks.
 *
 * Skipped, with a message, where Chromium is not installed.
 */
import assert from "node:assert/strict";
import type { Page } from "puppeteer-core";
import {
  capturingPage,
  chromiumPath,
  hasChromium,
  launchBrowser,
  servePages,
} from "../_helpers/browser.ts";
import { type LiveServer, startServer } from "../_helpers/client_server.ts";

const PAGE = `<!doctype html>
<meta charset="utf-8">
<title>Shop</title>
<script type="module">
  import * as client from "/logger.js";
  window.client = client;
  window.ready = true;
</script>`;

/** A page whose own script fails once the logger captures errors. */
const FAILING_PAGE = capturingPage(
  "Failing",
  `setTimeout(() => {
    throw new TypeError("Boom in page");
  }, 0);
  Promise.reject(new RangeError("Rejected in page"));`,
);

if (!hasChromium()) {
  console.log(
    `Skipping the browser tests: no Chromium at ${chromiumPath()} (set CHROMIUM_PATH)`,
  );
}

/** Serves the page, the ESM build and a page to navigate to. */
function serveShop(): { origin: string; close: () => Promise<void> } {
  return servePages({
    "/": { body: PAGE, type: "text/html" },
    "/failing": { body: FAILING_PAGE, type: "text/html" },
  }, { body: "<!doctype html><title>Next</title>", type: "text/html" });
}

/** Opens the page and waits until the library is loaded. */
async function openPage(page: Page, origin: string): Promise<void> {
  await page.goto(`${origin}/`);
  await page.waitForFunction("window.ready === true");
}

/** Stored entries of `projectId` whose `data.title` is `title`. */
async function storedTitled(
  server: LiveServer,
  projectId: string,
  total: number,
  title: string,
) {
  const logs = await server.stored(projectId, total);
  return logs.filter((log) => log.data.title === title);
}

Deno.test({
  name:
    "in Chromium, a page from an allowed origin delivers its entries, those queued when it is left too",
  ignore: !hasChromium(),
  async fn(t) {
    const methods: string[] = [];
    const types = new Set<string>();
    const server = await startServer({
      rps: 10_000,
      burst: 10_000,
      onRequest(req) {
        methods.push(req.method);
        types.add(req.headers.get("content-type") ?? "");
      },
    });
    const pages = serveShop();
    const browser = await launchBrowser();
    try {
      const project = await server.h.project([pages.origin]);
      const page = await browser.newPage();
      page.setDefaultTimeout(10_000);
      const args = [server.endpoint, project.id] as const;
      let total = 0;

      await t.step(
        "entries sent from the page are stored with auth origin, without preflight",
        async () => {
          await openPage(page, pages.origin);
          const flushed = await page.evaluate(async (endpoint, projectId) => {
            // deno-lint-ignore no-explicit-any
            const { client } = globalThis as any;
            const logger = client.createLogger({ endpoint, projectId });
            logger.info("Page loaded", undefined, { path: "/" });
            logger.warning("Slow image", "hero.jpg took 2.3 s");
            logger.error("Checkout failed", new Error("Card declined"));
            return await logger.flush(5000);
          }, ...args);
          assert.equal(flushed, true);
          total += 3;
          const logs = await server.stored(project.id, total);
          assert.equal(logs.length, 3);
          for (const log of logs) {
            assert.equal(log.auth, "origin");
            assert.equal(log.origin, pages.origin);
          }
          assert.deepEqual(logs.map((log) => log.level).sort(), [
            "error",
            "info",
            "warning",
          ]);
          assert.ok(!methods.includes("OPTIONS"), "no preflight");
          assert.deepEqual([...types], ["text/plain;charset=UTF-8"]);
        },
      );

      await t.step(
        "20 entries queued when the page is left are all stored, by beacon",
        async () => {
          await openPage(page, pages.origin);
          const queued = await page.evaluate((endpoint, projectId) => {
            // deno-lint-ignore no-explicit-any
            const { client } = globalThis as any;
            // One request in flight, never answered (a fetch that holds
            // it): the rest waits in the queue, with room in the bucket.
            const logger = client.createLogger({
              endpoint,
              projectId,
              concurrency: 1,
              fetch: () => new Promise(() => {}),
            });
            logger.info("Held");
            for (let i = 0; i < 20; i++) {
              logger.info("Queued", undefined, { i });
            }
            return logger.stats().queued;
          }, ...args);
          assert.equal(queued, 20);
          await page.goto(`${pages.origin}/next`);
          total += 20;
          const logs = await storedTitled(server, project.id, total, "Queued");
          assert.deepEqual(
            logs.map((log) => log.data.i).sort((a, b) => Number(a) - Number(b)),
            Array.from({ length: 20 }, (_, i) => i),
          );
          assert.ok(logs.every((log) => log.auth === "origin"));
        },
      );

      await t.step(
        "with the defaults, 20 entries logged just before leaving are all stored",
        async () => {
          await openPage(page, pages.origin);
          await Promise.all([
            page.waitForNavigation(),
            page.evaluate((endpoint, projectId) => {
              // deno-lint-ignore no-explicit-any
              const { client } = globalThis as any;
              const logger = client.createLogger({ endpoint, projectId });
              for (let i = 0; i < 20; i++) {
                logger.info("Leaving", undefined, { i });
              }
              location.href = "/next";
            }, ...args),
          ]);
          total += 20;
          const logs = await storedTitled(server, project.id, total, "Leaving");
          assert.equal(logs.length, 20);
          assert.equal(new Set(logs.map((log) => log.data.i)).size, 20);
        },
      );

      await t.step(
        "captureErrors() logs uncaught errors and rejections with their stacks",
        async () => {
          // The errors come from the page's own script: a script from
          // elsewhere (as page.evaluate's) shows only "Script error.".
          const query = new URLSearchParams({
            endpoint: server.endpoint,
            projectId: project.id,
          });
          await page.goto(`${pages.origin}/failing?${query}`);
          // Both errors caught by the logger, then flushed.
          await page.waitForFunction(
            () => {
              // deno-lint-ignore no-explicit-any
              const s = (globalThis as any).logger?.stats();
              return s !== undefined && s.queued + s.inFlight + s.sent >= 2;
            },
            { timeout: 10_000, polling: 20 },
          );
          const flushed = await page.evaluate(async () => {
            // deno-lint-ignore no-explicit-any
            return await (globalThis as any).logger.flush(5000);
          });
          assert.equal(flushed, true);
          total += 2;
          const logs = (await server.stored(project.id, total))
            .filter((log) => log.data.event !== undefined);
          assert.deepEqual(
            logs.map((log) => [log.level, log.data.event, log.data.title])
              .sort(),
            [
              ["error", "error", "Boom in page"],
              ["error", "unhandledrejection", "Rejected in page"],
            ],
          );
          for (const log of logs) {
            assert.match(log.data.stack as string, /(TypeError|RangeError): /);
            assert.ok(
              (log.data.stack as string).includes(`${pages.origin}/failing`),
            );
          }
        },
      );
    } finally {
      await browser.close();
      await pages.close();
      await server.close();
    }
  },
});

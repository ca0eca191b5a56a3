/// <reference lib="dom" />
/**
 * The dashboard end to end, in headless Chromium: three servers on this
 * machine — the dashboard, the real ingestion app with its queue pipeline,
 * and a web page on another origin that sends entries from the browser —
 * share one in-memory KV. Skipped when Chromium is not installed; every
 * wait has a timeout, and the whole run is bounded.
 *
 * With `UPDATE_SCREENSHOTS=1` it also writes the README's screenshots
 * (docs/images/) at 1280×800.
 *
 * @module
 */
import assert from "node:assert/strict";
import type { Browser } from "puppeteer-core";
import { createDashboard } from "../dashboard/app.ts";
import { listProjects } from "../db/projects.ts";
import { hasChromium, launchBrowser } from "./_browser.ts";
import { type Harness, harness } from "./_helpers.ts";
import { PASSWORD } from "./dashboard/_helpers.ts";
import {
  realClock,
  rowIds,
  rowTexts,
  SENDER_PAGE,
  sendFrom,
  serve,
  takeScreenshots,
  watchForProblems,
} from "./dashboard/_e2e.ts";

/** Longest wait for any one thing in the browser. */
const STEP_MS = 15_000;
/** Longest run of the whole test. */
const RUN_MS = 120_000;
const SCREENSHOTS = Deno.env.get("UPDATE_SCREENSHOTS") === "1";

Deno.test({
  name:
    "the dashboard in Chromium: sign-in, a project, live entries, filters, permalinks, rejections, CSRF, sign-out",
  ignore: !hasChromium(),
  async fn(t) {
    const kv = await Deno.openKv(":memory:");
    let h: Harness | undefined;
    let browser: Browser | undefined;
    const servers: Deno.HttpServer[] = [];
    let timer: ReturnType<typeof setTimeout> | undefined;
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new Error(`The browser test ran past ${RUN_MS} ms`)),
        RUN_MS,
      );
    });
    const run = async () => {
      h = await harness({ kv, clock: realClock, pipeline: { handOver: true } });
      h.pipeline.start();
      const service = h.app;
      const ingest = serve((req, info) =>
        service.fetch(req, { remoteAddr: info.remoteAddr })
      );
      const sender = serve(() =>
        new Response(SENDER_PAGE, { headers: { "Content-Type": "text/html" } })
      );
      const endpoint = `http://127.0.0.1:${ingest.addr.port}/api/v1/logs`;
      const dashboard = createDashboard({
        kv,
        password: PASSWORD,
        endpoint: () => endpoint,
      });
      const dash = serve((req, info) =>
        dashboard.fetch(req, { remoteAddr: info.remoteAddr })
      );
      servers.push(ingest, sender, dash);
      const senderOrigin = `http://127.0.0.1:${sender.addr.port}`;
      const strangerOrigin = `http://localhost:${sender.addr.port}`;
      const home = `http://127.0.0.1:${dash.addr.port}`;

      browser = await launchBrowser();
      const page = await browser.newPage();
      page.setDefaultTimeout(STEP_MS);
      const problems = watchForProblems(page);
      page.setDefaultNavigationTimeout(STEP_MS);
      await page.setViewport({ width: 1280, height: 800 });
      let projectId = "";

      await t.step(
        "a wrong password is refused, the right one signs in",
        async () => {
          await page.goto(`${home}/`);
          assert.equal(new URL(page.url()).pathname, "/login");
          await page.type("#password", "not the password");
          await Promise.all([
            page.waitForNavigation(),
            page.click("#login-form button"),
          ]);
          assert.match(
            await page.$eval(".notice.error", (e) => e.textContent ?? ""),
            /Wrong password/,
          );
          await page.type("#password", PASSWORD);
          await Promise.all([
            page.waitForNavigation(),
            page.click("#login-form button"),
          ]);
          assert.equal(new URL(page.url()).pathname, "/");
          assert.equal(
            await page.$eval("h1", (e) => e.textContent),
            "Projects",
          );
        },
      );

      await t.step(
        "creating a project shows its id and secret once",
        async () => {
          await page.type("#create-form input[name=name]", "Web shop");
          await Promise.all([
            page.waitForNavigation(),
            page.click("#create-form button"),
          ]);
          projectId = await page.$eval(
            "#created-id",
            (e) => e.textContent ?? "",
          );
          const secret = await page.$eval(
            "#created-secret",
            (e) => e.textContent ?? "",
          );
          const stored = (await listProjects(kv))[0]!;
          assert.equal(stored.id, projectId);
          assert.equal(stored.secret, secret);
          await page.goto(`${home}/`);
          assert.equal(
            await page.$("#created-secret"),
            null,
            "shown only once",
          );
        },
      );

      await t.step(
        "an origin is allowed; a malformed one is refused with the reason",
        async () => {
          await page.goto(`${home}/projects/${projectId}/settings`);
          await page.type("#allow-form input[name=value]", `${senderOrigin}/`);
          await Promise.all([
            page.waitForNavigation(),
            page.click("#allow-form button"),
          ]);
          assert.match(
            await page.$eval("#allow .field-error", (e) => e.textContent ?? ""),
            /no path and no trailing slash/,
          );
          await page.$eval(
            "#allow-form input[name=value]",
            (e) => ((e as HTMLInputElement).value = ""),
          );
          await page.type("#allow-form input[name=value]", senderOrigin);
          await Promise.all([
            page.waitForNavigation(),
            page.click("#allow-form button"),
          ]);
          assert.deepEqual(
            await page.$$eval(
              "#allow-list code",
              (els) => els.map((e) => e.textContent),
            ),
            [senderOrigin],
          );
        },
      );

      const shop = await browser.newPage();
      shop.setDefaultTimeout(STEP_MS);

      await t.step(
        "entries sent from the allowed page appear in the open explorer by live tail",
        async () => {
          await page.goto(`${home}/projects/${projectId}`);
          await page.waitForSelector("#live.on");
          // The explorer stays open in the background while the shop sends.
          await shop.bringToFront();
          await shop.goto(`${senderOrigin}/`);
          const started = Date.now();
          assert.equal(
            await sendFrom(shop, endpoint, {
              level: "info",
              projectId,
              data: { title: "Checkout opened" },
              context: { userId: "u-7" },
            }),
            200,
          );
          assert.equal(
            await sendFrom(shop, endpoint, {
              level: "error",
              projectId,
              data: { title: "Payment failed", orderId: 1234 },
              context: { userId: "u-42" },
            }),
            200,
          );
          await page.waitForFunction(
            () =>
              document.querySelectorAll("#entries details.entry").length >= 2,
            { timeout: STEP_MS, polling: 100 },
          );
          const shownAfter = Date.now() - started;
          assert.ok(shownAfter < 5000, `shown after ${shownAfter} ms`);
          assert.deepEqual(await rowTexts(page), [
            "Payment failed",
            "Checkout opened",
          ]);
          // Several more polls pass: nothing is shown twice.
          await new Promise((resolve) => setTimeout(resolve, 1200));
          assert.equal((await rowIds(page)).length, 2);
          await page.bringToFront();
        },
      );

      await t.step("a level chip filters the list", async () => {
        await Promise.all([
          page.waitForNavigation(),
          page.click('a.chip[data-level="error"]'),
        ]);
        assert.equal(new URL(page.url()).searchParams.get("level"), "error");
        assert.deepEqual(await rowTexts(page), ["Payment failed"]);
        await Promise.all([
          page.waitForNavigation(),
          page.click('a.chip[data-level="error"]'),
        ]);
        assert.deepEqual(await rowTexts(page), [
          "Payment failed",
          "Checkout opened",
        ]);
      });

      await t.step("clicking a field value filters by it", async () => {
        const [id] = await rowIds(page);
        await page.click(`#e-${id} summary`);
        const link = await page.waitForSelector(
          `#e-${id} tr[data-path="context.userId"] a.value`,
        );
        assert.ok(link);
        await Promise.all([page.waitForNavigation(), link.click()]);
        assert.equal(
          new URL(page.url()).searchParams.get("q"),
          "context.userId:u-42",
        );
        assert.deepEqual(await rowTexts(page), ["Payment failed"]);
        assert.equal(
          await page.$eval("#q", (e) => (e as HTMLInputElement).value),
          "context.userId:u-42",
        );
      });

      await t.step(
        "an expanded entry survives a reload (permalink)",
        async () => {
          await page.goto(`${home}/projects/${projectId}`);
          const ids = await rowIds(page);
          const target = ids[1]!;
          await page.click(`#e-${target} summary`);
          await page.waitForFunction(
            (id) => new URL(location.href).searchParams.get("open") === id,
            { timeout: STEP_MS, polling: 100 },
            target,
          );
          await page.reload();
          assert.deepEqual(
            await page.$$eval(
              "#entries details.entry[open]",
              (els) => els.map((e) => e.id),
            ),
            [`e-${target}`],
          );
        },
      );

      await t.step(
        "an entry from an origin not allowed shows in the rejections with its reason",
        async () => {
          await shop.goto(`${strangerOrigin}/`);
          assert.equal(
            await sendFrom(shop, endpoint, {
              level: "info",
              projectId,
              data: { title: "Hello?" },
            }),
            200,
          );
          await page.goto(`${home}/projects/${projectId}/rejections`);
          const until = Date.now() + STEP_MS;
          while (
            await page.$('#recent tr[data-reason="bad_origin"]') === null
          ) {
            assert.ok(Date.now() < until, "the rejection never appeared");
            await new Promise((resolve) => setTimeout(resolve, 200));
            await page.reload();
          }
          const row = await page.$eval(
            '#recent tr[data-reason="bad_origin"]',
            (e) => e.textContent ?? "",
          );
          assert.match(row, new RegExp(strangerOrigin.replaceAll(".", "\\.")));
          assert.match(
            await page.$eval("#rejected-content", (e) => e.textContent ?? ""),
            /Not available yet/,
          );
        },
      );

      await t.step(
        "a form posted from another origin is refused with 403",
        async () => {
          await shop.bringToFront();
          await shop.goto(`${senderOrigin}/`);
          const response = await Promise.all([
            shop.waitForNavigation(),
            shop.evaluate((action) => {
              const form = document.createElement("form");
              form.method = "post";
              form.action = action;
              for (
                const [name, value] of [["name", "Planted"], [
                  "_csrf",
                  "guessed",
                ]]
              ) {
                const input = document.createElement("input");
                input.name = name!;
                input.value = value!;
                form.append(input);
              }
              document.body.append(form);
              form.submit();
            }, `${home}/projects`),
          ]).then(([res]) => res);
          assert.equal(response?.status(), 403);
          assert.match(
            await shop.$eval("#message", (e) => e.textContent ?? ""),
            /Cannot accept a change sent from/,
          );
          assert.equal((await listProjects(kv)).length, 1);
        },
      );

      if (SCREENSHOTS) {
        await t.step("screenshots for the README", async () => {
          await page.bringToFront();
          await takeScreenshots(page, kv, home);
        });
      }

      await t.step("signing out ends the session", async () => {
        await page.bringToFront();
        await page.goto(`${home}/`);
        await Promise.all([page.waitForNavigation(), page.click("#logout")]);
        assert.equal(new URL(page.url()).pathname, "/login");
        assert.match(
          await page.$eval(".notice.ok", (e) => e.textContent ?? ""),
          /signed out/,
        );
        await page.goto(`${home}/projects/${projectId}`);
        assert.equal(new URL(page.url()).pathname, "/login");
      });

      await t.step(
        "no script error and no refused content in the pages",
        () => {
          assert.deepEqual(problems, []);
        },
      );
    };
    try {
      await Promise.race([run(), deadline]);
    } finally {
      clearTimeout(timer);
      await browser?.close();
      for (const server of servers) await server.shutdown();
      await h?.close();
      kv.close();
    }
  },
});

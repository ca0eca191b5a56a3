/// <reference lib="dom" />
/**
 * The log explorer end to end in headless Chromium: entries sent by a page
 * of an allowed origin appear by live tail, pausing holds them back, level
 * chips and field values filter, an expanded entry survives a reload, and
 * the keyboard moves and expands. With `UPDATE_SCREENSHOTS=1` it also
 * writes the README's screenshots (docs/images/) at 1280×800. Skipped when
 * Chromium is not installed; every wait has a timeout.
 *
 * @module
 */
import assert from "node:assert/strict";
import { createProject } from "../../db/projects.ts";
import { queryLogs } from "../../db/query/mod.ts";
import { hasChromium } from "../_helpers/browser.ts";
import {
  clickThrough,
  rowIds,
  rowTexts,
  sendFrom,
  signInAs,
  STEP_MS,
  takeScreenshots,
  valueIn,
  withE2e,
} from "../_helpers/dashboard_browser.ts";

const SCREENSHOTS = Deno.env.get("UPDATE_SCREENSHOTS") === "1";

Deno.test({
  name:
    "the explorer in Chromium: live tail, pause, level and field filters, permalinks, keyboard",
  ignore: !hasChromium(),
  async fn(t) {
    await withE2e(async (e) => {
      const { kv, page, shop, home, endpoint, senderOrigin } = e;
      const projectId = (await createProject(kv, {
        name: "Web shop",
        allow: [senderOrigin],
      })).id;
      await signInAs(page, home);

      await t.step(
        "entries sent from the allowed page appear in the open explorer by live tail",
        async () => {
          await page.goto(`${home}/projects/${projectId}`);
          await page.waitForSelector("#live.on");
          // The explorer stays open in the background while the shop sends.
          await shop.bringToFront();
          await shop.goto(`${senderOrigin}/`);
          await sendFrom(shop, endpoint, {
            level: "info",
            projectId,
            data: { title: "Checkout opened" },
            context: { userId: "u-7" },
          });
          await sendFrom(shop, endpoint, {
            level: "error",
            projectId,
            data: { title: "Payment failed", orderId: 1234 },
            context: { userId: "u-42" },
          });
          await page.waitForFunction(
            () =>
              document.querySelectorAll("#entries details.entry").length >= 2,
            { timeout: STEP_MS, polling: 100 },
          );
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

      await t.step(
        "a paused live tail holds new entries back; resuming shows them",
        async () => {
          await page.click("#live-toggle");
          assert.equal(new URL(page.url()).searchParams.get("live"), "off");
          assert.equal(await page.$("#live.on"), null);
          await sendFrom(shop, endpoint, {
            level: "info",
            projectId,
            data: { title: "Sent while paused" },
          });
          // Stored first, so that "held back" is the paused tail's doing.
          const stored = Date.now() + STEP_MS;
          while (
            (await queryLogs(kv, projectId, { limit: 10 })).records.length < 3
          ) {
            if (Date.now() > stored) {
              throw new Error("The entry was not stored");
            }
            await new Promise((resolve) => setTimeout(resolve, 100));
          }
          // Past the tail's settling (1 s) and its next polls.
          await new Promise((resolve) => setTimeout(resolve, 2000));
          assert.equal((await rowIds(page)).length, 2, "held back");
          await page.click("#live-toggle");
          assert.equal(new URL(page.url()).searchParams.get("live"), null);
          await page.waitForFunction(
            () =>
              document.querySelectorAll("#entries details.entry").length >= 3,
            { timeout: STEP_MS, polling: 100 },
          );
          await new Promise((resolve) => setTimeout(resolve, 1200));
          assert.deepEqual(await rowTexts(page), [
            "Sent while paused",
            "Payment failed",
            "Checkout opened",
          ]);
        },
      );

      await t.step("a level chip filters the list", async () => {
        await clickThrough(page, 'a.chip[data-level="error"]');
        assert.equal(new URL(page.url()).searchParams.get("level"), "error");
        assert.deepEqual(await rowTexts(page), ["Payment failed"]);
        await clickThrough(page, 'a.chip[data-level="error"]');
        assert.deepEqual(await rowTexts(page), [
          "Sent while paused",
          "Payment failed",
          "Checkout opened",
        ]);
      });

      await t.step("clicking a field value filters by it", async () => {
        const id = (await rowIds(page))[1]!;
        assert.equal((await rowTexts(page))[1], "Payment failed");
        await page.click(`#e-${id} summary`);
        const link = await page.waitForSelector(
          `#e-${id} tr[data-path="context.userId"] a.value`,
        );
        assert.ok(link);
        // Opening the row replaces the URL's state (a same-document
        // navigation): wait for the page the link leads to, not for the
        // first navigation event.
        await link.click();
        await page.waitForFunction(() =>
          new URL(location.href).searchParams.get("q") ===
            "context.userId:u-42" &&
          document.querySelector<HTMLInputElement>("#q")?.value ===
            "context.userId:u-42"
        );
        assert.equal(
          new URL(page.url()).searchParams.get("q"),
          "context.userId:u-42",
        );
        assert.deepEqual(await rowTexts(page), ["Payment failed"]);
        assert.equal(await valueIn(page, "#q"), "context.userId:u-42");
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
        "keyboard: / searches, j and k move, Enter expands",
        async () => {
          await page.goto(`${home}/projects/${projectId}`);
          const ids = await rowIds(page);
          await page.keyboard.press("/");
          assert.equal(
            await page.evaluate(() => document.activeElement?.id),
            "q",
          );
          await page.keyboard.press("Escape");
          const selected = () =>
            page.$$eval(
              "details.entry.selected",
              (els) => els.map((e) => e.id),
            );
          await page.keyboard.press("j");
          assert.deepEqual(await selected(), [`e-${ids[0]}`]);
          await page.keyboard.press("j");
          await page.keyboard.press("j");
          await page.keyboard.press("k");
          assert.deepEqual(await selected(), [`e-${ids[1]}`]);
          await page.keyboard.press("Enter");
          await page.waitForFunction(
            (id) => new URL(location.href).searchParams.get("open") === id,
            { timeout: STEP_MS, polling: 100 },
            ids[1],
          );
          assert.deepEqual(
            await page.$$eval(
              "details.entry[open]",
              (els) => els.map((e) => e.id),
            ),
            [`e-${ids[1]}`],
          );
        },
      );

      await t.step(
        "a click on a field's name pins it to the facets; the split select redraws the histogram",
        async () => {
          await page.goto(`${home}/projects/${projectId}`);
          // "Payment failed", which has a context.userId.
          const id = (await rowIds(page))[1]!;
          await page.click(`#e-${id} summary`);
          const name = await page.waitForSelector(
            `#e-${id} tr[data-path="context.userId"] th`,
          );
          await name!.click();
          await page.waitForSelector(
            'section.facet[data-field="context.userId"]',
          );
          assert.deepEqual(
            new URL(page.url()).searchParams.getAll("facet"),
            ["context.userId"],
          );
          await page.select("#split select", "context.userId");
          await page.waitForSelector('#histogram[data-split="context.userId"]');
          assert.deepEqual(
            new URL(page.url()).searchParams.getAll("facet"),
            ["context.userId"],
            "the split keeps the pinned field",
          );
        },
      );

      if (SCREENSHOTS) {
        await t.step("screenshots for the README", async () => {
          await page.bringToFront();
          await takeScreenshots(page, kv, home, endpoint);
        });
      }

      await t.step(
        "no script error and no refused content in the pages",
        () => {
          assert.deepEqual(e.problems, []);
        },
      );
    });
  },
});

/// <reference lib="dom" />
/**
 * The second day's explorer in headless Chromium: errors of three kinds
 * grouped on the errors page and its link to one group's entries; a stack
 * as lines; the histogram's y-axis and the live tail adding to its newest
 * bar; times switched to local time and back, the range picker typed in
 * local time; saving, opening and removing a view. Skipped when Chromium
 * is not installed; every wait has a timeout.
 *
 * @module
 */
import assert from "node:assert/strict";
import { createProject } from "../../db/projects.ts";
import { hasChromium } from "../_helpers/browser.ts";
import {
  clickThrough,
  rowTexts,
  sendFrom,
  setValue,
  signInAs,
  STEP_MS,
  textIn,
  textsIn,
  valueIn,
  withE2e,
} from "../_helpers/dashboard_browser.ts";

const STACK =
  "TypeError: Cannot read properties of undefined (reading 'total')\n" +
  Array.from(
    { length: 12 },
    (_, i) => `    at step${i} (https://shop.example.com/app.js:${10 + i}:5)`,
  ).join("\n");

Deno.test({
  name: "errors, stacks, histogram, time zone and saved views in Chromium",
  ignore: !hasChromium(),
  async fn(t) {
    await withE2e(async (e) => {
      const { kv, page, shop, home, endpoint, senderOrigin, problems } = e;
      const projectId = (await createProject(kv, {
        name: "Web shop",
        allow: [senderOrigin],
      })).id;
      await signInAs(page, home);
      await shop.goto(`${senderOrigin}/`);
      const send = (level: string, data: Record<string, unknown>) =>
        sendFrom(shop, endpoint, { level, projectId, data });

      await t.step(
        "errors of three kinds are grouped, and a group links to its entries",
        async () => {
          for (const n of [1234, 5678, 91011]) {
            await send("error", { title: `Payment ${n} failed`, orderId: n });
          }
          await send("critical", { message: "Database unreachable: db-2" });
          await send("error", { message: "TypeError", stack: STACK });
          await send("info", { title: "Checkout opened" });
          await page.goto(`${home}/projects/${projectId}/errors`);
          await page.waitForFunction(
            () => document.querySelectorAll("#groups tbody tr").length >= 3,
            { timeout: STEP_MS, polling: 200 },
          ).catch(() => {});
          // The consumer may still be at work: reload until all are there.
          for (let i = 0; i < 50; i++) {
            const n = await page.$$eval("#groups tbody tr", (r) => r.length)
              .catch(() => 0);
            const counts = await page.$$eval(
              "#groups td.count",
              (cells) => cells.map((c) => c.textContent?.trim()),
            ).catch(() => [] as (string | undefined)[]);
            if (n === 3 && counts.includes("3")) break;
            await new Promise((go) => setTimeout(go, 200));
            await page.reload();
          }
          const rows = await page.$$eval(
            "#groups tbody tr",
            (trs) =>
              trs.map((tr) => ({
                text: tr.textContent?.replace(/\s+/g, " ") ?? "",
                count: tr.querySelector("td.count")?.textContent?.trim(),
                isNew: tr.classList.contains("new"),
                bars: tr.querySelectorAll("svg.spark rect").length,
              })),
          );
          assert.equal(rows.length, 3);
          const payment = rows.find((r) =>
            r.text.includes("Payment <n> failed")
          )!;
          assert.equal(payment.count, "3");
          assert.ok(payment.isNew);
          assert.equal(payment.bars, 24);
          assert.ok(
            rows.some((r) =>
              r.text.includes("https://shop.example.com/app.js:step0")
            ),
            "the top frame is shown",
          );
          await Promise.all([
            page.waitForNavigation(),
            page.$$eval(
              "a.group-link",
              (links) =>
                (links.find((a) =>
                  a.textContent?.includes("Payment")
                ) as HTMLAnchorElement).click(),
            ),
          ]);
          assert.match(
            decodeURIComponent(page.url()),
            /fingerprint:[0-9a-f]{16}/,
          );
          assert.deepEqual(
            (await rowTexts(page)).sort(),
            [
              "Payment 1234 failed",
              "Payment 5678 failed",
              "Payment 91011 failed",
            ],
          );
        },
      );

      await t.step("a stack is shown as lines, the rest folded", async () => {
        await page.goto(`${home}/projects/${projectId}?q=TypeError`);
        await page.click("#entries details.entry summary");
        const top = await textIn(page, "#entries details.entry .stack-top");
        const lines = top.split("\n");
        assert.equal(lines.length, 8);
        assert.match(lines[0]!, /^TypeError: Cannot read properties/);
        assert.match(lines[1]!, /at step0 /);
        assert.equal(
          await textIn(page, "#entries .stack-rest summary"),
          "5 more lines",
        );
      });

      await t.step(
        "the histogram has a y-axis, and the live tail adds to its newest bar",
        async () => {
          await page.goto(`${home}/projects/${projectId}?range=1h`);
          await page.waitForSelector("#live.on");
          const before = await page.$eval(
            "#histogram-total",
            (el) => Number(el.textContent),
          );
          assert.equal(before, 6);
          const ticks = await textsIn(page, ".histogram .y-axis .tick");
          assert.deepEqual(ticks.at(-1), "0");
          assert.ok(Number(ticks[0]) >= 1);
          await send("warning", { title: "Slow response" });
          await page.waitForFunction(
            () =>
              document.getElementById("histogram-total")?.textContent === "7",
            { timeout: STEP_MS, polling: 100 },
          );
          const newest = await page.$$eval(
            ".histogram a.bucket",
            (bars) => JSON.parse((bars.at(-1) as HTMLElement).dataset.counts!),
          );
          assert.ok(newest.warning >= 1, JSON.stringify(newest));
          assert.ok(
            await page.$(
              ".histogram a.bucket:last-of-type rect.bar.lvl-warning",
            ),
            "the bar is drawn",
          );
        },
      );

      await t.step(
        "times switch to local time and back, the range picker follows",
        async () => {
          await page.emulateTimezone("Asia/Tokyo");
          await page.goto(`${home}/projects/${projectId}?range=1h`);
          const utc = await page.$eval(
            "#entries time",
            (el) => ({
              text: el.textContent,
              iso: el.getAttribute("datetime"),
            }),
          );
          assert.equal(utc.text, utc.iso!.slice(0, 23).replace("T", " "));
          assert.equal(await textIn(page, ".zone .tz-label"), "UTC");
          await page.click("button.tz-toggle");
          const local = await textIn(page, "#entries time");
          const tokyo = new Date(Date.parse(utc.iso!) + 9 * 3_600_000)
            .toISOString().slice(0, 23).replace("T", " ");
          assert.equal(local, tokyo);
          assert.equal(
            await textIn(page, ".zone .tz-label"),
            "Asia/Tokyo (UTC+09:00)",
          );
          // Kept across pages.
          await page.reload();
          assert.equal(await textIn(page, "#entries time"), tokyo);
          // A range typed in local time is sent in UTC.
          await page.click("details.absolute summary");
          await setValue(
            page,
            'details.absolute input[name="since"]',
            "2026-01-15T18:30",
          );
          await setValue(
            page,
            'details.absolute input[name="until"]',
            "2026-01-15T19:00",
          );
          await clickThrough(page, "details.absolute button[type=submit]");
          const url = new URL(page.url()); // sent in UTC: Tokyo is 9 h ahead
          assert.equal(
            url.searchParams.get("since"),
            "2026-01-15T09:30",
          );
          assert.equal(
            url.searchParams.get("until"),
            "2026-01-15T10:00",
          );
          assert.equal(
            await valueIn(page, 'details.absolute input[name="since"]'),
            "2026-01-15T18:30",
          );
          await page.click("button.tz-toggle");
          assert.equal(await textIn(page, ".zone .tz-label"), "UTC");
          assert.equal(
            await valueIn(page, 'details.absolute input[name="since"]'),
            "2026-01-15T09:30",
          );
        },
      );

      await t.step("a view is saved, listed, opened and removed", async () => {
        await page.goto(`${home}/projects/${projectId}?q=Payment&range=7d`);
        await page.click(".save-view summary");
        await page.type("#view-name", "Payments");
        await clickThrough(page, "#save-view-form button[type=submit]");
        await page.goto(`${home}/`);
        await clickThrough(page, "a.chip.view");
        const url = new URL(page.url());
        assert.equal(url.searchParams.get("q"), "Payment");
        assert.equal(url.searchParams.get("range"), "7d");
        assert.equal((await rowTexts(page)).length, 3);
        await clickThrough(page, "button.remove-view");
        assert.equal(await page.$("a.chip.view"), null);
      });
      assert.deepEqual(problems, []);
    });
  },
});

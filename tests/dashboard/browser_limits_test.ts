/// <reference lib="dom" />
/**
 * The explorer's bounds in headless Chromium: a page of entries with
 * thousands of members each shows previews and fetches a full entry in
 * place; a tab past the session's share of live tails says why its tail
 * stopped, and resumes once another tab lets one go. Skipped when Chromium is not installed; every wait has a
 * timeout.
 *
 * @module
 */
import assert from "node:assert/strict";
import { createProject } from "../../db/projects.ts";
import { queryLogs } from "../../db/query/mod.ts";
import { QUERY_BUDGET_MS } from "../../db/query/query.ts";
import { wideData } from "../_helpers/dashboard_seed.ts";
import { hasChromium } from "../_helpers/browser.ts";
import {
  signInAs,
  STEP_MS,
  textIn,
  watchForProblems,
  withE2e,
} from "../_helpers/dashboard_browser.ts";

/** Posts `entry` to the endpoint from `origin`; the answer's status. */
async function send(
  endpoint: string,
  origin: string,
  entry: Record<string, unknown>,
): Promise<number> {
  const res = await fetch(endpoint, {
    method: "POST",
    headers: { "Content-Type": "application/json", Origin: origin },
    body: JSON.stringify({ level: "info", ...entry }),
  });
  await res.body?.cancel();
  return res.status;
}

Deno.test({
  name:
    "a tab past the session's live tails says why its tail stopped, and resumes when another tab closes",
  ignore: !hasChromium(),
  async fn() {
    await withE2e(async (e) => {
      const { kv, page, home, endpoint, senderOrigin } = e;
      const projectId = (await createProject(kv, {
        name: "Web shop",
        allow: [senderOrigin],
      })).id;
      await signInAs(page, home);
      const explorer = `${home}/projects/${projectId}`;
      await page.goto(explorer);
      await page.waitForSelector("#live.on");
      const browser = page.browser();
      const second = await browser.newPage();
      second.setDefaultTimeout(STEP_MS);
      await second.goto(explorer);
      await second.waitForSelector("#live.on");
      const third = await browser.newPage();
      third.setDefaultTimeout(STEP_MS);
      const thirdProblems = watchForProblems(third);
      await third.goto(explorer);
      await third.waitForFunction(
        () =>
          document.getElementById("live-status")?.textContent?.startsWith(
            "Live tail stopped",
          ),
        { timeout: STEP_MS, polling: 100 },
      );
      assert.equal(
        await textIn(third, "#live-status"),
        "Live tail stopped: Cannot open more than 2 live tails at once in one session: pause the live tail in another tab",
      );
      assert.equal(await textIn(third, "#live-toggle"), "Resume");
      await second.close();
      // The server notices the closed stream at its next poll: until then a
      // resume is refused again (and tried once more). Resumed, the tail
      // shows an entry sent since the page loaded.
      assert.equal(
        await send(endpoint, senderOrigin, {
          projectId,
          data: { title: "After the resume" },
        }),
        200,
      );
      const until = Date.now() + STEP_MS;
      for (;;) {
        await third.click("#live-toggle");
        await third.waitForFunction(
          () =>
            document.querySelector("#entries details.entry") !== null ||
            document.getElementById("live-status")?.textContent?.startsWith(
              "Live tail stopped",
            ),
          { timeout: STEP_MS, polling: 50 },
        );
        if (await third.$("#entries details.entry") !== null) break;
        if (Date.now() > until) throw new Error("The tail never resumed");
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
      await third.waitForSelector("#live.on");
      await third.close();
      assert.deepEqual(e.problems, []);
      assert.deepEqual(thirdProblems, []);
    }, { dashboard: { tailLimits: { perSession: 2 } } });
  },
});

Deno.test({
  name:
    "a page of 50 entries of 5,600 members each loads small in Chromium, and a cut preview fetches its full entry in place",
  ignore: !hasChromium(),
  async fn() {
    await withE2e(async (e) => {
      const { kv, page, home, endpoint } = e;
      const origin = "https://shop.example.com";
      const projectId = (await createProject(kv, {
        name: "Web shop",
        allow: [origin],
      })).id;
      for (let i = 0; i < 50; i++) {
        const status = await send(endpoint, origin, {
          projectId,
          data: { title: `Wide ${i}`, ...wideData(5600) },
        });
        assert.equal(status, 200);
      }
      const until = Date.now() + STEP_MS;
      while (
        (await queryLogs(kv, projectId, { limit: 50 })).records.length < 50
      ) {
        if (Date.now() > until) throw new Error("The entries were not stored");
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      await signInAs(page, home);
      const res = await page.goto(`${home}/projects/${projectId}?live=off`);
      const bytes = (await res!.buffer()).length;
      await page.waitForSelector("#entries details.entry");
      console.log(`explorer in Chromium: ${(bytes / 1024).toFixed(0)} KiB`);
      assert.ok(bytes <= 2 * 1024 * 1024, `${bytes} bytes`);
      assert.equal(
        await page.$$eval("#entries details.entry", (rows) => rows.length),
        50,
      );
      const row = "#entries details.entry:first-of-type";
      await page.click(`${row} > summary`);
      assert.match(
        await textIn(page, `${row} .preview-note`),
        /^Preview: \d+ of 56\d\d fields, the JSON cut short\./,
      );
      assert.equal(
        await page.$(`${row} button[data-copy]`),
        null,
        "no copy of a cut JSON",
      );
      await page.click(`${row} a.full-entry`);
      await page.waitForFunction(
        (selector) =>
          document.querySelector(`${selector} pre.json`)?.textContent?.includes(
            '"k4bj": 5599',
          ),
        { timeout: STEP_MS, polling: 100 },
        row,
      );
      assert.equal(await page.$(`${row} .preview-note a.full-entry`), null);
      assert.ok(
        await page.$(`${row} button[data-copy]`),
        "the full JSON can be copied",
      );
      assert.equal(
        new URL(page.url()).pathname,
        `/projects/${projectId}`,
        "fetched in place, no navigation",
      );
      assert.deepEqual(e.problems, []);
    }, {
      // The page's time budget is not what is tested: its clock stands
      // still, so the page shows its 50 rows however busy the machine.
      dashboard: { queryBudget: { ms: QUERY_BUDGET_MS, clock: () => 0 } },
    });
  },
});

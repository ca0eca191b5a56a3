/// <reference lib="dom" />
/**
 * The explorer's bounds in headless Chromium: a tab past the session's
 * share of live tails says why its tail stopped, and resumes once another
 * tab lets one go. Skipped when Chromium is not installed; every wait has a
 * timeout.
 *
 * @module
 */
import assert from "node:assert/strict";
import { createProject } from "../db/projects.ts";
import { hasChromium } from "./_browser.ts";
import {
  signInAs,
  STEP_MS,
  watchForProblems,
  withE2e,
} from "./dashboard/_e2e.ts";

Deno.test({
  name:
    "a tab past the session's live tails says why its tail stopped, and resumes when another tab closes",
  ignore: !hasChromium(),
  async fn() {
    await withE2e(async (e) => {
      const { kv, page, home } = e;
      const projectId = (await createProject(kv, { name: "Web shop" })).id;
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
        await third.$eval("#live-status", (el) => el.textContent),
        "Live tail stopped: Cannot open more than 2 live tails at once in one session: pause the live tail in another tab",
      );
      assert.equal(
        await third.$eval("#live-toggle", (el) => el.textContent),
        "Resume",
      );
      await second.close();
      // The server notices the closed stream at its next poll.
      await new Promise((resolve) => setTimeout(resolve, 1000));
      await third.click("#live-toggle");
      await third.waitForSelector("#live.on");
      await third.waitForFunction(
        () =>
          document.getElementById("live-status")?.textContent === "Live tail",
        { timeout: STEP_MS, polling: 100 },
      );
      await third.close();
      assert.deepEqual(e.problems, []);
      assert.deepEqual(thirdProblems, []);
    }, { dashboard: { tailLimits: { perSession: 2 } } });
  },
});

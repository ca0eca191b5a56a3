/// <reference lib="dom" />
/**
 * Accounts end to end in headless Chromium: the administrator adds a viewer
 * of one project on the Users page, the viewer signs in with email and
 * password, sees only that project, no settings and no admin pages, gets
 * the explorer's CSV download, and a 404 for the other project. Skipped
 * when Chromium is not installed; every wait has a timeout.
 *
 * @module
 */
import assert from "node:assert/strict";
import { createProject } from "../../db/projects.ts";
import { getUser } from "../../db/users.ts";
import { hasChromium } from "../_helpers/browser.ts";
import {
  clickThrough,
  signInAs,
  textIn,
  withE2e,
} from "../_helpers/dashboard_browser.ts";

const VIEWER = "viewer@example.com";
const VIEWER_PASSWORD = "a viewer's passphrase";

Deno.test({
  name:
    "accounts in Chromium: an admin adds a viewer, who sees only its project and downloads CSV",
  ignore: !hasChromium(),
  async fn(t) {
    await withE2e(async (e) => {
      const { kv, page, home } = e;
      const own = await createProject(kv, { name: "viewer-project" });
      const other = await createProject(kv, { name: "hidden-project" });

      await t.step("the admin adds a viewer on the Users page", async () => {
        await signInAs(page, home);
        await page.goto(`${home}/users`);
        await page.type('#add-user-form input[name="email"]', VIEWER);
        await page.select('#add-user-form select[name="role"]', "viewer");
        await page.click(`#add-user-form input[name="project_${own.id}"]`);
        await page.type(
          '#add-user-form input[name="password"]',
          VIEWER_PASSWORD,
        );
        await clickThrough(page, "#add-user-form button");
        assert.match(await textIn(page, "#users"), /viewer@example\.com/);
        const stored = await getUser(kv, VIEWER);
        assert.equal(stored?.role, "viewer");
        assert.deepEqual(stored?.projects, [own.id]);
        await clickThrough(page, "#logout");
      });

      await t.step(
        "the viewer signs in by email and sees only its project",
        async () => {
          await page.goto(`${home}/login`);
          await page.type("#email", VIEWER);
          await page.type("#password", VIEWER_PASSWORD);
          await clickThrough(page, "#login-form button");
          assert.equal(new URL(page.url()).pathname, "/");
          const text = await textIn(page, "main");
          assert.match(text, /viewer-project/);
          assert.doesNotMatch(text, /hidden-project|Create a project/);
          const nav = await textIn(page, "nav.main");
          assert.doesNotMatch(nav, /Users|Dead letters/);
          assert.match(nav, /viewer@example\.com \(viewer\)/);
        },
      );

      await t.step("the explorer offers CSV of the current view", async () => {
        await page.goto(`${home}/projects/${own.id}?q=level:error`);
        assert.equal(await page.$("nav.tabs a[href$='/settings']"), null);
        const href = await page.$eval(
          "#export-csv",
          (a) => (a as HTMLAnchorElement).href,
        );
        const answer = await page.evaluate(async (url) => {
          const res = await fetch(url);
          return {
            status: res.status,
            type: res.headers.get("content-type"),
            body: await res.text(),
          };
        }, href);
        assert.equal(answer.status, 200);
        assert.match(answer.type ?? "", /^text\/csv/);
        assert.equal(
          answer.body.split("\r\n")[0],
          "id,receivedAt,level,title,message,data,context,device,appid,auth",
        );
      });

      await t.step(
        "another project is not found, settings are forbidden",
        async () => {
          const missing = await page.goto(`${home}/projects/${other.id}`);
          assert.equal(missing?.status(), 404);
          const settings = await page.goto(
            `${home}/projects/${own.id}/settings`,
          );
          assert.equal(settings?.status(), 403);
        },
      );

      await t.step(
        "no script error and no refused content in the pages",
        () => {
          assert.deepEqual(e.problems, []);
        },
      );
    });
  },
});

/// <reference lib="dom" />
/**
 * The dashboard end to end in headless Chromium, the operator's path:
 * signing in (a wrong password, then the right one), creating a project,
 * allowing an origin, a rejected entry shown with its reason and content,
 * allowed and replayed into the explorer, a change posted from another
 * origin refused, and signing out. The servers and
 * the browser are set up by tests/_helpers/dashboard_browser.ts. Skipped when
 * Chromium is not installed; every wait has a timeout.
 *
 * @module
 */
import assert from "node:assert/strict";
import { listProjects } from "../../db/projects.ts";
import { hasChromium } from "../_helpers/browser.ts";
import { PASSWORD } from "../_helpers/dashboard.ts";
import {
  clickThrough,
  sendFrom,
  setValue,
  STEP_MS,
  textIn,
  textsIn,
  withE2e,
} from "../_helpers/dashboard_browser.ts";

Deno.test({
  name:
    "the dashboard in Chromium: sign-in, a project, an allowed origin, rejections and replay, a cross-origin change, sign-out",
  ignore: !hasChromium(),
  async fn(t) {
    await withE2e(async (e) => {
      const { kv, page, shop, home, endpoint, senderOrigin, strangerOrigin } =
        e;
      let projectId = "";

      await t.step(
        "a wrong password is refused, the right one signs in",
        async () => {
          await page.goto(`${home}/`);
          assert.equal(new URL(page.url()).pathname, "/login");
          await page.type("#password", "not the password");
          await clickThrough(page, "#login-form button");
          assert.match(
            await textIn(page, ".notice.error"),
            /Wrong email or password/,
          );
          await page.type("#email", "admin");
          await page.type("#password", PASSWORD);
          await clickThrough(page, "#login-form button");
          assert.equal(new URL(page.url()).pathname, "/");
          assert.equal(await textIn(page, "h1"), "Projects");
        },
      );

      await t.step(
        "creating a project shows its id and secret once",
        async () => {
          await page.type("#create-form input[name=name]", "Web shop");
          await clickThrough(page, "#create-form button");
          projectId = await textIn(page, "#created-id");
          const secret = await textIn(page, "#created-secret");
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
          await clickThrough(page, "#allow-form button");
          assert.match(
            await textIn(page, "#allow .field-error"),
            /no path and no trailing slash/,
          );
          await setValue(page, "#allow-form input[name=value]", "");
          await page.type("#allow-form input[name=value]", senderOrigin);
          await clickThrough(page, "#allow-form button");
          assert.deepEqual(
            await textsIn(page, "#allow-list code"),
            [senderOrigin],
          );
        },
      );

      await t.step(
        "an entry from an origin not allowed shows in the rejections with its reason and content",
        async () => {
          await shop.goto(`${strangerOrigin}/`);
          await sendFrom(shop, endpoint, {
            level: "info",
            projectId,
            data: { title: "Hello from <b>elsewhere</b>" },
          });
          await page.goto(`${home}/projects/${projectId}/rejections`);
          const until = Date.now() + STEP_MS;
          while (
            await page.$('#kept details[data-reason="bad_origin"]') === null
          ) {
            assert.ok(Date.now() < until, "the rejection never appeared");
            await new Promise((resolve) => setTimeout(resolve, 200));
            await page.reload();
          }
          const kept = await textIn(
            page,
            '#kept details[data-reason="bad_origin"]',
          );
          assert.match(kept, /bad_origin/);
          assert.match(kept, new RegExp(strangerOrigin.replaceAll(".", "\\.")));
          assert.match(kept, /"title": "Hello from <b>elsewhere<\/b>"/);
          assert.equal(
            await page.$("#kept b"),
            null,
            "the sender's markup is text",
          );
          const row = await textIn(
            page,
            '#recent tr[data-reason="bad_origin"]',
          );
          assert.match(row, new RegExp(strangerOrigin.replaceAll(".", "\\.")));
        },
      );

      await t.step(
        "after allowing its origin, the rejected entry is replayed and stored",
        async () => {
          const entryId = await page.$eval(
            '#kept details[data-reason="bad_origin"]',
            (e) => (e as HTMLElement).dataset.id ?? "",
          );
          await clickThrough(page, `#k-${entryId} form.inline button`);
          assert.match(
            await textIn(page, ".notice.ok"),
            /Added to the allow-list/,
          );
          await clickThrough(page, `#k-${entryId} form.replay button`);
          assert.match(
            await textIn(page, "#replay-results"),
            /Replayed 1 entry: 1 stored, 0 not\..*stored \(authorized by origin\)/s,
          );
          assert.equal(await page.$(`#k-${entryId}`), null, "no longer kept");
          await clickThrough(page, "#replay-results a");
          assert.deepEqual(
            await textsIn(page, "#entries details.entry.focus summary .msg"),
            ["Hello from <b>elsewhere</b>"],
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
            await textIn(shop, "#message"),
            /Cannot accept a change sent from/,
          );
          assert.equal((await listProjects(kv)).length, 1);
        },
      );

      await t.step("signing out ends the session", async () => {
        await page.bringToFront();
        await page.goto(`${home}/`);
        await clickThrough(page, "#logout");
        assert.equal(new URL(page.url()).pathname, "/login");
        assert.match(await textIn(page, ".notice.ok"), /signed out/);
        await page.goto(`${home}/projects/${projectId}`);
        assert.equal(new URL(page.url()).pathname, "/login");
      });

      await t.step(
        "no script error and no refused content in the pages",
        () => {
          assert.deepEqual(e.problems, []);
        },
      );
    });
  },
});

/// <reference lib="dom" />
/**
 * `deno task screenshots:errors`: the triage workflow's screenshots in
 * docs/images/ (docs/errors.md), at 1280×800 in headless Chromium over the
 * browser tests' setting (tests/_helpers/dashboard_browser.ts): errors of
 * three releases, two groups checked and resolved by the bulk action, a
 * group resolved in a release and assigned on its page, the releases page.
 * It checks what it clicks, so a broken workflow fails it.
 *
 * @module
 */
import type { Page } from "puppeteer-core";
import { addErrorGroups, prepareErrorGroups } from "../../db/error_groups.ts";
import { storeLogs } from "../../db/storage/write.ts";
import { createProject } from "../../db/projects.ts";
import { addUser } from "../../db/users.ts";
import type { LogRecord } from "../../domain/entry.ts";
import { createId } from "../../domain/ids.ts";
import {
  clickThrough,
  signInAs,
  textIn,
  withE2e,
} from "../_helpers/dashboard_browser.ts";

const IMAGES = new URL("../../docs/images/", import.meta.url);
const HOUR = 3_600_000;

/** Errors of a few kinds over two days, across three releases. */
function demoErrors(now: number): LogRecord[] {
  const kinds: [string, string, number, string[]][] = [
    ["Cannot read properties of undefined (reading 'total')", "cartTotal", 40, [
      "2.3.0",
      "2.4.0",
    ]],
    ["Payment {n} failed: card_declined", "pay", 12, ["2.4.0"]],
    ["Request to /api/stock/{n} timed out", "loadStock", 9, ["2.3.0", "2.4.1"]],
    ["Image {n} failed to load", "lazyLoad", 5, ["2.4.1"]],
  ];
  const records: LogRecord[] = [];
  let n = 0;
  for (const [title, fn, count, releases] of kinds) {
    for (let i = 0; i < count; i++) {
      n++;
      const at = now - Math.round(((i * 7919) % 1000) / 1000 * 40 * HOUR);
      records.push({
        id: createId(at),
        receivedAt: at,
        level: "error",
        data: {
          title: title.replace("{n}", String(1000 + n)),
          stack:
            `Error: ${title}\n    at ${fn} (https://shop.example.com/assets/app.js:${
              40 + n
            }:17)\n    at main (https://shop.example.com/assets/app.js:9:3)`,
        },
        device: { type: "browser", os: "macOS", browser: "Firefox 142" },
        context: {
          environment: "production",
          userId: `u-${n % 23}`,
          release: releases[i % releases.length]!,
        },
        origin: "https://shop.example.com",
        auth: "origin",
      });
    }
  }
  return records.sort((a, b) => a.id < b.id ? -1 : 1);
}

async function shot(page: Page, name: string): Promise<void> {
  await page.evaluate(() => scrollTo(0, 0));
  await page.screenshot({ path: new URL(name, IMAGES).pathname });
  const { size } = await Deno.stat(new URL(name, IMAGES));
  console.log(`docs/images/${name}  ${Math.round(size / 1024)} KiB`);
}

if (import.meta.main) {
  await withE2e(async ({ kv, page, home }) => {
    const project = await createProject(kv, {
      name: "Web shop",
      allow: ["https://shop.example.com"],
    });
    await addUser(kv, {
      email: "ana@example.com",
      password: "correct horse battery",
      role: "member",
      projects: [project.id],
    });
    const now = Date.now() - 1000;
    const errors = demoErrors(now);
    const retentionMs = 30 * 86_400_000;
    const op = kv.atomic();
    storeLogs(op, project.id, errors, { now, retentionMs });
    addErrorGroups(
      op,
      await prepareErrorGroups(kv, project.id, errors, { retentionMs, now }),
    );
    await op.commit();
    await signInAs(page, home);
    const list = `${home}/projects/${project.id}/errors`;
    await page.goto(list);
    const boxes = await page.$$('#groups input[name="fp"]');
    if (boxes.length !== 4) {
      throw new Error(`Expected 4 groups, ${boxes.length}`);
    }
    await boxes[2]!.click();
    await boxes[3]!.click();
    await shot(page, "errors-bulk.png");
    await clickThrough(page, '#bulk button[value="resolve"]');
    const notice = await textIn(page, "#triage-notice");
    if (notice !== "Resolved.") {
      throw new Error(`Expected "Resolved.", ${notice}`);
    }
    const left = await page.$$('#groups input[name="fp"]');
    if (left.length !== 2) {
      throw new Error(`Expected 2 unresolved, ${left.length}`);
    }
    await page.click("#groups a.group-page");
    await page.waitForSelector("#resolve-form");
    await page.type('#resolve-form input[name="in_release"]', "2.5.0");
    await clickThrough(page, '#resolve-form button[value="resolve"]');
    await page.select(
      '#assign-form select[name="assignee"]',
      "ana@example.com",
    );
    await clickThrough(page, '#assign-form button[value="assign"]');
    const status = await textIn(page, "#triage-card .status");
    if (!status.includes("resolved in 2.5.0")) {
      throw new Error(`Expected resolved in 2.5.0, got ${status}`);
    }
    await shot(page, "errors-group.png");
    await page.goto(`${home}/projects/${project.id}/releases`);
    await shot(page, "errors-releases.png");
  });
}

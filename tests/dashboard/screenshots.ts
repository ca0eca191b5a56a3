/// <reference lib="dom" />
/**
 * `deno task screenshots`: refreshes the dashboard's screenshots in
 * docs/images/ (explorer light and dark, settings, rejections, errors, an
 * entry with its stack) at 1280×800, driving headless Chromium over the
 * browser tests' setting (tests/_helpers/dashboard_browser.ts): an in-memory service and
 * dashboard on this machine, a seeded demo project, no port of the run in
 * any picture.
 *
 * @module
 */
import type { Page } from "puppeteer-core";
import { addErrorGroups, prepareErrorGroups } from "../../db/error_groups.ts";
import { storeLogs } from "../../db/storage/write.ts";
import { listProjects } from "../../db/projects.ts";
import type { LogRecord } from "../../domain/entry.ts";
import { createId } from "../../domain/ids.ts";
import {
  signInAs,
  takeScreenshots,
  withE2e,
} from "../_helpers/dashboard_browser.ts";

const IMAGES = new URL("../../docs/images/", import.meta.url);

/** Errors of a few kinds, some with stacks, over the last day. */
function demoErrors(now: number): LogRecord[] {
  const kinds: [string, string, Record<string, unknown>, number][] = [
    ["error", "Payment {n} failed", { code: "card_declined" }, 14],
    ["critical", "Database unreachable", { host: "db-2" }, 3],
    ["error", "Request to /api/stock/{n} timed out", { ms: 30_000 }, 8],
  ];
  const stack = [
    "TypeError: Cannot read properties of undefined (reading 'total')",
    "    at cartTotal (https://shop.example.com/assets/cart.js:41:17)",
    "    at renderSummary (https://shop.example.com/assets/cart.js:88:5)",
    "    at Checkout.update (https://shop.example.com/assets/checkout.js:120:9)",
    "    at HTMLButtonElement.onClick (https://shop.example.com/assets/checkout.js:64:3)",
    ...Array.from(
      { length: 10 },
      (_, i) =>
        `    at dispatch${i} (https://shop.example.com/assets/vendor.js:${
          900 + i
        }:12)`,
    ),
  ].join("\n");
  const records: LogRecord[] = [];
  let n = 0;
  const add = (at: number, level: string, data: Record<string, unknown>) =>
    records.push({
      id: createId(at),
      receivedAt: at,
      level,
      data,
      device: { type: "browser", os: "macOS", browser: "Firefox 142" },
      context: { environment: "production", userId: `u-${n % 50}` },
      origin: "https://shop.example.com",
      auth: "origin",
    });
  for (const [level, title, data, count] of kinds) {
    for (let i = 0; i < count; i++) {
      n++;
      const at = now - Math.round(((i * 7919) % 1000) / 1000 * 20 * 3_600_000);
      add(at, level, {
        title: title.replace("{n}", String(1000 + n)),
        ...data,
      });
    }
  }
  for (let i = 0; i < 6; i++) {
    add(now - 60_000 * (i * 17 + 3), "error", {
      message:
        "TypeError: Cannot read properties of undefined (reading 'total')",
      stack,
    });
  }
  return records.sort((a, b) => a.id < b.id ? -1 : 1);
}

async function shot(page: Page, name: string): Promise<void> {
  await page.screenshot({ path: new URL(name, IMAGES).pathname });
  const { size } = await Deno.stat(new URL(name, IMAGES));
  console.log(`docs/images/${name}  ${Math.round(size / 1024)} KiB`);
}

if (import.meta.main) {
  await withE2e(async ({ kv, page, home, endpoint }) => {
    await signInAs(page, home);
    await Deno.mkdir(IMAGES, { recursive: true });
    await takeScreenshots(page, kv, home, endpoint);
    const demo = (await listProjects(kv)).find((p) => p.name === "Web shop")!;
    const now = Date.now() - 1000;
    const errors = demoErrors(now);
    // Stored as the consumer stores them, grouped in the same commit.
    const op = kv.atomic();
    storeLogs(op, demo.id, errors, { now, retentionMs: 30 * 86_400_000 });
    const retentionMs = 30 * 86_400_000;
    addErrorGroups(
      op,
      await prepareErrorGroups(kv, demo.id, errors, { retentionMs, now }),
    );
    await op.commit();
    await page.goto(`${home}/projects/${demo.id}/errors`);
    await shot(page, "dashboard-errors.png");
    const withStack = errors.findLast((r) => r.data.stack !== undefined)!;
    await page.goto(
      `${home}/projects/${demo.id}?q=TypeError&range=24h&open=${withStack.id}`,
    );
    await page.evaluate(() => scrollTo(0, 0));
    await shot(page, "dashboard-stack.png");
    for (
      const name of [
        "dashboard-explorer.png",
        "dashboard-explorer-dark.png",
        "dashboard-settings.png",
        "dashboard-rejections.png",
      ]
    ) {
      const { size } = await Deno.stat(new URL(name, IMAGES));
      console.log(`docs/images/${name}  ${Math.round(size / 1024)} KiB`);
    }
  });
}

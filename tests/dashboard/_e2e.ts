/// <reference lib="dom" />
/**
 * Helpers of the browser test: the servers it starts, entries sent from a
 * page of another origin, reading the explorer's rows, watching the pages
 * for script errors and refused content, and the README's screenshots.
 *
 * @module
 */
import type { Page } from "puppeteer-core";
import { addLevel, createProject } from "../../db/projects.ts";
import { seedEntries } from "./_seed.ts";

/** The clock of the browser test: the real one, which cannot be moved. */
export const realClock = {
  now: () => Date.now(),
  advance: () => {
    throw new Error("The browser test runs on the real clock");
  },
  set: () => {
    throw new Error("The browser test runs on the real clock");
  },
};

/** A page of another origin: the entries it sends carry its Origin. */
export const SENDER_PAGE = `<!DOCTYPE html><html><head><meta charset="utf-8">
<title>Shop</title></head><body><h1>A shop on another origin</h1></body></html>`;

/** Serves `handler` on a free port of 127.0.0.1. */
export function serve(
  handler: (
    req: Request,
    info: Deno.ServeHandlerInfo<Deno.NetAddr>,
  ) => Response | Promise<Response>,
): Deno.HttpServer<Deno.NetAddr> {
  return Deno.serve(
    { port: 0, hostname: "127.0.0.1", onListen: () => {} },
    handler,
  );
}

/** Sends an entry from the browser page `page` with `fetch`; returns the status. */
export async function sendFrom(
  page: Page,
  endpoint: string,
  body: unknown,
): Promise<number> {
  return await page.evaluate(
    async (url, text) => {
      const res = await fetch(url, {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: text,
      });
      return res.status;
    },
    endpoint,
    JSON.stringify(body),
  );
}

/** Row ids shown in the explorer, top to bottom. */
export async function rowIds(page: Page): Promise<string[]> {
  return await page.$$eval(
    "#entries details.entry",
    (rows) => rows.map((r) => (r as HTMLElement).dataset.id!),
  );
}

/** Summaries of the rows shown in the explorer, top to bottom. */
export async function rowTexts(page: Page): Promise<string[]> {
  return await page.$$eval(
    "#entries details.entry summary .msg",
    (rows) => rows.map((r) => r.textContent ?? ""),
  );
}

/**
 * Collects what a page reports as going wrong: uncaught script errors and
 * console errors (a Content-Security-Policy refusal is one), except the
 * failed loads of answers the test expects (400, 401, 403).
 */
export function watchForProblems(page: Page): string[] {
  const problems: string[] = [];
  page.on("pageerror", (error) => problems.push(`pageerror: ${error}`));
  page.on("console", (message) => {
    if (
      message.type() === "error" &&
      !message.text().startsWith("Failed to load resource")
    ) {
      problems.push(`console: ${message.text()}`);
    }
  });
  return problems;
}

/**
 * Writes the README's screenshots (explorer in light and dark, settings) at
 * 1280×800 into docs/images/, from a demo project of their own so that no
 * port of this run shows.
 */
export async function takeScreenshots(
  page: Page,
  kv: Deno.Kv,
  home: string,
): Promise<void> {
  const demo = await createProject(kv, {
    name: "Web shop",
    allow: ["https://shop.example.com", "com.example.shop.ios"],
  });
  await addLevel(kv, demo.id, "audit");
  await seedEntries(kv, demo.id, {
    count: 400,
    now: Date.now() - 2000,
    spanMs: 3_600_000,
  });
  const newest = await page.goto(
    `${home}/projects/${demo.id}?range=1h`,
  );
  if (newest?.status() !== 200) {
    throw new Error("Cannot open the demo explorer");
  }
  const ids = await rowIds(page);
  await page.goto(
    `${home}/projects/${demo.id}?range=1h&open=${ids[2]}`,
  );
  await page.evaluate(() => scrollTo(0, 0));
  await Deno.mkdir(new URL("../../docs/images/", import.meta.url), {
    recursive: true,
  });
  await page.screenshot({
    path: new URL("../../docs/images/dashboard-explorer.png", import.meta.url)
      .pathname,
  });
  await page.emulateMediaFeatures([{
    name: "prefers-color-scheme",
    value: "dark",
  }]);
  await page.screenshot({
    path: new URL(
      "../../docs/images/dashboard-explorer-dark.png",
      import.meta.url,
    ).pathname,
  });
  await page.emulateMediaFeatures([{
    name: "prefers-color-scheme",
    value: "light",
  }]);
  await page.goto(`${home}/projects/${demo.id}/settings`);
  await page.screenshot({
    path: new URL("../../docs/images/dashboard-settings.png", import.meta.url)
      .pathname,
  });
}

/// <reference lib="dom" />
/**
 * The setting of the browser tests: three servers on this machine — the
 * dashboard, the real ingestion app with its queue pipeline, and a web page
 * of another origin that sends entries from the browser — sharing one
 * in-memory KV, and headless Chromium with two tabs. Also: entries sent from
 * that page, reading the explorer's rows, watching the pages for script
 * errors and refused content, and the README's screenshots.
 *
 * @module
 */
import type { Browser, Page } from "puppeteer-core";
import { createDashboard, type DashboardOptions } from "../../dashboard/app.ts";
import { sign } from "../../auth/signature.ts";
import { addLevel, createProject } from "../../db/projects.ts";
import { listRejected } from "../../db/rejected.ts";
import { launchBrowser } from "./browser.ts";
import { type Harness, harness, serve, wallClock } from "./harness.ts";
import { PASSWORD } from "./dashboard.ts";
import { seedEntries } from "./dashboard_seed.ts";

/**
 * Longest wait for any one thing in the browser: against a hang only, 10
 * times what a step takes on a busy machine (a page of wide entries: 3 s).
 */
export const STEP_MS = 30_000;
/** Longest run of one browser test, against a hang only. */
const RUN_MS = 180_000;

/** What a browser test works with. */
export interface E2e {
  kv: Deno.Kv;
  /** The dashboard's tab, 1280×800, watched for problems. */
  page: Page;
  /** A second tab, for the page of another origin. */
  shop: Page;
  /** The dashboard's origin. */
  home: string;
  /** The service's `…/api/v1/logs`. */
  endpoint: string;
  /** Origin of the sender page (same site as the dashboard, other port). */
  senderOrigin: string;
  /** The sender page under another host name: another site. */
  strangerOrigin: string;
  /** Script errors and refused content seen in `page`. */
  problems: string[];
}

/**
 * Starts the servers and the browser, runs `fn`, and stops everything,
 * failing if the whole run takes longer than {@linkcode RUN_MS}.
 */
export async function withE2e(
  fn: (e: E2e) => Promise<void>,
  options: { dashboard?: Partial<DashboardOptions> } = {},
): Promise<void> {
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
    h = await harness({ kv, clock: wallClock, pipeline: { handOver: true } });
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
      endpoint: () => SNIPPET_ENDPOINT,
      ...options.dashboard,
    });
    const dash = serve((req, info) =>
      dashboard.fetch(req, { remoteAddr: info.remoteAddr })
    );
    servers.push(ingest, sender, dash);
    browser = await launchBrowser();
    const page = await browser.newPage();
    page.setDefaultTimeout(STEP_MS);
    page.setDefaultNavigationTimeout(STEP_MS);
    await page.setViewport({ width: 1280, height: 800 });
    const problems = watchForProblems(page);
    const shop = await browser.newPage();
    shop.setDefaultTimeout(STEP_MS);
    shop.setDefaultNavigationTimeout(STEP_MS);
    await page.bringToFront();
    await fn({
      kv,
      page,
      shop,
      home: `http://127.0.0.1:${dash.addr.port}`,
      endpoint,
      senderOrigin: `http://127.0.0.1:${sender.addr.port}`,
      strangerOrigin: `http://localhost:${sender.addr.port}`,
      problems,
    });
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
}

/**
 * The endpoint the snippets show: a fixed one, so that no port of this run
 * shows in the screenshots (entries are sent to the real one).
 */
export const SNIPPET_ENDPOINT = "https://logs.example.com/api/v1/logs";

/** Signs in through the form. */
export async function signInAs(page: Page, home: string): Promise<void> {
  await page.goto(`${home}/login`);
  await page.type("#password", PASSWORD);
  await clickThrough(page, "#login-form button");
  if (new URL(page.url()).pathname !== "/") {
    throw new Error(`Cannot sign in: ended on ${page.url()}`);
  }
}

/** A page of another origin: the entries it sends carry its Origin. */
export const SENDER_PAGE = `<!DOCTYPE html><html><head><meta charset="utf-8">
<title>Shop</title></head><body><h1>A shop on another origin</h1></body></html>`;

/**
 * Sends an entry from the browser page `page` with `fetch`, as a web page of
 * that origin would, and checks that it was answered 200.
 */
export async function sendFrom(
  page: Page,
  endpoint: string,
  body: unknown,
): Promise<void> {
  const status = await page.evaluate(
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
  if (status !== 200) {
    throw new Error(
      `Expected 200 for an entry sent from the page, got ${status}`,
    );
  }
}

/** Clicks `selector` in `page` and waits for the navigation the click starts. */
export async function clickThrough(
  page: Page,
  selector: string,
): Promise<void> {
  await Promise.all([page.waitForNavigation(), page.click(selector)]);
}

/** The text of the first element of `page` that matches `selector`. */
export async function textIn(page: Page, selector: string): Promise<string> {
  return await page.$eval(selector, (el) => el.textContent ?? "");
}

/** The texts of the elements of `page` that match `selector`, in order. */
export async function textsIn(page: Page, selector: string): Promise<string[]> {
  return await page.$$eval(
    selector,
    (els) => els.map((el) => el.textContent ?? ""),
  );
}

/** The value of the first form field of `page` that matches `selector`. */
export async function valueIn(page: Page, selector: string): Promise<string> {
  return await page.$eval(selector, (el) => (el as HTMLInputElement).value);
}

/**
 * Sets the value of the first form field of `page` that matches `selector`,
 * as a script would: no typing, no events.
 */
export async function setValue(
  page: Page,
  selector: string,
  value: string,
): Promise<void> {
  await page.$eval(selector, (el, v) => {
    (el as HTMLInputElement).value = v;
  }, value);
}

/** Row ids shown in the explorer, top to bottom. */
export async function rowIds(page: Page): Promise<string[]> {
  return await page.$$eval(
    "#entries details.entry",
    (rows) => rows.map((r) => (r as HTMLElement).dataset.id!),
  );
}

/** Summaries of the rows shown in the explorer, top to bottom. */
export function rowTexts(page: Page): Promise<string[]> {
  return textsIn(page, "#entries details.entry summary .msg");
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
 * Sends the demo project's rejected entries to the service as servers and
 * pages would: a page of an origin not allowed, an app not allowed, and a
 * server signing what Python's `json.dumps` writes by default (spaces after
 * `,` and `:`), newest.
 */
async function sendRejected(
  kv: Deno.Kv,
  endpoint: string,
  project: { id: string; secret: string },
): Promise<void> {
  // One at a time, each kept before the next is sent: two batches of one
  // project processed at the same moment may take the same slot of the ring
  // of recent rejections (docs/design.md#rejection-reasons).
  let sent = 0;
  const send = async (body: unknown, headers: Record<string, string>) => {
    const res = await fetch(endpoint, {
      method: "POST",
      headers: { "Content-Type": "application/json", ...headers },
      body: JSON.stringify(body),
    });
    await res.body?.cancel();
    sent++;
    const until = Date.now() + STEP_MS;
    while ((await listRejected(kv, project.id)).length < sent) {
      if (Date.now() > until) throw new Error("A demo rejection never came");
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  };
  await send({
    level: "error",
    projectId: project.id,
    data: { title: "Checkout failed", orderId: 1234 },
    context: { userId: "u-42" },
  }, { Origin: "https://staging.shop.example.com" });
  await send({
    level: "warning",
    projectId: project.id,
    appid: "com.example.shop.android",
    data: { title: "Slow response", ms: 2300 },
  }, {});
  const body = {
    level: "info",
    projectId: project.id,
    data: { title: "Nightly export done", rows: 18_204 },
  };
  const timestamp = String(Date.now());
  const python = JSON.stringify(body).replaceAll(",", ", ").replaceAll(
    ":",
    ": ",
  );
  await send(body, {
    timestamp,
    signature: sign(project.secret, `${project.id}${python}${timestamp}`),
  });
}

/**
 * Writes the README's screenshots (explorer in light and dark, settings,
 * rejections) at 1280×800 into docs/images/, from a demo project of their
 * own so that no port of this run shows.
 */
export async function takeScreenshots(
  page: Page,
  kv: Deno.Kv,
  home: string,
  endpoint: string,
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
  await sendRejected(kv, endpoint, demo);
  await page.goto(`${home}/projects/${demo.id}/rejections`);
  await page.evaluate(() =>
    document.getElementById("kept-title")?.scrollIntoView()
  );
  await page.screenshot({
    path: new URL(
      "../../docs/images/dashboard-rejections.png",
      import.meta.url,
    ).pathname,
  });
}

/**
 * Headless Chromium for the browser tests, driven by `puppeteer-core`. The
 * browser is the system's own (`CHROMIUM_PATH`, by default
 * `/usr/bin/chromium`, Debian's package): puppeteer's own download is not
 * used. `.ci/run` installs the package when it is missing.
 *
 * @module
 */
import puppeteer, { type Browser } from "puppeteer-core";

/** The client library's ESM build, as the browser tests serve it. */
export const CLIENT_ESM_BUILD = new URL(
  "../../client/dist/logger.js",
  import.meta.url,
);

/** Path of the Chromium binary the browser tests drive. */
export function chromiumPath(): string {
  return Deno.env.get("CHROMIUM_PATH") ?? "/usr/bin/chromium";
}

/** Whether the Chromium binary is installed, so browser tests can run. */
export function hasChromium(): boolean {
  try {
    return Deno.statSync(chromiumPath()).isFile;
  } catch {
    return false;
  }
}

/**
 * Launches headless Chromium with no background traffic (the machines that
 * run the tests reach no outside host) and a fresh profile.
 *
 * @example
 * ```ts
 * const browser = await launchBrowser();
 * try {
 *   const page = await browser.newPage();
 *   await page.goto("http://127.0.0.1:8000/");
 * } finally {
 *   await browser.close();
 * }
 * ```
 */
export async function launchBrowser(): Promise<Browser> {
  return await puppeteer.launch({
    executablePath: chromiumPath(),
    headless: true,
    args: [
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
    ],
  });
}

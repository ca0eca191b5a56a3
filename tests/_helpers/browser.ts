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

/**
 * A page that makes `window.logger` for the `endpoint` and `projectId` of
 * its query string, with `options` added, captures uncaught errors, then
 * runs `script` (a module script: it may `await`).
 *
 * @example
 * ```ts
 * const html = capturingPage("Shop", "setTimeout(() => { throw new Error(); });");
 * ```
 */
export function capturingPage(
  title: string,
  script: string,
  options: Record<string, unknown> = {},
): string {
  return `<!doctype html>
<meta charset="utf-8">
<title>${title}</title>
<script type="module">
  import { createLogger } from "/logger.js";
  const query = new URLSearchParams(location.search);
  window.logger = createLogger({
    endpoint: query.get("endpoint"),
    projectId: query.get("projectId"),
    ...${JSON.stringify(options)},
  });
  window.logger.captureErrors();
  ${script}
</script>`;
}

/** A file {@linkcode servePages} answers with. */
export interface PageFile {
  body: string | Uint8Array<ArrayBuffer>;
  /** Its media type, without the charset. */
  type: string;
}

/**
 * Serves pages on 127.0.0.1, on an origin of their own: the client
 * library's ESM build at `/logger.js`, `files` by path, `fallback` at any
 * other path.
 *
 * @example
 * ```ts
 * const pages = servePages({ "/": { body: html, type: "text/html" } }, next);
 * await page.goto(`${pages.origin}/`);
 * await pages.close();
 * ```
 */
export function servePages(
  files: Record<string, PageFile>,
  fallback: PageFile,
): { origin: string; close: () => Promise<void> } {
  const server = Deno.serve(
    { port: 0, hostname: "127.0.0.1", onListen() {} },
    async (req) => {
      const path = new URL(req.url).pathname;
      const file = path === "/logger.js"
        ? {
          body: await Deno.readFile(CLIENT_ESM_BUILD),
          type: "text/javascript",
        }
        : files[path] ?? fallback;
      return new Response(file.body, {
        headers: { "Content-Type": `${file.type}; charset=utf-8` },
      });
    },
  );
  return {
    origin: `http://127.0.0.1:${server.addr.port}`,
    close: () => server.shutdown(),
  };
}

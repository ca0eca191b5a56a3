/**
 * The files the pages load — three stylesheets and a few small script modules
 * under dashboard/assets/ — read once, gzipped once, and served by the app
 * itself (no CDN). Their URLs carry a hash of their content, so they can be
 * cached for good and a new version is fetched as soon as it exists.
 *
 * @module
 */
import { createHash } from "node:crypto";
import { gzipSync } from "node:zlib";

/** Files served under `assets/`. */
export const ASSET_FILES = [
  "app.css",
  "forms.css",
  "explorer.css",
  "app.js",
  "explorer.js",
] as const;

/** One served file. */
export interface Asset {
  name: string;
  type: string;
  body: Uint8Array;
  gzip: Uint8Array;
  /** Short hash of the content, for the URL. */
  hash: string;
}

const TYPES: Record<string, string> = {
  css: "text/css; charset=utf-8",
  js: "text/javascript; charset=utf-8",
};

/**
 * Reads and compresses the asset files.
 *
 * @example
 * ```ts
 * const assets = loadAssets();
 * assets.get("app.css")!.gzip.length; // bytes sent to a browser
 * ```
 */
export function loadAssets(): Map<string, Asset> {
  const assets = new Map<string, Asset>();
  for (const name of ASSET_FILES) {
    const body = Deno.readFileSync(
      new URL(`./assets/${name}`, import.meta.url),
    );
    assets.set(name, {
      name,
      type: TYPES[name.split(".").pop()!]!,
      body,
      gzip: new Uint8Array(gzipSync(body, { level: 9 })),
      hash: createHash("sha256").update(body).digest("hex").slice(0, 12),
    });
  }
  return assets;
}

/** The URL of each asset under `base`, with its content hash. */
export function assetUrls(
  base: string,
  assets: Map<string, Asset>,
): Record<string, string> {
  return Object.fromEntries(
    [...assets.values()].map((
      a,
    ) => [a.name, `${base}/assets/${a.name}?v=${a.hash}`]),
  );
}

/** The answer to `GET assets/<name>`: gzipped when the client takes it. */
export function assetResponse(
  asset: Asset,
  acceptEncoding: string | null,
  versioned: boolean,
): Response {
  const gzip = /\bgzip\b/.test(acceptEncoding ?? "");
  const headers: Record<string, string> = {
    "Content-Type": asset.type,
    "Cache-Control": versioned
      ? "public, max-age=31536000, immutable"
      : "no-cache",
    "Vary": "Accept-Encoding",
    "ETag": `"${asset.hash}"`,
  };
  if (gzip) headers["Content-Encoding"] = "gzip";
  return new Response(
    (gzip ? asset.gzip : asset.body) as Uint8Array<ArrayBuffer>,
    { headers },
  );
}

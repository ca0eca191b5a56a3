/**
 * A real minified bundle and its source map, built by `deno bundle
 * --minify` from a small shop app of two files: `pay()` calls `checkout()`,
 * which throws a `TypeError` on line 3 of `src/cart.js`.
 *
 * @module
 */
import { bundleMinified } from "../../bench/sourcemap.ts";
import { type SourceMapRecord, uploadSourceMap } from "../../db/sourcemaps.ts";

/** The bundle's app: file names and their sources. */
export const APP_SOURCES: Record<string, string> = {
  "src/cart.js": `export function checkout(cart) {
  if (!cart.items) {
    throw new TypeError("Cart has no items");
  }
  return cart.items.length;
}
`,
  "src/main.js": `import { checkout } from "./cart.js";

export function pay() {
  return checkout({});
}

globalThis.pay = pay;
`,
};

/** A built bundle: the minified code and its map. */
export interface Bundle {
  js: string;
  map: string;
}

/**
 * Builds the app into `app.min.js` and `app.min.js.map` with Deno's own
 * bundler, in a temporary directory removed afterwards.
 *
 * @example
 * ```ts
 * const { js, map } = await buildBundle();
 * ```
 */
export async function buildBundle(): Promise<Bundle> {
  return await bundleMinified(APP_SOURCES, "src/main.js");
}

/**
 * The V8 stack of the error the bundle's `pay()` throws, with the bundle's
 * address replaced by `url`: the bundle is written to a temporary file and
 * imported, so the stack is the runtime's own.
 *
 * @example
 * ```ts
 * const stack = await thrownStack(bundle, "https://shop.example.com/app.min.js");
 * ```
 */
export async function thrownStack(
  bundle: Bundle,
  url: string,
): Promise<string> {
  const dir = await Deno.makeTempDir();
  try {
    const path = `${dir}/app.min.js`;
    await Deno.writeTextFile(path, bundle.js);
    const { pay } = await import(`file://${path}`);
    try {
      pay();
    } catch (error) {
      return (error as Error).stack!.replaceAll(`file://${path}`, url);
    }
    throw new Error("The bundle did not throw");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

/**
 * Uploads `bundle`'s map as `app.min.js` of `release` for `projectId`, at
 * the clock `now`.
 *
 * @example
 * ```ts
 * await uploadBundleMap(h.kv, project.id, bundle, h.clock.now(), "2.0.0");
 * ```
 */
export function uploadBundleMap(
  kv: Deno.Kv,
  projectId: string,
  bundle: Bundle,
  now: number,
  release = "1.0.0",
): Promise<SourceMapRecord> {
  return uploadSourceMap(kv, {
    projectId,
    release,
    url: "app.min.js",
    bytes: new TextEncoder().encode(bundle.map),
    now,
  });
}

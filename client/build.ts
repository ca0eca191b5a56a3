/**
 * `deno task build:client`: bundles the client library with Deno's built-in
 * bundler into `client/dist/logger.js` (ESM, for browsers, Node and Bun) and
 * `client/dist/logger.global.js` (a script-tag build defining one global,
 * `LogIngest`), both minified, and prints their sizes, gzipped as a server
 * would send them.
 *
 * `--out DIR` writes elsewhere (the tests compare a fresh build with the
 * committed one).
 *
 * @module
 */
import { parseArgs } from "node:util";

/** One output of the build. */
export interface Build {
  /** File name inside the output folder. */
  name: string;
  /** Source entry, relative to `client/`. */
  entry: string;
  format: "esm" | "iife";
}

/** The builds `build:client` makes. */
export const BUILDS: readonly Build[] = [
  { name: "logger.js", entry: "mod.ts", format: "esm" },
  { name: "logger.global.js", entry: "global.ts", format: "iife" },
];

/** Sizes of one output, in bytes. */
export interface BuildSize {
  name: string;
  bytes: number;
  gzipBytes: number;
}

const CLIENT = new URL(".", import.meta.url);

/**
 * Size of `bytes` once gzipped (`CompressionStream`, as a server compresses).
 *
 * @example
 * ```ts
 * await gzipSize(await Deno.readFile("client/dist/logger.js")); // 2512
 * ```
 */
export async function gzipSize(bytes: Uint8Array): Promise<number> {
  const stream = new Blob([bytes as BlobPart]).stream()
    .pipeThrough(new CompressionStream("gzip"));
  return (await new Response(stream).arrayBuffer()).byteLength;
}

/**
 * Bundles every build into `outDir` and returns the sizes.
 *
 * @example
 * ```ts
 * const sizes = await buildClient({ outDir: await Deno.makeTempDir() });
 * ```
 */
export async function buildClient(
  options: { outDir: string },
): Promise<BuildSize[]> {
  await Deno.mkdir(options.outDir, { recursive: true });
  const sizes: BuildSize[] = [];
  for (const build of BUILDS) {
    const output = `${options.outDir}/${build.name}`;
    const { code, stderr } = await new Deno.Command(Deno.execPath(), {
      args: [
        "bundle",
        "--quiet",
        "--platform=browser",
        `--format=${build.format}`,
        "--minify",
        "--output",
        output,
        new URL(build.entry, CLIENT).pathname,
      ],
      stdout: "null",
      stderr: "piped",
    }).output();
    if (code !== 0) {
      throw new Error(
        `Cannot bundle "${build.entry}": ${new TextDecoder().decode(stderr)}`,
      );
    }
    const bytes = await Deno.readFile(output);
    sizes.push({
      name: build.name,
      bytes: bytes.length,
      gzipBytes: await gzipSize(bytes),
    });
  }
  return sizes;
}

if (import.meta.main) {
  const { values } = parseArgs({
    args: Deno.args,
    options: { out: { type: "string" } },
  });
  const sizes = await buildClient({
    outDir: values.out ?? new URL("dist", CLIENT).pathname,
  });
  for (const { name, bytes, gzipBytes } of sizes) {
    console.log(
      `${
        values.out ?? "client/dist"
      }/${name}  ${bytes} B, ${gzipBytes} B gzipped`,
    );
  }
}

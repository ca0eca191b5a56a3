/**
 * What source maps cost (docs/errors.md#what-it-costs):
 *
 * 1. A map of at least 5 MB (a generated app of 11,000 functions, built by
 *    `deno bundle --minify`, its sources inside): the time to upload it into
 *    a KV file, and the time for a resolver that has never seen it to
 *    resolve a stack of 10 frames through it (reading its slices, parsing
 *    it, decoding its mappings). The target: ≤ 1 s each.
 * 2. The consumer's CPU per entry (typical entries, their errors with a V8
 *    stack of the bundle), with no map, with maps of other releases only,
 *    and with the entries' releases' maps (resolved as they are stored);
 *    and the resolver's own share for entries without maps. The target:
 *    ≤ 10 % more for entries without maps.
 *
 * ```sh
 * deno task bench:sourcemap [--count 20000] [--rounds 5] [--functions 11000]
 * ```
 *
 * @module
 */
import { parseArgs } from "node:util";
import { createProject, type Project } from "../db/projects.ts";
import { uploadSourceMap } from "../db/sourcemaps.ts";
import { SourceMapResolver } from "../db/symbolicate.ts";
import { type QueuedEntry, toLogRecord } from "../domain/entry.ts";
import {
  benchProjects,
  consumerMicros,
  START,
  typicalEntries,
  withMemoryKv,
} from "./scrub.ts";
import { median } from "./timing.ts";
import { wholeNumber } from "./options.ts";

const ORIGIN = "https://shop.example.com";
const BUNDLE_URL = `${ORIGIN}/assets/app.min.js`;
const RELEASES = ["2026.6.3", "2026.7.0", "2026.7.1", "2026.7.2", "2026.8.0"];

/** A generated app of `count` functions, bundled and minified with its map. */
async function bigBundle(count: number): Promise<{ js: string; map: string }> {
  const lines = ["export const all = [];"];
  for (let i = 0; i < count; i++) {
    lines.push(
      `export function handler${i}(order, attempt) {`,
      `  if (!order || order.total < ${i}) {`,
      `    throw new RangeError("Order below the minimum of handler ${i}: " + attempt);`,
      `  }`,
      `  return { id: order.id, total: order.total * ${i + 1}, tag: "h${i}" };`,
      `}`,
      `all.push(handler${i});`,
    );
  }
  return await bundleMinified({ "app.js": lines.join("\n") }, "app.js");
}

/**
 * Bundles `entry` of `sources` (file names and their text) with `deno
 * bundle --minify` into `app.min.js` and its external map, in a temporary
 * directory removed afterwards; returns both.
 *
 * @example
 * ```ts
 * const { js, map } = await bundleMinified({ "main.js": "export const a = 1;" }, "main.js");
 * ```
 */
export async function bundleMinified(
  sources: Record<string, string>,
  entry: string,
): Promise<{ js: string; map: string }> {
  const dir = await Deno.makeTempDir();
  try {
    for (const [name, text] of Object.entries(sources)) {
      const at = name.lastIndexOf("/");
      if (at > 0) {
        await Deno.mkdir(`${dir}/${name.slice(0, at)}`, { recursive: true });
      }
      await Deno.writeTextFile(`${dir}/${name}`, text);
    }
    return await bundleIn(dir, entry);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

/** {@linkcode bundleMinified} in `dir`, where the sources are written. */
async function bundleIn(
  dir: string,
  entry: string,
): Promise<{ js: string; map: string }> {
  const { success, stderr } = await new Deno.Command(Deno.execPath(), {
    args: [
      "bundle",
      "--quiet",
      "--minify",
      "--sourcemap=external",
      "--format=esm",
      "-o",
      `${dir}/app.min.js`,
      `${dir}/${entry}`,
    ],
    cwd: dir,
    stdout: "null",
    stderr: "piped",
  }).output();
  if (!success) {
    throw new Error(`Cannot bundle: ${new TextDecoder().decode(stderr)}`);
  }
  return {
    js: await Deno.readTextFile(`${dir}/app.min.js`),
    map: await Deno.readTextFile(`${dir}/app.min.js.map`),
  };
}

/** A V8 stack of 10 frames at `throw`s spread over the minified code. */
function stackOver(js: string): string {
  const throws: [number, number][] = [];
  js.split("\n").forEach((text, line) => {
    for (
      let at = text.indexOf("throw ");
      at >= 0;
      at = text.indexOf("throw ", at + 1)
    ) {
      throws.push([line + 1, at + 1]);
    }
  });
  const frames = [];
  for (let i = 0; i < 10; i++) {
    const [line, column] = throws[Math.floor((i / 10) * throws.length)]!;
    frames.push(`    at x${i} (${BUNDLE_URL}:${line}:${column})`);
  }
  return `RangeError: Order below the minimum\n${frames.join("\n")}`;
}

/** Upload time, then resolve time, ms, of `map` into a fresh KV file. */
async function uploadAndResolve(
  map: Uint8Array,
  stack: string,
): Promise<{ upload: number; resolve: number; resolved: number }> {
  const dir = await Deno.makeTempDir();
  const kv = await Deno.openKv(`${dir}/kv.sqlite`);
  try {
    const project = await createProject(kv, { name: "maps", allow: [ORIGIN] });
    let began = performance.now();
    await uploadSourceMap(kv, {
      projectId: project.id,
      release: "1.0.0",
      url: "~/assets/app.min.js",
      bytes: map,
      now: Date.now(),
    });
    const upload = performance.now() - began;
    const record = toLogRecord({
      id: "0".repeat(26),
      receivedAt: Date.now(),
      level: "error",
      projectId: project.id,
      data: { title: "Order below the minimum", stack },
      context: { release: "1.0.0" },
    }, "origin");
    began = performance.now();
    const out = await new SourceMapResolver(kv).resolve(project.id, record);
    const resolve = performance.now() - began;
    return {
      upload,
      resolve,
      resolved: out?.frames.filter((f) => f.resolved).length ?? 0,
    };
  } finally {
    kv.close();
    await Deno.remove(dir, { recursive: true });
  }
}

/** `entries` with the bundle's stack on their errors. */
function withStacks(entries: QueuedEntry[], stack: string): QueuedEntry[] {
  return entries.map((e) =>
    e.level === "error" || e.level === "critical"
      ? { ...e, data: { ...e.data, stack } }
      : e
  );
}

/** The resolver's own time per entry, µs, for entries whose release has no map. */
async function resolverMicros(
  project: Project,
  entries: QueuedEntry[],
): Promise<number> {
  return await withMemoryKv(async (kv) => {
    const resolver = new SourceMapResolver(kv);
    const records = entries.map((e) => toLogRecord(e, "origin"));
    const line = () => "";
    await resolver.resolveRecords(project.id, records.slice(0, 1), line);
    const began = performance.now();
    for (let at = 0; at < records.length; at += 50) {
      await resolver.resolveRecords(
        project.id,
        records.slice(at, at + 50),
        line,
      );
    }
    return (performance.now() - began) * 1000 / records.length;
  });
}

/** `--count`, `--rounds` and `--functions`, checked. */
function readOptions(
  args: string[],
): { count: number; rounds: number; functions: number } {
  const { values: v } = parseArgs({
    args,
    options: Object.fromEntries(
      ["count", "rounds", "functions"].map((name) => [name, {
        type: "string" as const,
      }]),
    ),
  });
  const read = (name: string, fallback: number) =>
    wholeNumber(name, String(v[name] ?? fallback), 1, 1_000_000);
  return {
    count: read("count", 20_000),
    rounds: read("rounds", 5),
    functions: read("functions", 11_000),
  };
}

if (import.meta.main) {
  const { count, rounds, functions } = readOptions(Deno.args);
  const big = await bigBundle(functions);
  const mapBytes = new TextEncoder().encode(big.map);
  const bigStack = stackOver(big.js);
  const timings = [];
  for (let round = 0; round < rounds; round++) {
    timings.push(await uploadAndResolve(mapBytes, bigStack));
  }
  console.log(
    `map of ${(mapBytes.length / 1e6).toFixed(2)} MB: upload ${
      median(timings.map((t) => t.upload)).toFixed(0)
    } ms, first resolve of a 10-frame stack ${
      median(timings.map((t) => t.resolve)).toFixed(0)
    } ms (${timings[0]!.resolved} of 10 frames resolved)`,
  );

  const [project] = await benchProjects("sourcemap bench");
  const small = new TextEncoder().encode(big.map);
  const entries = withStacks(
    typicalEntries(project.id, count, START),
    bigStack,
  );
  const upload = (releases: string[]) => async (kv: Deno.Kv) => {
    for (const release of releases) {
      await uploadSourceMap(kv, {
        projectId: project.id,
        release,
        url: "~/assets/app.min.js",
        bytes: small,
        now: START,
      });
    }
  };
  const cases: [string, ((kv: Deno.Kv) => Promise<void>) | undefined][] = [
    ["no maps", undefined],
    ["maps of other releases only", upload(["0.9.0"])],
    ["the entries' releases' maps", upload(RELEASES)],
  ];
  const errors = entries.filter((e) => e.data.stack !== undefined).length;
  console.log(`${entries.length} entries, ${errors} errors with a stack`);
  let base = 0;
  for (const [name, ready] of cases) {
    const micros: number[] = [];
    await consumerMicros(project, entries, ready); // warm-up
    for (let round = 0; round < rounds; round++) {
      micros.push(await consumerMicros(project, entries, ready));
    }
    const m = median(micros);
    if (name === "no maps") base = m;
    console.log(`consumer, ${name}: ${m.toFixed(2)} µs/entry`);
  }
  const own: number[] = [];
  for (let round = 0; round < rounds; round++) {
    own.push(await resolverMicros(project, entries));
  }
  const o = median(own);
  console.log(
    `resolver's own time for entries without maps: ${o.toFixed(3)} µs/entry = ${
      (100 * o / base).toFixed(1)
    } % of the consumer's`,
  );
}

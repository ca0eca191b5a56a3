/**
 * What building a chunk costs the merger: CPU per entry of `buildChunk`
 * with the merger's options (db/storage/merge.ts `mergeGroup`: the members
 * collected for a coarse group, final from half the target size) over
 * chunks of 2,000 lines from the query benchmark's generated entries
 * (bench/query/generate.ts), parsed from their lines as the merger does.
 *
 * With `--base DIR` (another checkout of this repository), its
 * `buildChunk` is measured too, in pairs (base, then this one) in the same
 * process, and every value both build is compared byte for byte: a pair
 * that differs stops the run.
 *
 * ```sh
 * deno run --allow-read bench/chunk_build.ts [--base DIR] [--rounds 10] [--lines 4000]
 * ```
 *
 * CPU is user + system time of the process (`process.cpuUsage`), GC
 * helpers included; wall time is printed beside it.
 *
 * @module
 */
import { parseArgs } from "node:util";
import process from "node:process";
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { createId } from "../domain/ids.ts";
import type { BuildChunkOptions, BuiltChunk } from "../db/storage/chunk.ts";
import * as current from "../db/storage/chunk.ts";
import { encodeRecordLine } from "../db/storage/lines.ts";
import { createGenerator } from "./query/generate.ts";
import { toRecord } from "./query/ingest.ts";
import { median } from "./timing.ts";
import { wholeNumber } from "./options.ts";

const options = {
  base: { type: "string" },
  rounds: { type: "string", default: "10" },
  lines: { type: "string", default: "4000" },
} as const;
const { values } = parseArgs({ args: Deno.args, options });
const rounds = wholeNumber("rounds", values.rounds!, 1, 1000);
const lineCount = wholeNumber("lines", values.lines!, 1, 1_000_000);
const PER_CHUNK = 2000;

type Build = (lines: string[], options?: BuildChunkOptions) => BuiltChunk;

/** The generated entries' lines, in chunks of {@linkcode PER_CHUNK}. */
function generateChunks(): string[][] {
  const generator = createGenerator(11);
  const t0 = Date.UTC(2026, 0, 5);
  const lines = Array.from({ length: lineCount }, (_, i) => {
    const { appid, ...body } = generator.next();
    const receivedAt = t0 + i * 500;
    const id = createId(receivedAt);
    const queued = { ...body, id, receivedAt, projectId: "bench" };
    return encodeRecordLine(toRecord({ ...queued, ...(appid && { appid }) }));
  });
  const chunks: string[][] = [];
  for (let i = 0; i < lines.length; i += PER_CHUNK) {
    chunks.push(lines.slice(i, i + PER_CHUNK));
  }
  return chunks;
}

/** What one build stored, in one byte array per value, members last. */
function storedValues(chunk: BuiltChunk, members: Set<number>): Uint8Array[] {
  return [
    chunk.head,
    ...chunk.rest,
    chunk.summaryValue,
    chunk.bloomValue,
    ...(chunk.columns ? [chunk.columns.head, ...chunk.columns.rest] : []),
    new Uint8Array(new Uint32Array([...members]).buffer),
  ];
}

/** Builds every chunk as the merger does; CPU and wall µs per entry. */
function measure(
  build: Build,
  chunks: string[][],
  out?: Uint8Array[][],
): { cpu: number; wall: number } {
  const cpu = process.cpuUsage();
  const began = performance.now();
  for (const lines of chunks) {
    const members = new Set<number>();
    const chunk = build(lines, {
      tier: 1,
      finalAtBytes: current.CHUNK_TARGET_BYTES / 2,
      members,
    });
    out?.push(storedValues(chunk, members));
  }
  const wall = (performance.now() - began) * 1000;
  const used = process.cpuUsage(cpu);
  return { cpu: (used.user + used.system) / lineCount, wall: wall / lineCount };
}

function sameBytes(a: Uint8Array[][], b: Uint8Array[][]): boolean {
  return a.length === b.length &&
    a.every((values, i) =>
      values.length === b[i]!.length &&
      values.every((v, j) => {
        const w = b[i]![j]!;
        return v.length === w.length && v.every((byte, k) => byte === w[k]);
      })
    );
}

const chunks = generateChunks();
const builds: [string, Build][] = [["this", current.buildChunk]];
if (values.base) {
  const url = pathToFileURL(resolve(values.base, "db/storage/chunk.ts")).href;
  const base = await import(url) as typeof current;
  builds.unshift(["base", base.buildChunk]);
  const expected: Uint8Array[][] = [];
  const actual: Uint8Array[][] = [];
  measure(base.buildChunk, chunks, expected);
  measure(current.buildChunk, chunks, actual);
  if (!sameBytes(expected, actual)) {
    throw new Error("Cannot compare: the two builds stored different bytes");
  }
  console.log(
    "Stored bytes: identical (chunk, summary, blooms, columns, members)",
  );
}
for (let i = 0; i < 3; i++) { // warm-up
  for (const [, build] of builds) measure(build, chunks);
}
console.log(
  `${lineCount} lines in chunks of ${PER_CHUNK}, ${rounds} rounds; ` +
    "µs per entry, CPU (wall)",
);
const cpus = builds.map((): number[] => []);
for (let r = 0; r < rounds; r++) {
  const row = builds.map(([name, build], b) => {
    const { cpu, wall } = measure(build, chunks);
    cpus[b]!.push(cpu);
    return `${name} ${cpu.toFixed(1)} (${wall.toFixed(1)})`;
  });
  console.log(`round ${r + 1}: ${row.join(", ")}`);
}
console.log(
  `median CPU: ${
    builds.map(([name], b) => `${name} ${median(cpus[b]!).toFixed(1)}`)
      .join(", ")
  } µs/entry`,
);

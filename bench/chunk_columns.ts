/**
 * What building a chunk's columns costs at write: chunks built from the
 * query benchmark's generated entries (bench/query/generate.ts) with and
 * without columns, in pairs (one of each, alternating which goes first),
 * as the consumer builds them (200 records at hand, fastest deflate) and as
 * the merger does (2,000 lines, parsed). Reports the median per entry of
 * each and their ratio, and the columns built alone.
 *
 * ```sh
 * deno run bench/chunk_columns.ts [--rounds 30]
 * ```
 *
 * @module
 */
import { parseArgs } from "node:util";
import type { LogRecord } from "../domain/entry.ts";
import { createId } from "../domain/ids.ts";
import { buildChunk, type BuildChunkOptions } from "../db/storage/chunk.ts";
import { encodeRecordLine } from "../db/storage/lines.ts";
import { ColumnsBuilder } from "../db/storage/columns.ts";
import { createGenerator } from "./query/generate.ts";
import { median } from "./timing.ts";

const { values } = parseArgs({
  args: Deno.args,
  options: { rounds: { type: "string", default: "30" } },
});
const rounds = Number(values.rounds);
const generator = createGenerator(7);
const t0 = Date.UTC(2026, 0, 5);
const records: LogRecord[] = Array.from({ length: 2000 }, (_, i) => {
  const { appid, ...entry } = generator.next();
  const receivedAt = t0 + i * 1500;
  return {
    id: createId(receivedAt),
    receivedAt,
    ...entry,
    ...(appid === undefined
      ? { origin: "https://shop.example.com" }
      : { appid }),
    auth: "origin",
  } as LogRecord;
});
const lines = records.map(encodeRecordLine);
const consumer = records.slice(0, 200);
const consumerLines = lines.slice(0, 200);

/** Microseconds per entry of one build. */
function timed(build: () => unknown, entries: number): number {
  const began = performance.now();
  build();
  return (performance.now() - began) * 1000 / entries;
}

const cases: [string, (columns: boolean) => number][] = [
  [
    "consumer: 200 records, fast deflate",
    (columns) =>
      timed(() =>
        buildChunk(
          consumerLines,
          {
            records: consumer,
            fast: true,
            columns,
          } satisfies BuildChunkOptions,
        ), 200),
  ],
  [
    "merger: 2,000 lines, parsed",
    (columns) => timed(() => buildChunk(lines, { columns }), 2000),
  ],
];
console.log(
  "| build | without columns | with columns | ratio |\n|---|---|---|---|",
);
for (const [name, run] of cases) {
  for (let i = 0; i < 5; i++) run(i % 2 === 0); // warm-up
  const without: number[] = [];
  const withColumns: number[] = [];
  const ratios: number[] = [];
  for (let r = 0; r < rounds; r++) {
    const first = r % 2 === 0;
    const a = run(first);
    const b = run(!first);
    const [w, wo] = first ? [a, b] : [b, a];
    withColumns.push(w);
    without.push(wo);
    ratios.push(w / wo);
  }
  const us = (n: number) => `${n.toFixed(2)} µs/entry`;
  console.log(
    `| ${name} | ${us(median(without))} | ${us(median(withColumns))} | ${
      median(ratios).toFixed(3)
    } |`,
  );
}
const alone: number[] = [];
for (let r = 0; r < rounds; r++) {
  alone.push(timed(() => {
    const builder = new ColumnsBuilder();
    for (const record of records) builder.add(record);
    builder.build();
  }, records.length));
}
console.log(
  `\nColumns alone (2,000 records, default deflate): ${
    median(alone).toFixed(2)
  } µs/entry`,
);
const built = buildChunk(lines);
console.log(
  `\nOne chunk of 2,000 entries: ${built.summary.bytes} B of deflated lines, ` +
    `${
      built.columns!.head.length + built.columns!.rest.reduce((n, r) =>
        n + r.length, 0)
    } B of columns`,
);

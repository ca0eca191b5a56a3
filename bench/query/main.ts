/**
 * Query benchmark: 1,000,000 generated entries (bench/query/generate.ts) for
 * one project in a fresh KV file, stored through the real producer and
 * consumer with receipt times spread over 7 days and merged as the
 * service's merger would (bench/query/ingest.ts). Then it reports the KV
 * file's bytes per entry (and as a share of the entries' JSON) and the time
 * to the first 100 results, or to "none", of the queries an operator runs,
 * each checked against what was generated.
 *
 * It is a benchmark, not a test: `deno task test` runs a 20,000-entry
 * variant of the same store for exactness instead (tests/db/query/generated_test.ts).
 *
 * ```sh
 * deno task bench:query                   # 1,000,000 entries
 * deno task bench:query --count 100000    # quicker
 * deno task bench:query --count 10000000 --direct   # final chunks written straight
 * deno task bench:query --json            # machine-readable summary on stdout
 * deno task bench:query --keep data/bench.sqlite   # keep the store (for bench/dashboard.ts)
 * ```
 *
 * Each query (bench/query/queries.ts) runs once on a freshly opened KV
 * handle ("first") and then 5 more times ("median"). Progress goes to
 * stderr, the report to stdout.
 *
 * @module
 */
import { parseArgs } from "node:util";
import { countStoredEntries } from "../../db/query/mod.ts";
import {
  logBloomsPrefix,
  logCoarseBitsPrefix,
  logCoarseGroupsPrefix,
  logSummariesPrefix,
} from "../../db/keys.ts";
import { buildStore } from "./ingest.ts";
import { buildStoreDirect } from "./direct.ts";
import { canOccur } from "./generate.ts";
import { DAY_MS } from "../../domain/entry.ts";
import { ABSENT, measure, PLANTED } from "./queries.ts";

/** Bytes and pages of a SQLite file, read from its header. */
async function sqliteFile(path: string) {
  let bytes = 0;
  for (const suffix of ["", "-wal", "-shm"]) {
    try {
      bytes += (await Deno.stat(path + suffix)).size;
    } catch {
      // absent
    }
  }
  const file = await Deno.open(path);
  const header = new Uint8Array(100);
  await file.read(header);
  file.close();
  const view = new DataView(header.buffer);
  const pageSize = view.getUint16(16) === 1 ? 65_536 : view.getUint16(16);
  return {
    bytes,
    pageSize,
    pages: view.getUint32(28),
    freePages: view.getUint32(36),
  };
}

/** The command line. */
interface Options {
  count: number;
  seed: number;
  json: boolean;
  /** Write final chunks straight (bench/query/direct.ts). */
  direct: boolean;
  keep?: string;
}

function parseOptions(args: string[]): Options {
  const { values } = parseArgs({
    args,
    options: {
      count: { type: "string", default: "1000000" },
      seed: { type: "string", default: "42" },
      json: { type: "boolean", default: false },
      direct: { type: "boolean", default: false },
      keep: { type: "string" },
    },
  });
  const count = Number(values.count);
  if (!Number.isInteger(count) || count < 1000) {
    throw new Error(`Cannot use --count "${values.count}": expected ≥ 1000`);
  }
  if (canOccur(PLANTED) || canOccur(ABSENT)) {
    throw new Error("Cannot plant: the generator can produce the word");
  }
  return {
    count,
    seed: Number(values.seed),
    json: values.json,
    direct: values.direct,
    ...(values.keep === undefined ? {} : { keep: values.keep }),
  };
}

const log = (line: string) => console.error(line);

/** Entries and bytes under `prefix`. */
async function listed(kv: Deno.Kv, prefix: Deno.KvKey) {
  let n = 0;
  let bytes = 0;
  for await (const e of kv.list<Uint8Array>({ prefix }, { batchSize: 500 })) {
    n++;
    bytes += e.value.length;
  }
  return { n, bytes };
}

/** The generated store, and the sizes of what it holds. */
type Built = Awaited<ReturnType<typeof build>>;

/** Builds the store in `path`, then measures what it holds. */
async function build(path: string, options: Options) {
  const { count } = options;
  const start = Date.UTC(2026, 0, 5);
  const spanMs = 7 * DAY_MS;
  const plantAt = Math.floor(count * 0.61);
  const middle = Math.floor(count / 2);
  const kv = await Deno.openKv(path);
  log(
    `${options.direct ? "Writing" : "Ingesting"} ${count} entries into ${path}`,
  );
  const store = await (options.direct ? buildStoreDirect : buildStore)({
    kv,
    count,
    seed: options.seed,
    start,
    spanMs,
    plant: new Map([[plantAt, PLANTED]]),
    // The middle entry with 50 on each side (around one entry), the planted.
    sample: [
      ...Array.from({ length: 101 }, (_, i) => middle - 50 + i),
      plantAt,
    ],
    ids: false,
    onProgress: (n) => log(`  ${n} entries`),
  });
  const stored = await countStoredEntries(kv, store.projectId);
  const summaries = await listed(kv, logSummariesPrefix(store.projectId));
  const blooms = await listed(kv, logBloomsPrefix(store.projectId));
  const coarse = {
    groups: await listed(kv, logCoarseGroupsPrefix(store.projectId)),
    bits: await listed(kv, logCoarseBitsPrefix(store.projectId)),
  };
  kv.close();
  const file = await sqliteFile(path);
  log(`Stored ${stored}; file ${file.bytes} bytes; querying`);
  return {
    count,
    direct: options.direct,
    start,
    spanMs,
    plantAt,
    middle,
    store,
    stored,
    summaries,
    blooms,
    coarse,
    file,
  };
}

/** The figures of a run, as `--json` prints them. */
type Summary = ReturnType<typeof summarize>;

function summarize(
  built: Built,
  measured: Awaited<ReturnType<typeof measure>>,
) {
  const { count, store, stored, file, summaries, blooms, coarse } = built;
  return {
    entries: count,
    direct: built.direct,
    stored,
    rawBytesPerEntry: store.rawBytes / count,
    fileBytes: file.bytes,
    fileBytesPerEntry: file.bytes / count,
    shareOfRaw: file.bytes / store.rawBytes,
    freePages: file.freePages,
    pages: file.pages,
    liveBytesPerEntry: (file.pages - file.freePages) * file.pageSize / count,
    chunks: summaries.n,
    summaryBytes: summaries.bytes,
    bloomBytes: blooms.bytes,
    coarseGroups: coarse.groups.n,
    coarseBytes: coarse.groups.bytes + coarse.bits.bytes,
    ingestEntriesPerSecond: count / store.ingestSeconds,
    mergeSeconds: store.mergeSeconds,
    listSummariesMs: measured.listSummariesMs,
    listBloomsMs: measured.listBloomsMs,
    queries: measured.results,
  };
}

/** The report in Markdown, on stdout. */
function printReport(summary: Summary): void {
  const f = (n: number, d = 1) => n.toFixed(d);
  console.log(`## Query benchmark: ${summary.entries} entries over 7 days\n`);
  console.log(`| measure | value |\n|---|---|`);
  const rows: [string, string][] = [
    ["entries stored", `${summary.stored}`],
    ["raw JSON per entry (as sent)", `${f(summary.rawBytesPerEntry)} B`],
    [
      "KV file per entry",
      `${f(summary.fileBytesPerEntry)} B (${
        f(summary.shareOfRaw * 100)
      } % of raw JSON)`,
    ],
    [
      "of which free pages",
      `${summary.freePages} of ${summary.pages} (${
        f(summary.liveBytesPerEntry)
      } B/entry in use)`,
    ],
    [
      "chunks, summaries, Bloom filters",
      `${summary.chunks}, ${f(summary.summaryBytes / 1024, 0)} KiB, ${
        f(summary.bloomBytes / 1024 / 1024, 2)
      } MiB`,
    ],
    [
      "coarse groups (records and filter segments)",
      `${summary.coarseGroups}, ${f(summary.coarseBytes / 1024 / 1024, 2)} MiB`,
    ],
    [
      summary.direct
        ? "written straight as final chunks"
        : "ingest (producer + consumer, in process)",
      `${f(summary.ingestEntriesPerSecond, 0)} entries/s`,
    ],
    ["merging, all rounds", `${f(summary.mergeSeconds)} s`],
    [
      "listing every summary, every Bloom filter",
      `${f(summary.listSummariesMs)} ms, ${f(summary.listBloomsMs)} ms`,
    ],
  ];
  for (const [measure, value] of rows) console.log(`| ${measure} | ${value} |`);
  console.log(
    `\n| query | first | median of 5 | results | read / skipped / entries | check |\n|---|---|---|---|---|---|`,
  );
  for (const r of summary.queries) {
    const s = r.stats
      ? `${r.stats.chunksRead} / ${r.stats.chunksSkipped} / ${r.stats.entriesScanned}`
      : "";
    console.log(
      `| ${r.name} | ${f(r.firstMs)} ms | ${f(r.medianMs)} ms | ${
        r.results === 0 ? "none" : r.results
      } | ${s} | ${r.check} |`,
    );
  }
}

async function main(): Promise<void> {
  const options = parseOptions(Deno.args);
  const dir = await Deno.makeTempDir({ prefix: "query-bench-" });
  // With --keep, the store is built where it is to stay.
  if (options.keep !== undefined) await refuseExisting(options.keep);
  const path = options.keep ?? `${dir}/kv.sqlite`;
  try {
    const built = await build(path, options);
    const summary = summarize(built, await measure(path, built));
    if (options.json) {
      console.log(JSON.stringify(summary, null, 2));
      return;
    }
    printReport(summary);
    if (options.keep !== undefined) log(`Kept the store in ${options.keep}`);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

/**
 * `--keep` never overwrites: the store is built fresh, in a file of its own,
 * in a folder made if need be (`data/` is not in a fresh checkout).
 */
async function refuseExisting(path: string): Promise<void> {
  try {
    await Deno.lstat(path);
  } catch (error) {
    if (!(error instanceof Deno.errors.NotFound)) throw error;
    const folder = path.slice(0, path.lastIndexOf("/") + 1);
    if (folder !== "") await Deno.mkdir(folder, { recursive: true });
    return;
  }
  throw new Error(`Cannot keep the store in "${path}": expected no file there`);
}

if (import.meta.main) await main();

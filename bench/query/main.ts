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
 * deno task bench:query --json            # machine-readable summary on stdout
 * deno task bench:query --keep data/bench.sqlite   # keep the store (for bench/dashboard.ts)
 * ```
 *
 * Each query runs once on a freshly opened KV handle ("first") and then 5
 * more times ("median"). Progress goes to stderr, the report to stdout.
 *
 * @module
 */
import { parseArgs } from "node:util";
import {
  aroundEntry,
  countStoredEntries,
  histogram,
  parseQuery,
  queryLogs,
  type ScanStats,
} from "../../db/query/mod.ts";
import {
  logBloomsPrefix,
  logSummariesPrefix,
  logUnitId,
} from "../../db/keys.ts";
import { decodeChunkIndex, decodeSummary } from "../../db/query/chunk.ts";
import { buildStore } from "./ingest.ts";
import { canOccur } from "./generate.ts";

const DAY_MS = 86_400_000;
/** The word planted in exactly one entry, and one found in none. */
const PLANTED = "zanzibarquokka";
const ABSENT = "xylophonewombat";

/** One timed query. */
interface QueryResult {
  name: string;
  firstMs: number;
  medianMs: number;
  results: number;
  stats: ScanStats | null;
  check: string;
}

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

async function time<T>(run: () => Promise<T>): Promise<[number, T]> {
  const began = performance.now();
  const value = await run();
  return [performance.now() - began, value];
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    args: Deno.args,
    options: {
      count: { type: "string", default: "1000000" },
      seed: { type: "string", default: "42" },
      json: { type: "boolean", default: false },
      keep: { type: "string" },
    },
  });
  const count = Number(values.count);
  const seed = Number(values.seed);
  if (!Number.isInteger(count) || count < 1000) {
    throw new Error(`Cannot use --count "${values.count}": expected ≥ 1000`);
  }
  if (canOccur(PLANTED) || canOccur(ABSENT)) {
    throw new Error("Cannot plant: the generator can produce the word");
  }
  const log = (line: string) => console.error(line);
  const dir = await Deno.makeTempDir({ prefix: "query-bench-" });
  // With --keep, the store is built where it is to stay.
  if (values.keep !== undefined) await refuseExisting(values.keep);
  const path = values.keep ?? `${dir}/kv.sqlite`;
  try {
    const start = Date.UTC(2026, 0, 5);
    const spanMs = 7 * DAY_MS;
    const plantAt = Math.floor(count * 0.61);
    const middle = Math.floor(count / 2);
    let kv = await Deno.openKv(path);
    log(`Ingesting ${count} entries into ${path}`);
    const store = await buildStore({
      kv,
      count,
      seed,
      start,
      spanMs,
      plant: new Map([[plantAt, PLANTED]]),
      sample: [middle, plantAt],
      onProgress: (n) => log(`  ${n} entries`),
    });
    const stored = await countStoredEntries(kv, store.projectId);
    const listed = async (prefix: Deno.KvKey) => {
      let n = 0;
      let bytes = 0;
      for await (
        const e of kv.list<Uint8Array>({ prefix }, { batchSize: 500 })
      ) {
        n++;
        bytes += e.value.length;
      }
      return { n, bytes };
    };
    const summaries = await listed(logSummariesPrefix(store.projectId));
    const blooms = await listed(logBloomsPrefix(store.projectId));
    kv.close();
    const file = await sqliteFile(path);
    log(`Stored ${stored}; file ${file.bytes} bytes; querying`);

    kv = await Deno.openKv(path);
    const { projectId } = store;
    const middleEntry = store.samples.get(middle)!;
    const user = String(middleEntry.context.userId);
    const hourStart = start + 3.5 * DAY_MS;
    const results: QueryResult[] = [];
    const run = async (
      name: string,
      query: () => Promise<{ n: number; stats: ScanStats | null }>,
      check: (n: number) => string,
    ) => {
      const [firstMs, first] = await time(query);
      const times: number[] = [];
      for (let i = 0; i < 5; i++) times.push((await time(query))[0]);
      times.sort((a, b) => a - b);
      results.push({
        name,
        firstMs,
        medianMs: times[2]!,
        results: first.n,
        stats: first.stats,
        check: check(first.n),
      });
      log(`  ${name}: ${firstMs.toFixed(1)} ms`);
    };
    const page = (filter = {}) => async () => {
      const p = await queryLogs(kv, projectId, { filter, limit: 100 });
      return { n: p.records.length, stats: p.stats };
    };
    const levelCheck = (level: string) => (n: number) =>
      n === Math.min(100, store.levels[level] ?? 0) ? "ok" : "WRONG";
    await run("newest", page(), (n) => n === 100 ? "ok" : "WRONG");
    await run(
      "level:error",
      page(parseQuery("level:error")),
      levelCheck("error"),
    );
    await run(
      "level:critical",
      page(parseQuery("level:critical")),
      levelCheck("critical"),
    );
    await run(`a word in one entry (${PLANTED})`, async () => {
      const p = await queryLogs(kv, projectId, { filter: parseQuery(PLANTED) });
      const right = p.records.length === 1 &&
        p.records[0]!.id === store.ids[plantAt];
      return { n: right ? 1 : -1, stats: p.stats };
    }, (n) => n === 1 ? "ok" : "WRONG");
    await run(
      `a word in none (${ABSENT})`,
      page(parseQuery(ABSENT)),
      (n) => n === 0 ? "ok" : "WRONG",
    );
    await run(`context.userId:${user}`, async () => {
      const p = await queryLogs(kv, projectId, {
        filter: parseQuery(`context.userId:${user}`),
        limit: 100,
      });
      const right = p.records.every((r) => r.context.userId === user) &&
        p.records.some((r) => r.id === middleEntry.id);
      return { n: right ? p.records.length : -1, stats: p.stats };
    }, (n) => n > 0 ? "ok" : "WRONG");
    await run(
      "one hour in the middle",
      page({
        since: hourStart,
        until: hourStart + 3_600_000,
      }),
      (n) => n === 100 ? "ok" : "WRONG",
    );
    await run("around one entry (50 + 50)", async () => {
      const a = await aroundEntry(kv, projectId, middleEntry.id, 50);
      const ids = [...a.before, ...a.after].map((r) => r.id);
      const at = middle;
      const right = a.entry?.id === middleEntry.id &&
        ids.join() ===
          [...store.ids.slice(at - 50, at), ...store.ids.slice(at + 1, at + 51)]
            .join();
      return { n: right ? ids.length : -1, stats: null };
    }, (n) => n === 100 ? "ok" : "WRONG");
    await run("histogram over 7 days", async () => {
      const h = await histogram(kv, projectId, {
        since: start,
        until: start + spanMs,
      });
      let total = 0;
      const byLevel: Record<string, number> = {};
      for (const b of h.buckets) {
        for (const [level, n] of Object.entries(b.counts)) {
          total += n;
          byLevel[level] = (byLevel[level] ?? 0) + n;
        }
      }
      const right = total === count &&
        Object.entries(store.levels).every(([l, n]) => byLevel[l] === n);
      return { n: right ? h.buckets.length : -1, stats: null };
    }, (n) => n > 0 ? "ok" : "WRONG");
    // What a word query over everything reads before any chunk: every Bloom
    // filter (the base of the estimate at 10 times the entries).
    const listAll = async (prefix: Deno.KvKey, bloom: boolean) => {
      const began = performance.now();
      const iter = kv.list({ prefix }, { batchSize: bloom ? 100 : 500 });
      for await (const e of iter) {
        if (bloom) decodeChunkIndex(e.value, logUnitId(e.key));
        else decodeSummary(e.value, logUnitId(e.key));
      }
      return performance.now() - began;
    };
    const listSummariesMs = await listAll(logSummariesPrefix(projectId), false);
    const listBloomsMs = await listAll(logBloomsPrefix(projectId), true);
    kv.close();

    const summary = {
      entries: count,
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
      ingestEntriesPerSecond: count / store.ingestSeconds,
      compactSeconds: store.compactSeconds,
      listSummariesMs,
      listBloomsMs,
      queries: results,
    };
    if (values.json) {
      console.log(JSON.stringify(summary, null, 2));
      return;
    }
    const f = (n: number, d = 1) => n.toFixed(d);
    console.log(`## Query benchmark: ${count} entries over 7 days\n`);
    console.log(`| measure | value |\n|---|---|`);
    console.log(`| entries stored | ${stored} |`);
    console.log(
      `| raw JSON per entry (as sent) | ${f(summary.rawBytesPerEntry)} B |`,
    );
    console.log(
      `| KV file per entry | ${f(summary.fileBytesPerEntry)} B (${
        f(summary.shareOfRaw * 100)
      } % of raw JSON) |`,
    );
    console.log(
      `| of which free pages | ${file.freePages} of ${file.pages} (${
        f(summary.liveBytesPerEntry)
      } B/entry in use) |`,
    );
    console.log(
      `| chunks, summaries, Bloom filters | ${summaries.n}, ${
        f(summaries.bytes / 1024, 0)
      } KiB, ${f(blooms.bytes / 1024 / 1024, 2)} MiB |`,
    );
    console.log(
      `| ingest (producer + consumer, in process) | ${
        f(summary.ingestEntriesPerSecond, 0)
      } entries/s |`,
    );
    console.log(`| merging, all rounds | ${f(store.compactSeconds)} s |`);
    console.log(
      `| listing every summary, every Bloom filter | ${
        f(listSummariesMs)
      } ms, ${f(listBloomsMs)} ms |`,
    );
    console.log(
      `\n| query | first | median of 5 | results | read / skipped / entries | check |\n|---|---|---|---|---|---|`,
    );
    for (const r of results) {
      const s = r.stats
        ? `${r.stats.pagesRead} / ${r.stats.pagesSkipped} / ${r.stats.entriesScanned}`
        : "";
      console.log(
        `| ${r.name} | ${f(r.firstMs)} ms | ${f(r.medianMs)} ms | ${
          r.results === 0 ? "none" : r.results
        } | ${s} | ${r.check} |`,
      );
    }
    if (values.keep !== undefined) log(`Kept the store in ${values.keep}`);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

/** `--keep` never overwrites: the store is built fresh, in a file of its own. */
async function refuseExisting(path: string): Promise<void> {
  try {
    await Deno.lstat(path);
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return;
    throw error;
  }
  throw new Error(`Cannot keep the store in "${path}": expected no file there`);
}

if (import.meta.main) await main();

/**
 * The queries of the query benchmark (bench/query/main.ts), each timed on a
 * freshly opened store and checked against what was generated, and the
 * listings a word query starts with.
 *
 * @module
 */
import {
  aggregate,
  aroundEntry,
  facets,
  histogram,
  parseQuery,
  parseSearch,
  queryLogs,
  type ScanStats,
} from "../../db/query/mod.ts";
import { QUERY_BUDGET_MS } from "../../db/query/query.ts";
import {
  logBloomsPrefix,
  logSummariesPrefix,
  logUnitId,
} from "../../db/keys.ts";
import { decodeChunkBlooms, decodeSummary } from "../../db/storage/chunk.ts";
import { DAY_MS } from "../../domain/entry.ts";
import { timeRuns } from "../timing.ts";
import type { BuiltStore } from "./ingest.ts";

/** The word planted in exactly one entry, and one found in none. */
export const PLANTED = "zanzibarquokka";
export const ABSENT = "xylophonewombat";

/** What the queries know of the generated store. */
export interface Generated {
  store: BuiltStore;
  /** Entries generated. */
  count: number;
  /** Receipt times span `[start, start + spanMs)`. */
  start: number;
  spanMs: number;
  /** Index of the sampled entry in the middle. */
  middle: number;
  /** Index of the entry holding {@linkcode PLANTED}. */
  plantAt: number;
}

/** One timed query. */
export interface QueryResult {
  name: string;
  firstMs: number;
  medianMs: number;
  results: number;
  stats: ScanStats | null;
  check: string;
}

/**
 * What one query answers: a count of results, or -1 when they are wrong;
 * `partial` when its budget ran out first (the check is then not made).
 */
type Query = () => Promise<
  { n: number; stats: ScanStats | null; partial?: boolean }
>;

/**
 * What a query answers: `n` when the answer is `right`, else -1, and
 * whether the answer's budget ran out before it was complete.
 */
function outcome(
  answer: { stats: ScanStats; searchedTo?: number },
  right: boolean,
  n: number,
): Awaited<ReturnType<Query>> {
  return {
    n: right ? n : -1,
    stats: answer.stats,
    partial: answer.searchedTo !== undefined,
  };
}

/** Runs `query` once, then 5 more times for the median. */
async function timeQuery(
  name: string,
  query: Query,
  check: (n: number) => string,
): Promise<QueryResult> {
  const { first, firstMs, medianMs } = await timeRuns(query, 5);
  console.error(`  ${name}: ${firstMs.toFixed(1)} ms`);
  return {
    name,
    firstMs,
    medianMs,
    results: first.n,
    stats: first.stats,
    check: first.partial ? "partial" : check(first.n),
  };
}

/**
 * A user's first page: the user's newest 100 entries (or all), newest
 * first, whatever the count of entries per user.
 */
function userPage(kv: Deno.Kv, store: BuiltStore, user: string): Query {
  return async () => {
    const p = await queryLogs(kv, store.projectId, {
      filter: parseQuery(`context.userId:${user}`),
      limit: 100,
    });
    const ids = p.records.map((r) => r.id);
    const right = p.records.every((r) => r.context.userId === user) &&
      ids.length === Math.min(100, store.users.get(user)!) &&
      ids[0] === store.newestByUser.get(user) &&
      ids.every((id, i) => i === 0 || ids[i - 1]! > id);
    return outcome(p, right, p.records.length);
  };
}

/** The queries an operator runs, each with the check of its answer. */
function queries(
  kv: Deno.Kv,
  built: Generated,
): [string, Query, (n: number) => string][] {
  const { store, middle, plantAt, start } = built;
  const { projectId } = store;
  const middleEntry = store.samples.get(middle)!;
  const user = String(middleEntry.context.userId);
  const hourStart = start + 3.5 * DAY_MS;
  const page = (filter = {}): Query => async () => {
    const p = await queryLogs(kv, projectId, { filter, limit: 100 });
    return outcome(p, true, p.records.length);
  };
  const levelCheck = (level: string) => (n: number) =>
    n === Math.min(100, store.levels[level] ?? 0) ? "ok" : "WRONG";
  const is = (expected: number) => (n: number) =>
    n === expected ? "ok" : "WRONG";
  const some = (n: number) => n > 0 ? "ok" : "WRONG";
  return [
    ["newest", page(), is(100)],
    ["level:error", page(parseQuery("level:error")), levelCheck("error")],
    [
      "level:critical",
      page(parseQuery("level:critical")),
      levelCheck("critical"),
    ],
    [`a word in one entry (${PLANTED})`, async () => {
      const p = await queryLogs(kv, projectId, { filter: parseQuery(PLANTED) });
      const right = p.records.length === 1 &&
        p.records[0]!.id === store.samples.get(plantAt)!.id;
      return outcome(p, right, 1);
    }, is(1)],
    [`a word in none (${ABSENT})`, page(parseQuery(ABSENT)), is(0)],
    [`context.userId:${user}`, userPage(kv, store, user), some],
    [
      "one hour in the middle",
      page({ since: hourStart, until: hourStart + 3_600_000 }),
      is(100),
    ],
    ["around one entry (50 + 50)", async () => {
      const a = await aroundEntry(kv, projectId, middleEntry.id, 50);
      const ids = [...a.before, ...a.after].map((r) => r.id);
      const at = middle;
      const expected = [
        ...Array.from({ length: 50 }, (_, i) => at - 50 + i),
        ...Array.from({ length: 50 }, (_, i) => at + 1 + i),
      ].map((i) => store.samples.get(i)!.id);
      const right = a.entry?.id === middleEntry.id &&
        ids.join() === expected.join();
      return { n: right ? ids.length : -1, stats: null };
    }, is(100)],
    ...pipeQueries(kv, built),
    ["histogram over 7 days", async () => {
      const h = await histogram(kv, projectId, {
        since: start,
        until: start + built.spanMs,
        // As read at the store's end: its counters within every retention.
        now: start + built.spanMs,
      });
      let total = 0;
      const byLevel: Record<string, number> = {};
      for (const b of h.buckets) {
        for (const [level, n] of Object.entries(b.counts)) {
          total += n;
          byLevel[level] = (byLevel[level] ?? 0) + n;
        }
      }
      const right = total === built.count &&
        Object.entries(store.levels).every(([l, n]) => byLevel[l] === n);
      return { n: right ? h.buckets.length : -1, stats: null };
    }, some],
  ];
}

/**
 * The aggregations over the whole store, each checked against the counts
 * taken while generating: `n` is the rows answered, -1 when one is wrong
 * or the answer is partial. Their names escape `|` for the report's table.
 */
function pipeQueries(
  kv: Deno.Kv,
  built: Generated,
): [string, Query, (n: number) => string][] {
  const { projectId, users, severeByHour } = built.store;
  const run = async (q: string) => {
    const { filter, pipe } = parseSearch(q);
    return await aggregate(kv, projectId, {
      filter,
      pipe: pipe!,
      now: built.start + built.spanMs,
    });
  };
  const byCount = [...users].sort((a, b) =>
    b[1] - a[1] || (a[0] < b[0] ? -1 : 1)
  );
  const some = (n: number) => n > 0 ? "ok" : "WRONG";
  return [
    ["level>=error \\| count by (time 1h, context.service)", async () => {
      const a = await run("level>=error | count by (time 1h, context.service)");
      const right = a.searchedTo === undefined &&
        a.rows.length === severeByHour.size &&
        a.rows.every((r) =>
          severeByHour.get(
            `${Date.parse(String(r.time))} ${
              JSON.stringify(r["context.service"])
            }`,
          ) === r.count
        );
      return outcome(a, right, a.rows.length);
    }, some],
    ["* \\| top 10 context.userId", async () => {
      const a = await run("* | top 10 context.userId");
      const right = a.searchedTo === undefined && a.rows.length === 10 &&
        a.rows.every((r, i) =>
          r["context.userId"] === byCount[i]![0] && r.count === byCount[i]![1]
        );
      return outcome(a, right, a.rows.length);
    }, some],
    ["facets of 7 days (level, service, …)", async () => {
      const { start, spanMs, count } = built;
      const f = await facets(kv, projectId, {
        since: start,
        until: start + spanMs,
        budget: { ms: QUERY_BUDGET_MS },
      });
      const levels = f.facets[0]!.values;
      const right = f.searchedTo === undefined && f.total === count &&
        levels.every((v) => built.store.levels[String(v.value)] === v.count) &&
        f.facets.every((field) => !field.tooMany);
      return outcome(f, right, f.facets.length);
    }, some],
    ["* \\| uniq context.userId", async () => {
      const a = await run("* | uniq context.userId");
      const right = a.searchedTo === undefined && !a.estimate &&
        a.rows[0]!.count === users.size;
      return outcome(a, right, users.size);
    }, some],
  ];
}

/**
 * Time to list every entry under `prefix` and decode it. A word query over
 * everything reads every Bloom filter before any chunk (the base of the
 * estimate at 10 times the entries).
 */
async function listAll(
  kv: Deno.Kv,
  prefix: Deno.KvKey,
  bloom: boolean,
): Promise<number> {
  const began = performance.now();
  const iter = kv.list({ prefix }, { batchSize: bloom ? 100 : 500 });
  for await (const e of iter) {
    if (bloom) decodeChunkBlooms(e.value, logUnitId(e.key));
    else decodeSummary(e.value, logUnitId(e.key));
  }
  return performance.now() - began;
}

/** Runs the queries and the listings on a freshly opened store. */
export async function measure(path: string, built: Generated) {
  const kv = await Deno.openKv(path);
  const results: QueryResult[] = [];
  for (const [name, query, check] of queries(kv, built)) {
    results.push(await timeQuery(name, query, check));
  }
  const { projectId } = built.store;
  const listSummariesMs = await listAll(
    kv,
    logSummariesPrefix(projectId),
    false,
  );
  const listBloomsMs = await listAll(kv, logBloomsPrefix(projectId), true);
  kv.close();
  return { results, listSummariesMs, listBloomsMs };
}

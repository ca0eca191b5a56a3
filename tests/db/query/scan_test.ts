import type { LogRecord } from "../../../domain/entry.ts";
import assert from "node:assert/strict";
import { logChunksPrefix } from "../../../db/keys.ts";
import { compileFilter } from "../../../db/query/filter.ts";
import { scan } from "../../../db/query/scan.ts";
import {
  AttemptMemory,
  MAX_KEPT_CHARS,
  MAX_KEPT_VERDICTS,
} from "../../../db/query/attempts.ts";
import {
  aroundEntry,
  countStoredEntries,
  getEntry,
  listLogs,
  type Order,
  parseQuery,
  queryLogs,
  tailLogs,
} from "../../../db/query/mod.ts";
import { mergeProject } from "../../../db/storage/merge.ts";
import {
  HOUR,
  kvTest,
  mergeAt,
  noise,
  queryProject,
  queryProjectTest,
  recordAt,
  sortedIds,
  storeBatch,
  T0,
  withQueryProject,
} from "../../_helpers/query.ts";

async function count(kv: Deno.Kv, prefix: Deno.KvKey): Promise<number> {
  return (await Array.fromAsync(kv.list({ prefix }))).length;
}

/** Every id, page by page of `limit`, following cursors. */
async function pagedIds(
  kv: Deno.Kv,
  projectId: string,
  order: Order,
  limit: number,
  filter = {},
): Promise<string[]> {
  const ids: string[] = [];
  let cursor: string | undefined;
  for (;;) {
    const page = await queryLogs(kv, projectId, {
      order,
      limit,
      filter,
      ...(cursor ? { cursor } : {}),
    });
    ids.push(...page.records.map((r) => r.id));
    if (page.cursor === null) return ids;
    cursor = page.cursor;
  }
}

/**
 * Two processes store pages covering the same seconds; some move into
 * chunks; a late batch lands in merged time and becomes a chunk of its
 * own; fresh pages stay. Returns every record stored.
 */
async function overlappingStore(kv: Deno.Kv, projectId: string) {
  const all: LogRecord[] = [];
  const data = (i: number) => ({ title: "Entry", n: i, blob: noise(i) });
  for (let batch = 0; batch < 12; batch++) {
    const a: LogRecord[] = [];
    const b: LogRecord[] = [];
    for (let k = batch * 60; k < (batch + 1) * 60; k++) {
      const t = T0 + k * 5000;
      for (const dt of [0, 400, 900]) {
        a.push(recordAt(t + dt, { data: data(k) }));
      }
      for (const dt of [200, 700]) {
        b.push(recordAt(t + dt, { data: data(-1 - k) }));
      }
    }
    await storeBatch(kv, projectId, a);
    await storeBatch(kv, projectId, b);
    all.push(...a, ...b);
  }
  // 3,600 entries over an hour: the first ~40 minutes settle into chunks.
  await mergeAt(kv, projectId, T0 + 2 * HOUR - 20 * 60_000);
  const late = Array.from(
    { length: 40 },
    (_, i) => recordAt(T0 + 600_000 + i * 7001, { data: data(1e6 + i) }),
  );
  await storeBatch(kv, projectId, late, T0 + 3 * HOUR);
  all.push(...late);
  await mergeAt(kv, projectId, T0 + 2 * HOUR - 20 * 60_000);
  const fresh = Array.from(
    { length: 30 },
    (_, i) => recordAt(T0 + HOUR + i * 100, { data: data(2e6 + i) }),
  );
  await storeBatch(kv, projectId, fresh);
  all.push(...fresh);
  return all;
}

Deno.test("entries of overlapping chunks list in exact time order, every way", async (t) => {
  await withQueryProject(async (kv, projectId) => {
    const all = await overlappingStore(kv, projectId);
    const ids = sortedIds(all);
    const chunks = await count(kv, logChunksPrefix(projectId));
    assert.ok(chunks >= 3, `${chunks} chunks`);
    await t.step("all, newest and oldest first", async () => {
      assert.deepEqual(await pagedIds(kv, projectId, "oldest", 1000), ids);
      assert.deepEqual(
        await pagedIds(kv, projectId, "newest", 1000),
        [...ids].reverse(),
      );
    });
    await t.step("page by page of 97, following cursors", async () => {
      assert.deepEqual(await pagedIds(kv, projectId, "oldest", 97), ids);
      assert.deepEqual(
        await pagedIds(kv, projectId, "newest", 97),
        [...ids].reverse(),
      );
    });
    await t.step("time ranges cutting through chunks and pages", async () => {
      for (
        const [since, until] of [
          [T0 + 601_234, T0 + 1_800_000],
          [T0 + 2_400_000, T0 + 3_000_000],
          [T0 + 3_000_000, T0 + 4_000_000],
        ]
      ) {
        const inRange = all.filter((r) =>
          r.receivedAt >= since! && r.receivedAt < until!
        );
        const filter = { since, until };
        assert.deepEqual(
          await pagedIds(kv, projectId, "oldest", 100, filter),
          sortedIds(inRange),
        );
        assert.deepEqual(
          await pagedIds(kv, projectId, "newest", 33, filter),
          sortedIds(inRange).reverse(),
        );
      }
    });
    await t.step("listLogs yields the same", async () => {
      const listed = await Array.fromAsync(listLogs(kv, projectId));
      assert.deepEqual(listed.map((r) => r.id), ids);
      const back = await Array.fromAsync(
        listLogs(kv, projectId, { reverse: true, limit: 10 }),
      );
      assert.deepEqual(back.map((r) => r.id), [...ids].reverse().slice(0, 10));
    });
    await t.step("records come back as stored", async () => {
      const byId = new Map(all.map((r) => [r.id, r]));
      for await (const r of listLogs(kv, projectId)) {
        assert.deepEqual(r, byId.get(r.id));
      }
    });
  });
});

queryProjectTest(
  "a chunk whose summary or Bloom filter rules it out is not read",
  async (kv, projectId) => {
    // Hour 1: info only. Hour 3: some errors, one of them with a rare word.
    const quiet = Array.from(
      { length: 200 },
      (_, i) => recordAt(T0 + i * 1000),
    );
    const loud = Array.from(
      { length: 200 },
      (_, i) =>
        recordAt(T0 + 2 * HOUR + i * 1000, {
          level: i % 10 === 0 ? "error" : "info",
          data: {
            title: "Entry",
            message: i === 50 ? "quokka sighted" : "calm",
          },
        }),
    );
    await storeBatch(kv, projectId, quiet);
    await storeBatch(kv, projectId, loud);
    await mergeAt(kv, projectId, T0 + 5 * HOUR);
    assert.equal(await count(kv, logChunksPrefix(projectId)), 2);

    const errors = await queryLogs(kv, projectId, {
      filter: parseQuery("level:error"),
    });
    assert.equal(errors.records.length, 20);
    assert.deepEqual(errors.stats, {
      chunksRead: 1,
      chunksSkipped: 1,
      entriesScanned: 200,
    });
    const word = await queryLogs(kv, projectId, {
      filter: parseQuery("quokka"),
    });
    assert.deepEqual(word.records.map((r) => r.id), [loud[50]!.id]);
    assert.equal(word.stats.chunksRead, 1);
    assert.equal(word.stats.chunksSkipped, 1);
    const none = await queryLogs(kv, projectId, {
      filter: parseQuery("wallaby"),
    });
    assert.deepEqual(none.records, []);
    assert.equal(none.stats.chunksRead, 0);
    assert.equal(none.stats.chunksSkipped, 2);
    const one = await queryLogs(kv, projectId, {
      filter: parseQuery(`id:${quiet[7]!.id}`),
    });
    assert.deepEqual(one.records, [quiet[7]]);
    assert.equal(one.stats.chunksRead, 1);
    // Newest first stops at the newest chunk: the older one is never read.
    const newest = await queryLogs(kv, projectId, { limit: 10 });
    assert.deepEqual(newest.stats, {
      chunksRead: 1,
      chunksSkipped: 0,
      entriesScanned: 200,
    });
  },
);

queryProjectTest(
  "in a chunk that may match, only the blocks that may are inflated",
  async (kv, projectId) => {
    const records = Array.from(
      { length: 1500 },
      (_, i) =>
        recordAt(T0 + i * 500, {
          context: { userId: `user_${i}`, sessionId: `s-${i * 7919}` },
          data: { title: "Entry", message: `Request ${i} took ${i} ms` },
        }),
    );
    for (let i = 0; i < 1500; i += 100) {
      await storeBatch(kv, projectId, records.slice(i, i + 100));
    }
    await mergeAt(kv, projectId, T0 + 5 * HOUR);
    assert.equal(await count(kv, logChunksPrefix(projectId)), 1);
    const page = await queryLogs(kv, projectId, {
      filter: parseQuery("context.userId:user_700"),
    });
    assert.deepEqual(page.records, [records[700]]);
    assert.equal(page.stats.chunksRead, 1);
    assert.ok(
      page.stats.entriesScanned < 1500 / 2,
      `${page.stats.entriesScanned} entries scanned`,
    );
  },
);

queryProjectTest(
  "a cursor stays exact while new entries arrive and pages move into chunks",
  async (kv, projectId) => {
    const first = Array.from({ length: 300 }, (_, i) => recordAt(T0 + i * 997));
    await storeBatch(kv, projectId, first);
    const newest = sortedIds(first).reverse();
    const page1 = await queryLogs(kv, projectId, { limit: 50 });
    assert.deepEqual(page1.records.map((r) => r.id), newest.slice(0, 50));
    // Newer entries arrive, and everything settled is merged.
    await storeBatch(
      kv,
      projectId,
      Array.from({ length: 100 }, (_, i) => recordAt(T0 + 400_000 + i * 10)),
    );
    await mergeAt(kv, projectId, T0 + 3 * HOUR);
    assert.ok(await count(kv, logChunksPrefix(projectId)) > 0);
    const page2 = await queryLogs(kv, projectId, {
      limit: 50,
      cursor: page1.cursor!,
    });
    assert.deepEqual(page2.records.map((r) => r.id), newest.slice(50, 100));
    const rest = await queryLogs(kv, projectId, {
      limit: 1000,
      cursor: page2.cursor!,
    });
    assert.deepEqual(rest.records.map((r) => r.id), newest.slice(100));
    assert.equal(rest.cursor, null);
    await assert.rejects(
      () =>
        queryLogs(kv, projectId, { order: "oldest", cursor: page1.cursor! }),
      /Cannot read cursor/,
    );
  },
);

/**
 * A KV handle on which "another process" merges the project's chunks while
 * a read is in the middle of its listing of summaries.
 */
function racingKv(real: Deno.Kv, projectId: string) {
  const state = { merged: false };
  const kv = new Proxy(real, {
    get(target, name) {
      if (name === "list") {
        return (
          selector: Deno.KvListSelector,
          options?: Deno.KvListOptions,
        ) => {
          const iter = target.list(selector, options);
          const from = "prefix" in selector ? selector.prefix : selector.start;
          if (state.merged || from?.[0] !== "log_summaries") return iter;
          return (async function* () {
            for (let n = 0;; n++) {
              if (n === 3 && !state.merged) {
                state.merged = true;
                await mergeProject(target, projectId, { now: T0 + 9 * HOUR });
              }
              const next = await iter.next();
              if (next.done) return;
              yield next.value;
            }
          })();
        };
      }
      const value = Reflect.get(target, name);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
  return { kv, state };
}

kvTest(
  "a read during which a merge commits is done again, and stays exact",
  async (real) => {
    const store = async () => {
      const projectId = await queryProject(real);
      const records = Array.from(
        { length: 500 },
        (_, i) => recordAt(T0 + i * 5000),
      );
      for (let i = 0; i < 500; i += 50) {
        await storeBatch(real, projectId, records.slice(i, i + 50));
      }
      return { projectId, ids: sortedIds(records).reverse() };
    };
    // The merge moves entries behind the listing: the scan sees it and reads again.
    const bare = await store();
    const raced = racingKv(real, bare.projectId);
    const scanned = await scan(raced.kv, bare.projectId, {
      order: "newest",
      filter: compileFilter({}),
      limit: 1000,
    });
    assert.ok(raced.state.merged);
    assert.deepEqual(scanned.records.map((r) => r.id), bare.ids);

    const guarded = await store();
    const racing = racingKv(real, guarded.projectId);
    const page = await queryLogs(racing.kv, guarded.projectId, { limit: 1000 });
    assert.ok(racing.state.merged);
    assert.deepEqual(page.records.map((r) => r.id), guarded.ids);
  },
);

queryProjectTest(
  "two mergers racing on one project store each entry once",
  async (kv, projectId) => {
    const records = Array.from(
      { length: 2000 },
      (_, i) => recordAt(T0 + i * 1500, { data: { blob: noise(i) } }),
    );
    for (let i = 0; i < 2000; i += 100) {
      await storeBatch(kv, projectId, records.slice(i, i + 100));
    }
    const now = T0 + 5 * HOUR;
    const [a, b] = await Promise.all([
      mergeProject(kv, projectId, { now }),
      mergeProject(kv, projectId, { now }),
    ]);
    assert.ok(a.merges + b.merges > 0);
    const again = await mergeProject(kv, projectId, { now });
    assert.equal(a.entries + b.entries + again.entries, 2000);
    const listed = await Array.fromAsync(listLogs(kv, projectId));
    assert.deepEqual(listed.map((r) => r.id), sortedIds(records));
    assert.equal(await countStoredEntries(kv, projectId), 2000);
  },
);

queryProjectTest(
  "getEntry and aroundEntry find entries in chunks and pages",
  async (kv, projectId) => {
    const all = await overlappingStore(kv, projectId);
    const ids = sortedIds(all);
    const byId = new Map(all.map((r) => [r.id, r]));
    for (const at of [0, 1, 500, 1799, 2500, ids.length - 2, ids.length - 1]) {
      const id = ids[at]!;
      assert.deepEqual(await getEntry(kv, projectId, id), byId.get(id));
      const around = await aroundEntry(kv, projectId, id, 20);
      assert.deepEqual(around.entry, byId.get(id));
      assert.deepEqual(
        around.before.map((r) => r.id),
        ids.slice(Math.max(0, at - 20), at),
      );
      assert.deepEqual(
        around.after.map((r) => r.id),
        ids.slice(at + 1, at + 21),
      );
    }
    assert.equal(await getEntry(kv, projectId, "0".repeat(28)), null);
    assert.equal(await getEntry(kv, projectId, "not an id"), null);
  },
);

queryProjectTest(
  "tailLogs hands out settled entries once each, oldest first",
  async (kv, projectId) => {
    await storeBatch(kv, projectId, [recordAt(T0), recordAt(T0 + 10)]);
    const start = await tailLogs(kv, projectId, { afterId: null, now: T0 + 5 });
    assert.deepEqual(start.records.map((r) => r.receivedAt), []);
    const first = await tailLogs(kv, projectId, {
      afterId: start.lastId,
      now: T0 + 2000,
    });
    assert.deepEqual(first.records.map((r) => r.receivedAt), [T0, T0 + 10]);
    // Pages of two processes, one written late: both after the horizon of
    // the previous call, so nothing is skipped.
    await storeBatch(kv, projectId, [recordAt(T0 + 1500), recordAt(T0 + 3000)]);
    await storeBatch(kv, projectId, [
      recordAt(T0 + 1200, { level: "error" }),
    ]);
    const second = await tailLogs(kv, projectId, {
      afterId: first.lastId,
      now: T0 + 5000,
    });
    assert.deepEqual(
      second.records.map((r) => r.receivedAt),
      [T0 + 1200, T0 + 1500, T0 + 3000],
    );
    const errors = await tailLogs(kv, projectId, {
      afterId: null,
      now: T0 + 5000,
      filter: { levels: ["error"] },
    });
    assert.deepEqual(errors.records.map((r) => r.receivedAt), [T0 + 1200]);
    const again = await tailLogs(kv, projectId, {
      afterId: second.lastId,
      now: T0 + 5000,
    });
    assert.deepEqual(again.records, []);
  },
);

/**
 * 48 chunks a second apart from T0, every fourth with the word "numbat" in
 * its one entry: a search's matches lie far apart.
 */
async function storeApart(kv: Deno.Kv, projectId: string): Promise<void> {
  for (let i = 0; i < 48; i++) {
    const data = { title: "Entry", message: i % 4 === 0 ? "numbat" : "x" };
    await storeBatch(kv, projectId, [recordAt(T0 + 1000 * i, { data })]);
  }
}

/**
 * A view of `kv` that calls `onRead` with the number of chunk values each
 * `getMany` of chunks asks for, before the read; a throw fails the read.
 */
function onChunkReads(
  kv: Deno.Kv,
  projectId: string,
  onRead: (chunks: number) => void,
): Deno.Kv {
  const chunkPrefix = String(logChunksPrefix(projectId)[0]);
  return new Proxy(kv, {
    get(target, key) {
      if (key === "getMany") {
        return (keys: Deno.KvKey[], options?: Deno.KvListOptions) => {
          const chunks = keys.filter((k) => k[0] === chunkPrefix).length;
          try {
            if (chunks > 0) onRead(chunks);
          } catch (error) {
            return Promise.reject(error);
          }
          return target.getMany(keys, options);
        };
      }
      const value = Reflect.get(target, key, target);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}

queryProjectTest(
  "a search whose chunks lie far apart fetches them a few at a time, newest and oldest first",
  async (kv, projectId) => {
    // 48 chunks, every fourth holding the word: the listing looks ahead
    // for the next ones instead of fetching each when its turn comes.
    await storeApart(kv, projectId);
    for (const order of ["newest", "oldest"] as const) {
      const reads: number[] = [];
      const counting = onChunkReads(kv, projectId, (chunks) => {
        reads.push(chunks);
      });
      const page = await queryLogs(counting, projectId, {
        filter: parseQuery("numbat"),
        limit: 100,
        order,
      });
      assert.equal(page.records.length, 12);
      // One chunk first (a newest-first page often needs no more), then
      // two, four, eight at a time.
      assert.deepEqual(reads, [1, 2, 4, 5], order);
    }
  },
);

queryProjectTest(
  "a long search starts its next read of chunks before it reads the chunks of the last, so the wait overlaps that work",
  async (kv, projectId) => {
    await storeApart(kv, projectId);
    // Per read of chunks: how many entries the search had tested by then.
    const testedAtRead: number[] = [];
    let tested = 0;
    const counting = onChunkReads(kv, projectId, () => {
      testedAtRead.push(tested);
    });
    const numbat = compileFilter(parseQuery("numbat"));
    const filter = {
      ...numbat,
      test: (record: LogRecord) => (tested++, numbat.test(record)),
    };
    const page = await scan(counting, projectId, {
      filter,
      limit: 100,
      order: "newest",
    });
    assert.equal(page.records.length, 12);
    // Reads of 1, 2, 4 and 5 chunks. Once reads are 4 large, the next
    // starts when a chunk is taken while fewer than a read's worth are
    // fetched or being fetched ahead, before its entries are tested: the
    // third with the first chunk of the second read, the fourth with the
    // first of the third. Without that: 3 and 7 entries tested by then.
    assert.deepEqual(testedAtRead, [0, 1, 1, 2]);
  },
);

queryProjectTest(
  "a read started ahead that fails is the search's error once its chunk is taken, and nothing at all when the search ends before",
  async (kv, projectId) => {
    await storeApart(kv, projectId);
    let reads = 0;
    // The third read of chunks, the first started ahead, fails.
    const failing = onChunkReads(kv, projectId, () => {
      if (++reads === 3) throw new Error("disk I/O error");
    });
    const filter = compileFilter(parseQuery("numbat"));
    // Three entries (the limit and one more) are in the first two reads.
    const short = await scan(failing, projectId, {
      filter,
      limit: 2,
      order: "newest",
    });
    assert.equal(short.records.length, 2);
    // The reads ahead were made (the third failed, unheard, and the
    // fourth was started while fewer than 8 chunks were ahead).
    assert.equal(reads, 4);
    reads = 0;
    await assert.rejects(
      () => scan(failing, projectId, { filter, limit: 100, order: "newest" }),
      /disk I\/O error/,
    );
  },
);

Deno.test("a scan keeps what its attempts learned for the next ones, up to its bounds", () => {
  const memory = new AttemptMemory();
  assert.equal(memory.again, false);
  const keep = (lastId: string, versionstamp: string, line: string) =>
    memory.keepSelected(lastId, {
      versionstamp,
      ids: ["i"],
      lines: [line],
      scanned: 1,
    });
  keep("a", "1", "x".repeat(MAX_KEPT_CHARS - 10));
  keep("b", "1", "y".repeat(20));
  assert.equal(memory.selected("b", "1"), undefined);
  // A chunk read again replaces what was kept of it.
  keep("a", "2", "z");
  keep("b", "1", "y".repeat(20));
  assert.equal(memory.selected("a", "1"), undefined);
  assert.deepEqual(memory.selected("a", "2")?.lines, ["z"]);
  assert.deepEqual(memory.selected("b", "1")?.lines, ["y".repeat(20)]);
  for (let i = 0; i <= MAX_KEPT_VERDICTS; i++) {
    memory.keepVerdict(String(i), { versionstamp: "1", skipped: true });
  }
  // Later attempts know of the chunks listed before they began.
  assert.equal(memory.again, false);
  memory.beginAttempt();
  assert.equal(memory.again, true);
  assert.equal(memory.verdict("0", "1")?.skipped, true);
  assert.equal(memory.verdict("0", "2"), undefined);
  assert.equal(memory.verdict(String(MAX_KEPT_VERDICTS), "1"), undefined);
});

/**
 * A read that merges keep moving entries under, attempt after attempt, says
 * so (docs/storage.md#reads-stay-exact-while-chunks-move): it throws
 * `InexactReadError` after its last attempt instead of answering what it saw.
 *
 * @module
 */
import assert from "node:assert/strict";
import {
  logBloomKey,
  logChunksPrefix,
  logMergesKey,
  logSummaryKey,
} from "../../../db/keys.ts";
import {
  countStoredEntries,
  InexactReadError,
  MAX_READ_ATTEMPTS,
  parseQuery,
  queryLogs,
} from "../../../db/query/mod.ts";
import {
  HOUR,
  mergeAt,
  queryProjectTest,
  recordAt,
  storeBatch,
  T0,
  withQueryProject,
} from "../../_helpers/query.ts";

/** `kv` with `name` replaced by `method`; everything else as it is. */
function replacing(
  kv: Deno.Kv,
  name: string,
  method: (target: Deno.Kv) => unknown,
): Deno.Kv {
  return new Proxy(kv, {
    get(target, key) {
      if (key === name) return method(target);
      const value = Reflect.get(target, key, target);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}

/**
 * `kv` whose `getMany` calls `after` with each key it read, once it has
 * read them all, before it answers.
 */
function afterEachRead(
  kv: Deno.Kv,
  after: (target: Deno.Kv, key: Deno.KvKey) => Promise<void> | void,
): Deno.Kv {
  return replacing(
    kv,
    "getMany",
    (target) =>
    async (
      keys: Deno.KvKey[],
      options?: { consistency?: Deno.KvConsistencyLevel },
    ) => {
      const read = await target.getMany(keys, options);
      for (const key of keys) await after(target, key);
      return read;
    },
  );
}

queryProjectTest(
  "a count whose every listing a merge commit overlaps throws instead of answering",
  async (kv, projectId) => {
    await storeBatch(kv, projectId, [recordAt(T0), recordAt(T0 + 1000)]);
    let listings = 0;
    // A merge of the project commits during every listing of its summaries.
    const racing = replacing(
      kv,
      "list",
      (target) =>
      (
        selector: Deno.KvListSelector,
        options?: Deno.KvListOptions,
      ) => {
        listings++;
        return (async function* () {
          await target.atomic().sum(logMergesKey(projectId), 1n).commit();
          yield* target.list(selector, options);
        })();
      },
    );
    await assert.rejects(
      () => countStoredEntries(racing, projectId),
      InexactReadError,
    );
    assert.equal(listings, MAX_READ_ATTEMPTS);
    // Without merges in the way the same count is exact.
    assert.equal(await countStoredEntries(kv, projectId), 2);
  },
);

queryProjectTest(
  "a search whose every attempt finds a chunk it read rewritten throws instead of answering",
  async (kv, projectId) => {
    await storeBatch(kv, projectId, [recordAt(T0), recordAt(T0 + 1000)]);
    let rewrites = 0;
    // Every read of chunk values is followed by their rewrite with their
    // summaries, in one commit, as a merge committing meanwhile would.
    const racing = afterEachRead(kv, async (target, key) => {
      if (key[0] !== logChunksPrefix(projectId)[0]) return;
      const summaryKey = logSummaryKey(projectId, String(key.at(-1)));
      const [entry, summary] = await target.getMany([key, summaryKey]);
      if (entry!.value === null) return;
      await target.atomic().set(key, entry!.value)
        .set(summaryKey, summary!.value).commit();
      rewrites++;
    });
    await assert.rejects(
      () => queryLogs(racing, projectId, { filter: {}, limit: 10 }),
      InexactReadError,
    );
    assert.ok(rewrites >= MAX_READ_ATTEMPTS, `${rewrites} rewrites`);
    const page = await queryLogs(kv, projectId, { filter: {}, limit: 10 });
    assert.equal(page.records.length, 2);
  },
);

queryProjectTest(
  "an exact search reads each chunk's value once: its check at the end reads their summaries",
  async (kv, projectId) => {
    await storeBatch(kv, projectId, [recordAt(T0)]);
    await storeBatch(kv, projectId, [recordAt(T0 + 1000)]);
    const read = new Map<string, number>();
    const counting = replacing(
      kv,
      "getMany",
      (target) =>
      (
        keys: Deno.KvKey[],
        options?: { consistency?: Deno.KvConsistencyLevel },
      ) => {
        for (const key of keys) {
          read.set(String(key[0]), (read.get(String(key[0])) ?? 0) + 1);
        }
        return target.getMany(keys, options);
      },
    );
    const page = await queryLogs(counting, projectId, {
      filter: {},
      limit: 10,
    });
    assert.equal(page.records.length, 2);
    assert.equal(read.get(logChunksPrefix(projectId)[0] as string), 2);
    assert.equal(read.get(logSummaryKey(projectId, "x")[0] as string), 2);
  },
);

queryProjectTest(
  "every chunk's summary and blooms carry the versionstamp of its value, as stored and as merged, which the scan's check and its later attempts rely on",
  async (kv, projectId) => {
    const pairs = async () => {
      const out: [string, string, string][] = [];
      for await (
        const chunk of kv.list({ prefix: logChunksPrefix(projectId) })
      ) {
        const lastId = String(chunk.key.at(-1));
        const [summary, blooms] = await kv.getMany([
          logSummaryKey(projectId, lastId),
          logBloomKey(projectId, lastId),
        ]);
        out.push([
          chunk.versionstamp,
          summary!.versionstamp ?? "none",
          blooms!.versionstamp ?? "none",
        ]);
      }
      return out;
    };
    for (let i = 0; i < 20; i++) {
      await storeBatch(kv, projectId, [recordAt(T0 + 1000 * i)]);
    }
    const stored = await pairs();
    assert.equal(stored.length, 20);
    for (const [value, ...rest] of stored) {
      assert.deepEqual(rest, [value, value]);
    }
    await mergeAt(kv, projectId, T0 + 3_600_000);
    const merged = await pairs();
    assert.ok(merged.length < 20, `${merged.length} chunks after merging`);
    for (const [value, ...rest] of merged) {
      assert.deepEqual(rest, [value, value]);
    }
  },
);

queryProjectTest(
  "a search done again reads only the chunks that moved: the others as its first attempt listed and read them",
  async (kv, projectId) => {
    for (let i = 0; i < 4; i++) {
      await storeBatch(kv, projectId, [recordAt(T0 + 1000 * i)]);
    }
    const chunks = await Array.fromAsync(
      kv.list({ prefix: logChunksPrefix(projectId) }),
    );
    const moving = chunks[1]!.key;
    const reads: string[] = [];
    const blooms: string[] = [];
    let rewritten = false;
    // After the first read of the second chunk, it is rewritten as it is,
    // value, summary and blooms in one commit, as a merge would rewrite it.
    const racing = afterEachRead(kv, async (target, key) => {
      const lastId = String(key.at(-1));
      if (key[0] === logBloomKey(projectId, "")[0]) blooms.push(lastId);
      if (key[0] !== logChunksPrefix(projectId)[0]) return;
      reads.push(lastId);
      if (rewritten || String(key) !== String(moving)) return;
      const values = await target.getMany([
        key,
        logSummaryKey(projectId, lastId),
        logBloomKey(projectId, lastId),
      ]);
      const op = target.atomic();
      for (const entry of values) op.set(entry.key, entry.value);
      await op.commit();
      rewritten = true;
    });
    for (const query of ["", "at"]) {
      reads.length = 0;
      blooms.length = 0;
      rewritten = false;
      const page = await queryLogs(racing, projectId, {
        filter: query === "" ? {} : parseQuery(query),
        limit: 10,
      });
      assert.equal(page.records.length, 4);
      // Four values read by the first attempt, then only the one moved.
      assert.equal(reads.length, 5, `${query}: ${reads}`);
      assert.equal(reads.at(-1), String(moving.at(-1)));
      // The first attempt listed the blooms; the second lists summaries and
      // reads the blooms of the chunk that moved alone.
      assert.deepEqual(blooms, query === "" ? [] : [String(moving.at(-1))]);
    }
  },
);

Deno.test("a search that a real merge overlaps answers every entry once, in order, newest and oldest first, with and without terms", async (t) => {
  for (const order of ["newest", "oldest"] as const) {
    for (const query of ["", "wombat", "level:error"]) {
      await t.step(`${order} ${query || "(all)"}`, async () => {
        await withQueryProject(async (kv, projectId) => {
          const stored: string[] = [];
          for (let batch = 0; batch < 12; batch++) {
            const records = [0, 1, 2].map((i) => {
              const n = batch * 3 + i;
              return recordAt(T0 + 1000 * n, {
                level: n % 4 === 0 ? "error" : "info",
                data: { title: "Entry", message: n % 3 ? `x ${n}` : "wombat" },
              });
            });
            await storeBatch(kv, projectId, records);
            for (const [i, r] of records.entries()) {
              const n = batch * 3 + i;
              const matches = query === "" ||
                (query === "wombat" ? n % 3 === 0 : n % 4 === 0);
              if (matches) stored.push(r.id);
            }
          }
          let chunkReads = 0;
          let merged = false;
          // A merging round commits once the search has read its third
          // chunk: it rewrites and deletes chunks listed and read.
          const racing = afterEachRead(kv, async (target, key) => {
            if (key[0] !== logChunksPrefix(projectId)[0]) return;
            if (++chunkReads !== 3 || merged) return;
            await mergeAt(target, projectId, T0 + HOUR);
            merged = true;
          });
          const page = await queryLogs(racing, projectId, {
            filter: query === "" ? {} : parseQuery(query),
            limit: 100,
            order,
          });
          assert.ok(merged);
          const expected = order === "newest"
            ? stored.toSorted().reverse()
            : stored.toSorted();
          assert.deepEqual(page.records.map((r) => r.id), expected);
        });
      });
    }
  }
});

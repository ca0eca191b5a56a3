/**
 * Coarse groups: a word search rules out whole groups of final chunks
 * without reading their filters, finds every entry all the same, and the
 * groups go with retention and with the project.
 */
import assert from "node:assert/strict";
import { buildStore } from "../../../bench/query/ingest.ts";
import { parseQuery, queryLogs } from "../../../db/query/mod.ts";
import { mergeProject } from "../../../db/storage/merge.ts";
import { deleteProject } from "../../../db/deletion.ts";
import {
  logBloomsPrefix,
  logChunkKey,
  logCoarseBitsPrefix,
  logCoarseGroupsPrefix,
  logCoarseHashesPrefix,
  logCoarsePendingPrefix,
  logCoarseStateKey,
  logSummariesPrefix,
  logUngroupedKey,
  logUngroupedPrefix,
} from "../../../db/keys.ts";
import {
  DAY,
  HOUR,
  queryProjectTest,
  recordAt,
  storeBatch,
  T0,
} from "../../_helpers/query.ts";
import { setPending } from "../../../db/storage/coarse_groups.ts";
import { decodeCoarseGroup } from "../../../db/storage/coarse.ts";
import { idTime } from "../../../domain/ids.ts";
import {
  buildChunk,
  decodeSummary,
  FINAL_TIER,
  readChunkText,
} from "../../../db/storage/chunk.ts";
import { setChunk } from "../../../db/storage/write.ts";
import { encodeRecordLine, lineId } from "../../../db/storage/lines.ts";

const PLANTED = "zanzibarquokka";
const AT = 4_321;

/** A store of 6,000 generated entries over 12 hours, its final chunks in groups of 4. */
async function withStore(
  fn: (kv: Deno.Kv, store: Awaited<ReturnType<typeof buildStore>>) => Promise<
    void
  >,
) {
  const kv = await Deno.openKv(":memory:");
  try {
    const store = await buildStore({
      kv,
      count: 6_000,
      seed: 3,
      start: T0,
      spanMs: 12 * HOUR,
      plant: new Map([[AT, PLANTED]]),
      mergeEveryMs: 600_000,
      coarseGroupChunks: 4,
    });
    await fn(kv, store);
  } finally {
    kv.close();
  }
}

async function count(kv: Deno.Kv, prefix: Deno.KvKey): Promise<number> {
  return (await Array.fromAsync(kv.list({ prefix }))).length;
}

/** `kv`, counting the chunk filters (blooms) a read returns. */
function countingBlooms(kv: Deno.Kv, bloomPrefix: Deno.KvKey) {
  const seen = { blooms: 0 };
  const isBloom = (key: Deno.KvKey) =>
    key[0] === bloomPrefix[0] && key[1] === bloomPrefix[1];
  const proxy = new Proxy(kv, {
    get(target, name) {
      if (name === "getMany") {
        return async (keys: Deno.KvKey[]) => {
          seen.blooms += keys.filter(isBloom).length;
          return await target.getMany(keys);
        };
      }
      if (name === "list") {
        return (...args: Parameters<Deno.Kv["list"]>) => {
          const iter = target.list(...args);
          return {
            async next() {
              const next = await iter.next();
              if (!next.done && isBloom(next.value.key)) seen.blooms++;
              return next;
            },
            [Symbol.asyncIterator]() {
              return this;
            },
          };
        };
      }
      const value = Reflect.get(target, name);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
  return { kv: proxy, seen };
}

Deno.test("a word search reads the filters of the chunks of the groups that may hold it, not of every chunk", async () => {
  await withStore(async (kv, store) => {
    const { projectId } = store;
    await assertMarkedOrGrouped(kv, projectId);
    const chunks = await count(kv, logSummariesPrefix(projectId));
    const groups = await count(kv, logCoarseGroupsPrefix(projectId));
    assert.ok(groups >= 2, `expected groups, found ${groups}`);
    const counting = countingBlooms(kv, logBloomsPrefix(projectId));
    const page = await queryLogs(counting.kv, projectId, {
      filter: parseQuery(PLANTED),
    });
    assert.deepEqual(page.records.map((r) => r.id), [store.ids[AT]]);
    const grouped = groups * 4;
    assert.ok(
      counting.seen.blooms <= chunks - grouped + 4 + 4,
      `read ${counting.seen.blooms} filters of ${chunks} chunks`,
    );
    const none = await queryLogs(counting.kv, projectId, {
      filter: parseQuery("xylophonewombat"),
    });
    assert.deepEqual(none.records, []);
  });
});

Deno.test("a word search read once lists each chunk through its filters and reads no summary but those its check at the end reads", async () => {
  await withStore(async (kv, store) => {
    const { projectId } = store;
    const summaries: string[] = [];
    const counting = new Proxy(kv, {
      get(target, name) {
        if (name === "getMany") {
          return (keys: Deno.KvKey[]) => {
            for (const key of keys) {
              if (key[0] === logSummariesPrefix(projectId)[0]) {
                summaries.push(String(key.at(-1)));
              }
            }
            return target.getMany(keys);
          };
        }
        const value = Reflect.get(target, name);
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
    const page = await queryLogs(counting, projectId, {
      filter: parseQuery(PLANTED),
    });
    assert.deepEqual(page.records.map((r) => r.id), [store.ids[AT]]);
    assert.ok(page.stats.chunksSkipped > 0);
    // The check at the end reads the summary of the one chunk read.
    assert.equal(summaries.length, page.stats.chunksRead);
  });
});

Deno.test("a chunk of a group rewritten under its key with a late entry (as a merge does) is searched again", async () => {
  await withStore(async (kv, store) => {
    const { projectId } = store;
    const group = await firstGroup(kv, projectId);
    const lastId = group.chunks[1]!;
    const value = (await kv.get(logChunkKey(projectId, lastId))).value;
    const text = await readChunkText(kv, projectId, lastId, value);
    const late = recordAt(idTime(lastId) - 1, {
      data: { title: "Late", message: "latecomerword" },
    });
    const lines = [...text.split("\n"), encodeRecordLine(late)].sort((a, b) =>
      lineId(a) < lineId(b) ? -1 : 1
    );
    const op = kv.atomic();
    setChunk(op, projectId, buildChunk(lines, { tier: 1 }), {
      expireIn: 60_000,
    });
    assert.ok((await op.commit()).ok);
    const page = await queryLogs(kv, projectId, {
      filter: parseQuery("latecomerword"),
    });
    assert.deepEqual(page.records.map((r) => r.id), [late.id]);
  });
});

Deno.test("coarse groups, waiting hashes, ungrouped marks and the coarse state go with the retention and with the project", async (t) => {
  await withStore(async (kv, store) => {
    const { projectId } = store;
    const prefixes = [
      logCoarseGroupsPrefix(projectId),
      logCoarseBitsPrefix(projectId),
      logCoarsePendingPrefix(projectId),
      logCoarseHashesPrefix(projectId),
      logUngroupedPrefix(projectId),
    ];
    assert.ok(await count(kv, prefixes[0]!) > 0);
    assert.ok(await count(kv, prefixes[1]!) > 0);
    assert.ok(await count(kv, prefixes[4]!) > 0);
    await t.step("deleting the project deletes them", async () => {
      const copy = await Deno.openKv(":memory:");
      try {
        for await (const entry of kv.list({ prefix: [] })) {
          await copy.set(entry.key, entry.value);
        }
        await deleteProject(copy, projectId);
        for (const prefix of prefixes) {
          assert.equal(await count(copy, prefix), 0, String(prefix[0]));
        }
        const state = await copy.get(logCoarseStateKey(projectId));
        assert.equal(state.versionstamp, null);
      } finally {
        copy.close();
      }
    });
    await t.step("a round past the retention deletes them", async () => {
      await mergeProject(kv, projectId, { now: store.end + 31 * DAY });
      assert.equal(await count(kv, logSummariesPrefix(projectId)), 0);
      for (const prefix of prefixes) {
        assert.equal(await count(kv, prefix), 0, String(prefix[0]));
      }
    });
  });
});

/** Every chunk is marked ungrouped or named by a group at its count. */
async function assertMarkedOrGrouped(kv: Deno.Kv, projectId: string) {
  const named = new Map<string, number>();
  for await (
    const entry of kv.list({ prefix: logCoarseGroupsPrefix(projectId) })
  ) {
    const group = decodeCoarseGroup(entry.value, String(entry.key[2]));
    group.chunks.forEach((id, i) => named.set(id, group.counts[i]!));
  }
  const marked = new Set(
    (await keys(kv, logUngroupedPrefix(projectId))).map((k) => String(k[2])),
  );
  for await (
    const entry of kv.list({ prefix: logSummariesPrefix(projectId) })
  ) {
    const summary = decodeSummary(entry.value, String(entry.key[2]));
    assert.ok(
      marked.has(summary.lastId) || named.get(summary.lastId) === summary.count,
      `chunk ${summary.lastId} is neither marked nor grouped`,
    );
  }
}

/** The project's first coarse group, decoded. */
async function firstGroup(kv: Deno.Kv, projectId: string) {
  const [first] = await Array.fromAsync(
    kv.list({ prefix: logCoarseGroupsPrefix(projectId) }, { limit: 1 }),
  );
  return decodeCoarseGroup(first!.value, String(first!.key[2]));
}

/** Lists every key under `prefix`. */
async function keys(kv: Deno.Kv, prefix: Deno.KvKey): Promise<Deno.KvKey[]> {
  return (await Array.fromAsync(kv.list({ prefix }))).map((e) => e.key);
}

Deno.test("a late entry stored by the consumer inside the span of a group that lacks its word is found", async () => {
  await withStore(async (kv, store) => {
    const { projectId } = store;
    const group = await firstGroup(kv, projectId);
    // Received between the group's second and third chunks, stored now.
    const late = recordAt(idTime(group.chunks[1]!) + 1, {
      data: { title: "Late", message: "latecomerword" },
    });
    assert.ok(late.id < group.chunks[2]!);
    await storeBatch(kv, projectId, [late], store.end);
    const page = await queryLogs(kv, projectId, {
      filter: parseQuery("latecomerword"),
    });
    assert.deepEqual(page.records.map((r) => r.id), [late.id]);
    const oldest = await queryLogs(kv, projectId, {
      filter: parseQuery("latecomerword"),
      order: "oldest",
    });
    assert.deepEqual(oldest.records.map((r) => r.id), [late.id]);
  });
});

Deno.test("a group made while a word search lists makes the search read again, and it finds the entry", async () => {
  await withStore(async (kv, store) => {
    const { projectId } = store;
    // A final chunk with the word, its hashes waiting for a group.
    const at = store.end - 3 * HOUR;
    const records = [recordAt(at, {
      data: { title: "Grouped", message: "midsearchword" },
    })];
    const members = new Set<number>();
    const chunk = buildChunk(records.map(encodeRecordLine), {
      tier: FINAL_TIER,
      members,
    });
    const op = kv.atomic();
    setChunk(op, projectId, chunk, { expireIn: 30 * DAY });
    setPending(op, projectId, chunk.summary, members, 30 * DAY);
    assert.ok((await op.commit()).ok);
    // The first listing of the ungrouped chunks waits for a round that
    // groups it (unmarking it).
    let grouped = false;
    const racing = new Proxy(kv, {
      get(target, name) {
        if (name === "list") {
          return (...args: Parameters<Deno.Kv["list"]>) => {
            const selector = args[0] as { start?: Deno.KvKey };
            if (!grouped && selector.start?.[0] === "log_ungrouped") {
              grouped = true;
              const iter = (async function* () {
                await mergeProject(target, projectId, {
                  now: store.end,
                  coarseGroupChunks: 1,
                });
                yield* target.list(...args);
              })();
              return iter;
            }
            return target.list(...args);
          };
        }
        const value = Reflect.get(target, name);
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
    const page = await queryLogs(racing, projectId, {
      filter: parseQuery("midsearchword"),
    });
    assert.ok(grouped);
    assert.equal(
      (await kv.get(logUngroupedKey(projectId, chunk.summary.lastId))).value,
      null,
    );
    assert.deepEqual(page.records.map((r) => r.id), [records[0]!.id]);
  });
});

queryProjectTest(
  "a merge that moves a chunk a group names bumps the coarse state; the entry it adds is found",
  async (kv, projectId) => {
    await storeBatch(kv, projectId, [recordAt(T0)], T0);
    await storeBatch(kv, projectId, [recordAt(T0 + 1000)], T0 + 1000);
    // Settled: merged into one open chunk, grouped alone.
    await mergeProject(kv, projectId, {
      now: T0 + 3 * HOUR,
      coarseGroupChunks: 1,
    });
    assert.equal((await keys(kv, logCoarseGroupsPrefix(projectId))).length, 1);
    assert.deepEqual(await keys(kv, logUngroupedPrefix(projectId)), []);
    const state = async () =>
      (await kv.get<Deno.KvU64>(logCoarseStateKey(projectId))).value!.value;
    const before = await state();
    const late = recordAt(T0 + 500, {
      data: { title: "Late", message: "latecomerword" },
    });
    await storeBatch(kv, projectId, [late], T0 + 3 * HOUR);
    // The late chunk and the grouped one merge under the grouped one's key;
    // the output waits for a group of two.
    const merged = await mergeProject(kv, projectId, {
      now: T0 + 3 * HOUR + 60_000,
      coarseGroupChunks: 2,
    });
    assert.equal(merged.merges, 1);
    assert.equal(await state(), before + 1n);
    const page = await queryLogs(kv, projectId, {
      filter: parseQuery("latecomerword"),
    });
    assert.deepEqual(page.records.map((r) => r.id), [late.id]);
  },
);

Deno.test("a store written before the ungrouped marks is searched through every filter until a round marks it", async () => {
  await withStore(async (kv, store) => {
    const { projectId } = store;
    const late = recordAt(store.end - 6 * HOUR, {
      data: { title: "Late", message: "latecomerword" },
    });
    await storeBatch(kv, projectId, [late], store.end);
    const marked = await keys(kv, logUngroupedPrefix(projectId));
    // As before marks existed: none, and no coarse state.
    for (const key of marked) await kv.delete(key);
    await kv.delete(logCoarseStateKey(projectId));
    const find = async () =>
      (await queryLogs(kv, projectId, { filter: parseQuery("latecomerword") }))
        .records.map((r) => r.id);
    assert.deepEqual(await find(), [late.id]);
    await mergeProject(kv, projectId, { now: store.end });
    assert.notEqual(
      (await kv.get(logCoarseStateKey(projectId))).versionstamp,
      null,
    );
    await assertMarkedOrGrouped(kv, projectId);
    assert.ok((await keys(kv, logUngroupedPrefix(projectId))).length > 0);
    assert.deepEqual(await find(), [late.id]);
  });
});

queryProjectTest(
  "a round past the retention deletes hundreds of chunks with their marks, within KV's mutations per commit",
  async (kv, projectId) => {
    // 300 chunks of tier 0 with columns: 5 keys each with the mark.
    for (let i = 0; i < 300; i++) {
      await storeBatch(kv, projectId, [recordAt(T0 + i * 1000)], T0 + i * 1000);
    }
    assert.equal((await keys(kv, logUngroupedPrefix(projectId))).length, 300);
    const round = await mergeProject(kv, projectId, { now: T0 + 31 * DAY });
    assert.equal(round.expired, 300);
    assert.deepEqual(await keys(kv, logSummariesPrefix(projectId)), []);
    assert.deepEqual(await keys(kv, logUngroupedPrefix(projectId)), []);
  },
);

Deno.test("an ungrouped mark whose chunk KV expired first is passed over, not read as a chunk that moved", async () => {
  await withStore(async (kv, store) => {
    const { projectId } = store;
    // A mark left behind: no chunk under its key.
    const left = recordAt(store.end - 5 * HOUR).id;
    await kv.set(logUngroupedKey(projectId, left), new Uint8Array([1]));
    const page = await queryLogs(kv, projectId, {
      filter: parseQuery(PLANTED),
    });
    assert.deepEqual(page.records.map((r) => r.id), [store.ids[AT]]);
  });
});

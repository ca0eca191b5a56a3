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
  logSummariesPrefix,
} from "../../../db/keys.ts";
import { DAY, HOUR, recordAt, T0 } from "../../_helpers/query.ts";
import { decodeCoarseGroup } from "../../../db/storage/coarse.ts";
import { idTime } from "../../../domain/ids.ts";
import { buildChunk, readChunkText } from "../../../db/storage/chunk.ts";
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

Deno.test("a chunk of a group rewritten under its key with a late entry (as a merge does) is searched again", async () => {
  await withStore(async (kv, store) => {
    const { projectId } = store;
    const [first] = await Array.fromAsync(
      kv.list({ prefix: logCoarseGroupsPrefix(projectId) }, { limit: 1 }),
    );
    const group = decodeCoarseGroup(first!.value, String(first!.key[2]));
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

Deno.test("coarse groups and waiting hashes go with the retention and with the project", async (t) => {
  await withStore(async (kv, store) => {
    const { projectId } = store;
    const prefixes = [
      logCoarseGroupsPrefix(projectId),
      logCoarseBitsPrefix(projectId),
      logCoarsePendingPrefix(projectId),
      logCoarseHashesPrefix(projectId),
    ];
    assert.ok(await count(kv, prefixes[0]!) > 0);
    assert.ok(await count(kv, prefixes[1]!) > 0);
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

import type { LogRecord } from "../../../domain/entry.ts";
import assert from "node:assert/strict";
import { logCountsPrefix } from "../../../db/keys.ts";
import { deleteProject } from "../../../db/deletion.ts";
import { decodeSummary } from "../../../db/storage/chunk.ts";
import {
  countStoredEntries,
  type Filter,
  histogram,
  listSummaries,
  matches,
  parseQuery,
} from "../../../db/query/mod.ts";
import { idTime, timeBound } from "../../../domain/ids.ts";
import {
  DAY,
  HOUR,
  kvTest,
  mergeAt,
  queryProject,
  queryProjectTest,
  recordAt,
  RETENTION_MS,
  storeBatch,
  T0,
  withQueryProject,
} from "../../_helpers/query.ts";

const LEVELS = ["info", "warning", "error", "critical", "audit"];

/** 3,000 entries about a minute apart from T0 - 30 min, all levels. */
function spread(): LogRecord[] {
  return Array.from(
    { length: 3000 },
    (_, i) =>
      recordAt(T0 - 30 * 60_000 + i * 59_999 + (i % 7) * 1000, {
        level: LEVELS[i % LEVELS.length]!,
        data: { title: i % 7 === 0 ? "Checkout failed" : "Entry", n: i },
      }),
  );
}

async function storeAll(kv: Deno.Kv, projectId: string, records: LogRecord[]) {
  for (let i = 0; i < records.length; i += 100) {
    await storeBatch(kv, projectId, records.slice(i, i + 100));
  }
}

/** The histogram computed from the records themselves. */
function bruteForce(
  records: LogRecord[],
  since: number,
  until: number,
  intervalMs: number,
  filter: Filter = {},
) {
  const first = Math.floor(since / intervalMs) * intervalMs;
  const buckets = Array.from(
    { length: Math.ceil((until - first) / intervalMs) },
    (_, i) => ({
      start: first + i * intervalMs,
      counts: {} as Record<string, number>,
    }),
  );
  for (const r of records) {
    if (r.receivedAt < since || r.receivedAt >= until) continue;
    if (!matches(r, filter)) continue;
    const counts =
      buckets[Math.floor((r.receivedAt - first) / intervalMs)]!.counts;
    counts[r.level] = (counts[r.level] ?? 0) + 1;
  }
  return buckets;
}

Deno.test("histogram counts are exact over any range, from counters and entries", async (t) => {
  await withQueryProject(async (kv, projectId) => {
    const records = spread();
    await storeAll(kv, projectId, records);
    // Part of the entries moves into chunks: counts must not change.
    await mergeAt(kv, projectId, T0 + DAY);
    const cases: [string, number, number, number, Filter?][] = [
      [
        "3 h at 5 min: minute counters and partial minutes",
        T0 + 17_123,
        T0 + 3 * HOUR + 5_432,
        300_000,
      ],
      [
        "2 days at 1 h: hour and minute counters",
        T0 - 20 * 60_000 + 123,
        T0 + 2 * DAY - 7,
        3_600_000,
      ],
      ["1 min at 1 s: entries only", T0 + 10_000, T0 + 70_000, 1000],
      [
        "levels only",
        T0 + 5_000,
        T0 + 30 * HOUR,
        3_600_000,
        parseQuery("level:error,audit"),
      ],
      [
        "minimum level (custom levels excluded)",
        T0,
        T0 + 50 * HOUR,
        3_600_000,
        parseQuery("level>=warning"),
      ],
      [
        "a word: counted from entries",
        T0 - HOUR,
        T0 + 40 * HOUR,
        3_600_000,
        parseQuery("checkout"),
      ],
      ["a range narrowed by the filter", T0, T0 + 2 * DAY, 3_600_000, {
        since: T0 + 5 * HOUR + 1,
        until: T0 + 9 * HOUR - 1,
      }],
      ["a range without entries", T0 + 10 * DAY, T0 + 11 * DAY, 3_600_000],
    ];
    for (const [name, since, until, interval, filter] of cases) {
      await t.step(name, async () => {
        const h = await histogram(kv, projectId, {
          since,
          until,
          ...(filter ? { filter } : {}),
        });
        assert.equal(h.intervalMs, interval);
        assert.deepEqual(
          h.buckets,
          bruteForce(records, since, until, interval, filter),
        );
      });
    }
    await t.step("the whole range adds up to every entry", async () => {
      const h = await histogram(kv, projectId, {
        since: T0 - DAY,
        until: T0 + 4 * DAY,
      });
      const total = h.buckets.flatMap((b) => Object.values(b.counts))
        .reduce((a, b) => a + b, 0);
      assert.equal(total, records.length);
    });
    await t.step("a reversed range is refused", async () => {
      await assert.rejects(
        () => histogram(kv, projectId, { since: T0 + 1, until: T0 }),
        /Cannot count entries/,
      );
    });
  });
});

queryProjectTest(
  "deleting a project removes its chunks, summaries, Bloom filters and counters",
  async (kv, projectId) => {
    const kept = await queryProject(kv);
    const records = spread();
    await storeAll(kv, projectId, records);
    await storeBatch(kv, kept, [recordAt(T0)]);
    await mergeAt(kv, projectId, T0 + DAY);
    const prefixes = new Set<string>();
    for await (const e of kv.list({ prefix: [] })) {
      if (e.key[1] === projectId) prefixes.add(String(e.key[0]));
    }
    for (
      const p of ["log_chunks", "log_summaries", "log_blooms", "log_columns"]
    ) {
      assert.ok(prefixes.has(p), `stored under ${p}`);
    }
    assert.ok(prefixes.has("log_counts"));

    assert.equal(await deleteProject(kv, projectId), records.length);

    const left: Deno.KvKey[] = [];
    for await (const e of kv.list({ prefix: [] })) {
      if (e.key.includes(projectId)) left.push(e.key);
    }
    assert.deepEqual(left, []);
    assert.equal(await countStoredEntries(kv, kept), 1);
  },
);

/** A KV handle that records every `set` of atomic operations. */
function recordingKv(real: Deno.Kv) {
  const sets: { key: Deno.KvKey; value: unknown; expireIn?: number }[] = [];
  const kv = new Proxy(real, {
    get(target, name) {
      if (name !== "atomic") {
        const value = Reflect.get(target, name);
        return typeof value === "function" ? value.bind(target) : value;
      }
      return () => {
        const op = target.atomic();
        const spy: Deno.AtomicOperation = new Proxy(op, {
          get(o, method) {
            const fn = Reflect.get(o, method);
            if (typeof fn !== "function") return fn;
            return (...args: unknown[]) => {
              if (method === "set") {
                const [key, value, options] = args as [
                  Deno.KvKey,
                  unknown,
                  { expireIn?: number } | undefined,
                ];
                sets.push({ key, value, ...options });
              }
              const out = fn.apply(o, args);
              return out === o ? spy : out;
            };
          },
        });
        return spy;
      };
    },
  });
  return { kv, sets };
}

kvTest(
  "everything stored expires with its entries, and old counters are deleted",
  async (real) => {
    const projectId = await queryProject(real);
    const { kv, sets } = recordingKv(real);
    const records = spread().slice(0, 500);
    await storeAll(kv, projectId, records);
    // Chunks expire with their first entry, counted from their commit.
    const index = new Map(records.map((r, i) => [r.id, i]));
    assert.ok(sets.length > 0);
    for (const set of sets.filter((s) => s.key[0] === "log_summaries")) {
      const lastId = String(set.key[2]);
      const summary = decodeSummary(set.value, lastId);
      const i = index.get(lastId)!;
      const committed = records[Math.min(499, Math.floor(i / 100) * 100 + 99)]!;
      const expected = idTime(summary.firstId) + RETENTION_MS -
        committed.receivedAt;
      assert.deepEqual(
        sets.filter((s) => s.key[2] === lastId)
          .map((s) => [s.key[0], s.expireIn]).sort(),
        [
          ["log_blooms", expected],
          ["log_chunks", expected],
          ["log_columns", expected],
          ["log_summaries", expected],
          ["log_ungrouped", expected],
        ],
      );
    }
    // A month later, the counters of what expired are deleted.
    const counters = async () =>
      (await Array.fromAsync(real.list({ prefix: logCountsPrefix(projectId) })))
        .map((e) => Number(e.key[3]));
    assert.ok((await counters()).some((start) => start < T0));
    const later = T0 + RETENTION_MS + 2 * HOUR;
    const before = await listSummaries(real, projectId);
    const done = await mergeAt(real, projectId, later);
    // Chunks whose newest entry is past the retention go, by the clock given.
    const horizon = timeBound(later - RETENTION_MS);
    assert.equal(
      done.expired,
      before.filter((s) => s.lastId < horizon).length,
    );
    assert.ok(done.expired > 0);
    assert.deepEqual(
      (await listSummaries(real, projectId)).map((s) => s.lastId),
      before.filter((s) => s.lastId >= horizon).map((s) => s.lastId),
    );
    const left = await counters();
    assert.ok(left.length > 0);
    assert.ok(left.every((start) => start >= T0 + HOUR), String(left[0]));
  },
);

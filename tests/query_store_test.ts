import type { LogRecord } from "../domain/entry.ts";
import assert from "node:assert/strict";
import {
  logCountsPrefix,
  logKey,
  logPartKey,
  logPartsPrefix,
  logsPrefix,
  logSummaryKey,
} from "../db/keys.ts";
import type { LegacyLogPage } from "../db/logs.ts";
import { deleteProject } from "../db/projects.ts";
import { decodeSummary } from "../db/query/chunk.ts";
import {
  countStoredEntries,
  type Filter,
  histogram,
  listLogs,
  matches,
  parseQuery,
} from "../db/query/mod.ts";
import { idTime } from "../domain/ids.ts";
import {
  compactAt,
  queryProject,
  recordAt,
  RETENTION_MS,
  sortedIds,
  storeBatch,
  T0,
  withKv,
} from "./_query.ts";

const HOUR = 3_600_000;
const DAY = 86_400_000;
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
  await withKv(async (kv) => {
    const projectId = await queryProject(kv);
    const records = spread();
    await storeAll(kv, projectId, records);
    // Part of the entries moves into chunks: counts must not change.
    await compactAt(kv, projectId, T0 + DAY);
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

Deno.test("deleting a project removes its pages, chunks, summaries, Bloom filters and counters", async () => {
  await withKv(async (kv) => {
    const projectId = await queryProject(kv);
    const kept = await queryProject(kv);
    const records = spread();
    await storeAll(kv, projectId, records);
    await storeBatch(kv, kept, [recordAt(T0)]);
    await compactAt(kv, projectId, T0 + DAY);
    const prefixes = new Set<string>();
    for await (const e of kv.list({ prefix: [] })) {
      if (e.key[1] === projectId) prefixes.add(String(e.key[0]));
    }
    for (const p of ["logs", "log_chunks", "log_summaries", "log_blooms"]) {
      assert.ok(prefixes.has(p), `stored under ${p}`);
    }
    assert.ok(prefixes.has("log_counts") && prefixes.has("log_compactions"));

    assert.equal(await deleteProject(kv, projectId), records.length);

    const left: Deno.KvKey[] = [];
    for await (const e of kv.list({ prefix: [] })) {
      if (e.key.includes(projectId)) left.push(e.key);
    }
    assert.deepEqual(left, []);
    assert.equal(await countStoredEntries(kv, kept), 1);
  });
});

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

Deno.test("everything stored expires with its entries, and old counters are deleted", async () => {
  await withKv(async (real) => {
    const projectId = await queryProject(real);
    const { kv, sets } = recordingKv(real);
    const records = spread().slice(0, 500);
    await storeAll(kv, projectId, records);
    // Pages expire with their first entry (committed with their batch).
    const index = new Map(records.map((r, i) => [r.id, i]));
    assert.ok(sets.length > 0);
    for (const set of sets) {
      assert.equal(set.key[0], "logs");
      const i = index.get(String(set.key[2]))!;
      const committed = records[Math.min(499, Math.floor(i / 100) * 100 + 99)]!;
      assert.equal(
        set.expireIn,
        records[i]!.receivedAt + RETENTION_MS - committed.receivedAt,
      );
    }
    sets.length = 0;
    const now = T0 + DAY;
    await compactAt(kv, projectId, now);
    const chunks = sets.filter((s) => s.key[0] === "log_summaries");
    assert.ok(chunks.length > 0);
    for (const chunk of chunks) {
      const lastId = String(chunk.key[2]);
      const summary = decodeSummary(chunk.value, lastId);
      const expected = idTime(summary.firstId) + RETENTION_MS - now;
      const written = sets.filter((s) => s.key[2] === lastId);
      assert.deepEqual(
        written.map((s) => [s.key[0], s.expireIn]).sort(),
        [
          ["log_blooms", expected],
          ["log_chunks", expected],
          ["log_summaries", expected],
        ],
      );
    }
    // A month later, the counters of what expired are deleted.
    const counters = async () =>
      (await Array.fromAsync(real.list({ prefix: logCountsPrefix(projectId) })))
        .map((e) => Number(e.key[3]));
    assert.ok((await counters()).some((start) => start < T0));
    await compactAt(real, projectId, T0 + RETENTION_MS + 2 * HOUR);
    const left = await counters();
    assert.ok(left.length > 0);
    assert.ok(left.every((start) => start >= T0 + HOUR), String(left[0]));
  });
});

Deno.test("pages stored as objects before pages were bytes are still read, compacted and counted", async () => {
  await withKv(async (kv) => {
    const projectId = await queryProject(kv);
    const encoder = new TextEncoder();
    const legacy = async (records: LogRecord[], partBytes = Infinity) => {
      const bytes = encoder.encode(JSON.stringify(records));
      const first = records[0]!.id;
      const head = bytes.slice(0, Math.min(bytes.length, partBytes));
      const page: LegacyLogPage = {
        head,
        parts: bytes.length > partBytes ? 2 : 1,
        count: records.length,
        last: records.at(-1)!.id,
      };
      await kv.set(logKey(projectId, first), page);
      if (bytes.length > partBytes) {
        await kv.set(logPartKey(projectId, first, 1), bytes.slice(partBytes));
      }
    };
    const old1 = [0, 200, 900].map((dt) =>
      recordAt(T0 + dt, { level: "error" })
    );
    const old2 = [100, 5000].map((dt) =>
      recordAt(T0 + 60_000 + dt, { data: { big: "x".repeat(500) } })
    );
    await legacy(old1);
    await legacy(old2, 300);
    const fresh = [500, 1500, 70_000].map((dt) => recordAt(T0 + dt));
    await storeBatch(kv, projectId, fresh);
    const all = [...old1, ...old2, ...fresh];
    assert.deepEqual(
      (await Array.fromAsync(listLogs(kv, projectId))).map((r) => r.id),
      sortedIds(all),
    );
    assert.deepEqual(
      await Array.fromAsync(listLogs(kv, projectId, { reverse: true })),
      [...all].sort((a, b) => a.id < b.id ? 1 : -1),
    );
    assert.equal(await countStoredEntries(kv, projectId), all.length);
    const total = async () => {
      const h = await histogram(kv, projectId, {
        since: T0 - HOUR,
        until: T0 + HOUR,
      });
      return h.buckets.flatMap((b) => Object.values(b.counts))
        .reduce((a, b) => a + b, 0);
    };
    // Counted only from whole minutes' counters, which old pages lack.
    assert.equal(await total(), fresh.length);

    await compactAt(kv, projectId, T0 + 3 * HOUR);
    assert.deepEqual(
      await Array.fromAsync(kv.list({ prefix: logsPrefix(projectId) })),
      [],
    );
    assert.deepEqual(
      await Array.fromAsync(kv.list({ prefix: logPartsPrefix(projectId) })),
      [],
    );
    assert.equal(await total(), all.length);
    assert.deepEqual(
      await Array.fromAsync(listLogs(kv, projectId)),
      [...all].sort((a, b) => a.id < b.id ? -1 : 1),
    );
    const summary = await kv.get(
      logSummaryKey(projectId, sortedIds(all).at(-1)!),
    );
    assert.equal(
      decodeSummary(summary.value, sortedIds(all).at(-1)!).count,
      all.length,
    );
  });
});

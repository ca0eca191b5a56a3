/**
 * The explorer's histogram within its time budget (dashboard/histogram.ts):
 * exact where it counts, the query module's own answer for levels, and
 * older bars left uncounted, and said so, once the budget is spent.
 *
 * @module
 */
import assert from "node:assert/strict";
import { explorerHistogram } from "../../dashboard/histogram.ts";
import {
  countedByCounters,
  histogram,
  localReads,
  parseQuery,
} from "../../dashboard/source.ts";
import type { LogRecord } from "../../domain/entry.ts";
import { seedEntries } from "../_helpers/dashboard_seed.ts";

const NOW = Date.UTC(2026, 0, 15, 12);
const SPAN = 6 * 3_600_000;

async function withStore(
  fn: (kv: Deno.Kv, records: LogRecord[]) => Promise<void>,
): Promise<void> {
  const kv = await Deno.openKv(":memory:");
  try {
    const records = await seedEntries(kv, "p1", {
      count: 400,
      now: NOW,
      spanMs: SPAN,
    });
    await fn(kv, records);
  } finally {
    kv.close();
  }
}

/** Bars of a histogram as `start → total`, for comparisons. */
function totals(h: { buckets: { start: number; counts: object }[] }) {
  return h.buckets.map((b) => [
    b.start,
    Object.values(b.counts).reduce((n: number, c) => n + (c as number), 0),
  ]);
}

const RANGE = { since: NOW - SPAN, until: NOW };

Deno.test("a histogram of levels alone is the query module's, from its counters", async () => {
  await withStore(async (kv, records) => {
    const filter = { ...parseQuery("level>=error"), since: RANGE.since };
    assert.ok(countedByCounters(filter));
    const chart = await explorerHistogram(localReads(kv), "p1", {
      ...RANGE,
      filter,
      budgetMs: 0,
    });
    assert.equal(chart.countedFrom, null);
    const expected = await histogram(kv, "p1", { ...RANGE, filter });
    assert.deepEqual(chart.buckets, expected.buckets);
    const wanted = records.filter((r) =>
      ["error", "critical"].includes(r.level)
    )
      .length;
    assert.equal(
      totals(chart).reduce((n, [, c]) => n + (c as number), 0),
      wanted,
    );
  });
});

Deno.test("a word's histogram counts every bar exactly within its budget", async () => {
  await withStore(async (kv, records) => {
    const filter = { ...parseQuery("payment"), since: RANGE.since };
    assert.equal(countedByCounters(filter), false);
    const chart = await explorerHistogram(localReads(kv), "p1", {
      ...RANGE,
      filter,
      budgetMs: Infinity,
    });
    assert.equal(chart.countedFrom, null);
    const expected = await histogram(kv, "p1", { ...RANGE, filter });
    assert.equal(chart.intervalMs, expected.intervalMs);
    assert.deepEqual(totals(chart), totals(expected));
    const matching = records.filter((r) =>
      String(r.data.title).startsWith("Payment")
    );
    assert.ok(matching.length > 10, "the store holds matches");
    assert.equal(
      totals(chart).reduce((n, [, c]) => n + (c as number), 0),
      matching.length,
    );
  });
});

Deno.test("past its budget, a word's histogram keeps the newest bars and marks the rest uncounted", async () => {
  await withStore(async (kv) => {
    const filter = { ...parseQuery("payment"), since: RANGE.since };
    // Each reading of the clock is 10 ms later, the counting of a bar's
    // entries reading it too: the newest bar has a page's budget of its
    // own, the next ones what is left of the 25 ms.
    let t = 0;
    const chart = await explorerHistogram(localReads(kv), "p1", {
      ...RANGE,
      filter,
      budgetMs: 25,
      clock: () => (t += 10),
    });
    const full = await histogram(kv, "p1", { ...RANGE, filter });
    const n = chart.buckets.length;
    const k = chart.buckets.findIndex((b) => b.start === chart.countedFrom);
    // The newest bar, in its own budget; the next group ran past the 25 ms.
    assert.equal(k, n - 1, `counted from bar ${k} of ${n}`);
    assert.deepEqual(totals(chart).slice(k), totals(full).slice(k));
    assert.ok(totals(full).slice(k).some(([, c]) => (c as number) > 0));
    assert.ok(
      totals(full).slice(0, k).some(([, c]) => (c as number) > 0),
      "older bars have matches that were not counted",
    );
    assert.ok(
      chart.buckets.slice(0, k).every((b) =>
        Object.keys(b.counts).length === 0
      ),
    );
  });
});

Deno.test("with no budget at all, the newest bar is still counted", async () => {
  await withStore(async (kv) => {
    const filter = { ...parseQuery("payment"), since: RANGE.since };
    const chart = await explorerHistogram(localReads(kv), "p1", {
      ...RANGE,
      filter,
      budgetMs: 0,
    });
    const n = chart.buckets.length;
    const full = await histogram(kv, "p1", { ...RANGE, filter });
    assert.equal(chart.countedFrom, chart.buckets[n - 1]!.start);
    assert.ok(
      (totals(full).at(-1)![1] as number) > 0,
      "the newest bar has matches",
    );
    assert.deepEqual(totals(chart).at(-1), totals(full).at(-1));
  });
});

/**
 * One project's rules do not delay another project's alerts
 * (docs/alerts.md#how-rules-are-evaluated): a tick evaluates rules within
 * {@linkcode TICK_BUDGET_MS} shared among the projects, which take turns
 * from tick to tick, and a rule stops reading pages at its project's share.
 * Reads are made slow deterministically: the reads given to the loop move
 * the harness's clock (the one a tick's budget is counted on) on each page
 * of the slow project.
 *
 * @module
 */
import assert from "node:assert/strict";
import { GROUP_MS } from "../../alerts/evaluate.ts";
import { TICK_BUDGET_MS } from "../../alerts/rotation.ts";
import type { AlertLoop } from "../../alerts/mod.ts";
import type { Delivery } from "../../db/alerts.ts";
import { localReads, type Reads } from "../../db/query/reads.ts";
import type { TailOptions } from "../../db/query/mod.ts";
import { type Harness, ORIGIN, withHarness } from "../_helpers/harness.ts";
import { recordAt, storeBatch } from "../_helpers/query.ts";
import {
  addCriticalRule,
  alertLoopOn,
  type Receiver,
  round,
  sendEntries,
  startReceiver,
} from "../_helpers/webhook_receiver.ts";

/** Past the query API's settling time and a delivery's grouping time. */
const SETTLE_MS = 1000 + GROUP_MS;
/** What one page of the slow project costs, on the harness's clock. */
const SLOW_PAGE_MS = 300;
/** Rules of the slow project. */
const SLOW_RULES = 12;

/** One page read by the loop: whose, when, and with what budget. */
interface PageRead {
  projectId: string;
  afterId: string | null;
  /** The harness's clock when the read started. */
  at: number;
  budgetMs: number | undefined;
  records: number;
  lastId: string | null;
}

/**
 * The harness's local reads, whose `tailLogs` notes each page in `pages`
 * and moves the clock by `costOf(projectId)` as it reads.
 */
function slowReads(
  h: Harness,
  costOf: (projectId: string) => number,
  pages: PageRead[],
): Reads {
  const local = localReads(h.kv);
  return {
    ...local,
    async tailLogs(projectId: string, options: TailOptions) {
      const at = h.clock.now();
      h.clock.advance(costOf(projectId));
      const page = await local.tailLogs(projectId, options);
      pages.push({
        projectId,
        afterId: options.afterId,
        at,
        budgetMs: options.budget?.ms,
        records: page.records.length,
        lastId: page.lastId,
      });
      return page;
    },
  };
}

/** The rule and project of each delivery a receiver got. */
function deliveredRules(receiver: Receiver): string[] {
  return receiver.received.map((r) => JSON.parse(r.body).rule.id);
}

interface TwoProjects {
  h: Harness;
  /** The project taken first in a tick, whose pages are slow. */
  slow: string;
  fast: string;
  /** The slow project's rules, by id (the order they take turns in). */
  slowRules: string[];
  fastRule: string;
  slowReceiver: Receiver;
  fastReceiver: Receiver;
  /** Pages read so far. */
  pages: PageRead[];
  /** A loop on the harness with the slow reads. */
  loop: () => AlertLoop;
}

/**
 * Two projects, the slow one ({@linkcode SLOW_RULES} rules, each page
 * costing {@linkcode SLOW_PAGE_MS}) the first in the rules' order, the
 * other with one rule; one critical entry sent to each, settled.
 */
async function withTwoProjects(body: (t: TwoProjects) => Promise<void>) {
  await withHarness(async (h) => {
    const [slow, fast] = [
      (await h.project([ORIGIN])).id,
      (await h.project([ORIGIN])).id,
    ].sort();
    const slowReceiver = startReceiver();
    const fastReceiver = startReceiver();
    const loops: AlertLoop[] = [];
    try {
      const slowRules: string[] = [];
      for (let i = 0; i < SLOW_RULES; i++) {
        slowRules.push((await addCriticalRule(h, slow!, slowReceiver.url)).id);
      }
      const fastRule = (await addCriticalRule(h, fast!, fastReceiver.url)).id;
      await sendEntries(h, [slow!, fast!], "critical");
      h.clock.advance(SETTLE_MS);
      const pages: PageRead[] = [];
      const reads = slowReads(
        h,
        (id) => id === slow ? SLOW_PAGE_MS : 0,
        pages,
      );
      await body({
        h,
        slow: slow!,
        fast: fast!,
        slowRules: slowRules.sort(),
        fastRule,
        slowReceiver,
        fastReceiver,
        pages,
        loop: () => {
          loops.push(alertLoopOn(h, { reads }));
          return loops.at(-1)!;
        },
      });
    } finally {
      for (const loop of loops) await loop.stop();
      await slowReceiver.close();
      await fastReceiver.close();
    }
  });
}

/** The rules of the deliveries queued, in order. */
function rulesOf(queued: Delivery[]): string[] {
  return queued.map((d) => d.ruleId);
}

Deno.test("a project whose rules are slow to read does not hold another project's alert, and each of its rules gets its turn", async () => {
  await withTwoProjects(async (t) => {
    const { h, slow, fast, slowRules, fastRule, pages } = t;
    const loop = t.loop();
    const start = h.clock.now();
    const first = await round(loop);
    // The fast project's rule was read within the tick's budget and its
    // alert went out in this first tick, though the slow project came first.
    const fastRead = pages.find((p) => p.projectId === fast)!;
    assert.ok(fastRead, "the fast project's rule was read");
    assert.ok(
      fastRead.at - start <= TICK_BUDGET_MS,
      `read ${fastRead.at - start} ms into the tick`,
    );
    assert.ok(rulesOf(first.queued).includes(fastRule));
    assert.deepEqual(deliveredRules(t.fastReceiver), [fastRule]);
    assert.ok(
      h.clock.now() - start <= TICK_BUDGET_MS + SLOW_PAGE_MS,
      `the tick spent ${h.clock.now() - start} ms`,
    );
    // The slow project's rules take their turns over the next ticks, each
    // tick going on with the rule after the last one it evaluated.
    const turns = [rulesOf(first.queued).filter((id) => id !== fastRule)];
    while (turns.flat().length < SLOW_RULES && turns.length < SLOW_RULES) {
      const before = h.clock.now();
      turns.push(rulesOf((await round(loop)).queued));
      assert.ok(h.clock.now() - before <= TICK_BUDGET_MS + SLOW_PAGE_MS);
    }
    for (const turn of turns) assert.ok(turn.length > 0, "a turn each tick");
    assert.deepEqual(turns.flat(), slowRules, "each rule once, in turn");
    assert.ok(
      turns.length <= Math.ceil(SLOW_RULES / 2),
      `all evaluated within ${turns.length} ticks`,
    );
    // Each alert went out once; no rule fires again.
    await round(loop);
    assert.deepEqual(deliveredRules(t.slowReceiver).sort(), slowRules);
    assert.deepEqual(deliveredRules(t.fastReceiver), [fastRule]);
    assert.ok(pages.every((p) => p.projectId !== slow || p.records <= 1));
  });
});

Deno.test("two servers, each taking the turns its own way, deliver each alert once", async () => {
  await withTwoProjects(async (t) => {
    const { slowRules, fastRule } = t;
    const [one, two] = [t.loop(), t.loop()];
    const queued: string[] = [];
    for (let tick = 0; tick < 2 * SLOW_RULES; tick++) {
      const rounds = await Promise.all([round(one), round(two)]);
      queued.push(...rounds.flatMap((r) => rulesOf(r.queued)));
      if (tick === 0) assert.ok(queued.includes(fastRule), "in the first tick");
    }
    assert.deepEqual(queued.sort(), [...slowRules, fastRule].sort());
    assert.deepEqual(deliveredRules(t.slowReceiver).sort(), slowRules);
    assert.deepEqual(deliveredRules(t.fastReceiver), [fastRule]);
  });
});

Deno.test("a rule's backlog is read within its project's share, and the next tick goes on where it stopped", async () => {
  await withHarness(async (h) => {
    const project = (await h.project([ORIGIN])).id;
    const receiver = startReceiver();
    try {
      const rule = await addCriticalRule(h, project, receiver.url);
      const start = h.clock.now();
      // Five pages of critical entries (a page is 1,000 entries).
      for (let batch = 0; batch < 10; batch++) {
        await storeBatch(
          h.kv,
          project,
          Array.from(
            { length: 500 },
            (_, i) =>
              recordAt(start + 1 + batch * 500 + i, { level: "critical" }),
          ),
        );
      }
      h.clock.advance(5000 + SETTLE_MS);
      const pages: PageRead[] = [];
      const pageMs = 400;
      const loop = alertLoopOn(h, {
        reads: slowReads(h, () => pageMs, pages),
      });
      const first = await round(loop);
      // Pages at 0, 400 and 800 ms of the 1,000 ms share; each given what
      // was left of it as its budget; none after.
      assert.deepEqual(pages.map((p) => p.at - pages[0]!.at), [0, 400, 800]);
      assert.deepEqual(pages.map((p) => p.budgetMs), [1000, 600, 200]);
      assert.deepEqual(first.queued.map((d) => d.count), [3000]);
      const second = await round(loop);
      assert.equal(pages[3]!.afterId, pages[2]!.lastId, "where it stopped");
      assert.deepEqual(pages.slice(3).map((p) => p.records), [1000, 1000, 0]);
      assert.deepEqual(second.queued.map((d) => d.count), [2000]);
      assert.deepEqual(
        receiver.received.map((r) => JSON.parse(r.body).count),
        [3000, 2000],
        "each entry counted once",
      );
      assert.equal(
        deliveredRules(receiver).every((id) => id === rule.id),
        true,
      );
      await loop.stop();
    } finally {
      await receiver.close();
    }
  });
});

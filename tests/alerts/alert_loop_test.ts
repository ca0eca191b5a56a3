/**
 * Alert rules end to end on an in-memory KV: entries go through the
 * pipeline, the alert loop is ticked by hand at a fake clock, and the
 * deliveries reach a webhook receiver on 127.0.0.1.
 *
 * @module
 */
import assert from "node:assert/strict";
import { listAlertRules, readAlertHistory } from "../../db/alerts.ts";
import { deleteProject } from "../../db/deletion.ts";
import { alertOutboxKey } from "../../db/keys.ts";
import { addAlertRule } from "../../alerts/rules.ts";
import {
  RETRY_DELAYS_MS,
  SIGNATURE_HEADER,
  verifyDelivery,
} from "../../alerts/deliver.ts";
import { GROUP_MS } from "../../alerts/evaluate.ts";
import {
  alertLoopOn,
  type AlertRig,
  type Receiver,
  round,
  sendEntries,
  withAlertRig,
} from "../_helpers/webhook_receiver.ts";

/**
 * Past the query API's settling time (entries younger than 1 s wait) and
 * the grouping time of a delivery's first match.
 */
const SETTLE_MS = 1000 + GROUP_MS;

interface Setup extends AlertRig {
  /** Adds a rule for critical entries to the receiver, with `changes`. */
  addRule: (
    changes?: Partial<Parameters<typeof addAlertRule>[1]>,
  ) => ReturnType<typeof addAlertRule>;
  /**
   * Sends `n` entries of `level` (see {@linkcode send}), waits until they
   * have settled and ticks the loop once; returns what the tick did.
   */
  sendAndTick: (
    n: number,
    level: string,
  ) => ReturnType<typeof round>;
}

async function withAlerts(
  statuses: number[],
  body: (s: Setup) => Promise<void>,
): Promise<void> {
  await withAlertRig({ statuses }, async (rig) => {
    const { h, projectId, receiver, loop } = rig;
    const addRule: Setup["addRule"] = (changes = {}) =>
      addAlertRule(h.kv, {
        projectId,
        query: "level:critical",
        webhook: receiver.url,
        ...changes,
      }, { allowPrivate: true, now: h.clock.now });
    const sendAndTick: Setup["sendAndTick"] = async (n, level) => {
      await sendEntries(h, [projectId], level, n);
      h.clock.advance(SETTLE_MS);
      return await round(loop);
    };
    await body({ ...rig, addRule, sendAndTick });
  });
}

function bodies(receiver: Receiver): Record<string, unknown>[] {
  return receiver.received.map((r) => JSON.parse(r.body));
}

Deno.test("a critical entry produces one signed delivery with the entry in it", async () => {
  await withAlerts(
    [],
    async ({ h, projectId, receiver, loop, addRule, sendAndTick }) => {
      const rule = await addRule();
      await sendEntries(h, [projectId], "info");
      const { queued, attempts } = await sendAndTick(1, "critical");
      assert.equal(queued.length, 1);
      assert.deepEqual(attempts, ["delivered"]);
      assert.equal(receiver.received.length, 1);
      const got = receiver.received[0]!;
      assert.equal(got.headers.get("content-type"), "application/json");
      assert.ok(
        verifyDelivery(
          rule.secret,
          got.headers.get(SIGNATURE_HEADER),
          got.body,
          {
            now: h.clock.now(),
          },
        ),
        "the signature verifies with the rule's secret",
      );
      assert.ok(
        !verifyDelivery(
          "whsec_other",
          got.headers.get(SIGNATURE_HEADER),
          got.body,
          {
            now: h.clock.now(),
          },
        ),
        "and not with another secret",
      );
      const body = JSON.parse(got.body);
      assert.equal(body.count, 1);
      assert.deepEqual(body.project, { id: projectId, name: "test" });
      assert.equal(body.rule.id, rule.id);
      assert.equal(body.rule.query, "level:critical");
      assert.equal(body.entries.length, 1);
      assert.equal(body.entries[0].level, "critical");
      assert.match(body.text, /Alert "level:critical": 1 entry matched/);
      // Nothing new: the next tick sends nothing.
      h.clock.advance(120_000);
      assert.deepEqual(await round(loop), { queued: [], attempts: [] });
      const history = await readAlertHistory(h.kv, projectId, rule.id);
      assert.equal(history.length, 1);
      assert.equal(history[0]!.status, 200);
      assert.equal(history[0]!.outcome, "delivered");
    },
  );
});

Deno.test("a burst of 20 critical entries within one window is one delivery with count 20", async () => {
  await withAlerts([], async ({ receiver, addRule, sendAndTick }) => {
    await addRule({ everyMs: 300_000 });
    await sendAndTick(20, "critical");
    assert.deepEqual(bodies(receiver).map((b) => b.count), [20]);
    assert.equal((bodies(receiver)[0]!.entries as unknown[]).length, 5);
  });
});

Deno.test("a burst seen over two ticks within the grouping time is one delivery", async () => {
  await withAlerts(
    [],
    async ({ h, projectId, receiver, loop, addRule, sendAndTick }) => {
      await addRule();
      await sendEntries(h, [projectId], "critical", 10);
      h.clock.advance(1100);
      const first = await round(loop);
      assert.deepEqual(first.queued, [], "the first ten wait for the rest");
      await sendAndTick(10, "critical");
      assert.deepEqual(bodies(receiver).map((b) => b.count), [20]);
    },
  );
});

Deno.test("entries arriving within --every are counted in the next delivery", async () => {
  await withAlerts(
    [],
    async ({ h, projectId, receiver, loop, addRule, sendAndTick }) => {
      await addRule({ everyMs: 300_000 });
      await sendAndTick(1, "critical");
      for (let i = 0; i < 3; i++) {
        await sendEntries(h, [projectId], "critical", 4);
        h.clock.advance(60_000);
        await round(loop);
      }
      assert.deepEqual(bodies(receiver).map((b) => b.count), [1]);
      h.clock.advance(300_000);
      await round(loop);
      assert.deepEqual(bodies(receiver).map((b) => b.count), [1, 12]);
    },
  );
});

Deno.test("a threshold rule fires only above N matches within its window", async () => {
  await withAlerts([], async ({ h, receiver, addRule, sendAndTick }) => {
    await addRule({ query: "level:error", threshold: 5, windowMs: 300_000 });
    await sendAndTick(5, "error");
    assert.equal(receiver.received.length, 0, "5 is not more than 5");
    // Past the window, those five no longer count.
    h.clock.advance(400_000);
    await sendAndTick(1, "error");
    assert.equal(receiver.received.length, 0);
    await sendAndTick(5, "error");
    const [body] = bodies(receiver);
    assert.equal(body?.count, 6);
    assert.equal((body?.rule as { threshold: number }).threshold, 5);
  });
});

Deno.test("a failing receiver gets retries with backoff, then the delivery succeeds", async () => {
  await withAlerts(
    [500, 503],
    async ({ h, projectId, receiver, loop, addRule, sendAndTick }) => {
      const rule = await addRule();
      assert.deepEqual((await sendAndTick(1, "critical")).attempts, [
        "retrying",
      ]);
      // Not due before its backoff.
      h.clock.advance(RETRY_DELAYS_MS[0]! - 1);
      assert.deepEqual((await round(loop)).attempts, []);
      h.clock.advance(1);
      assert.deepEqual((await round(loop)).attempts, ["retrying"]);
      h.clock.advance(RETRY_DELAYS_MS[1]!);
      assert.deepEqual((await round(loop)).attempts, ["delivered"]);
      assert.equal(receiver.received.length, 3);
      assert.equal(
        new Set(receiver.received.map((r) => r.headers.get("x-logs-delivery")))
          .size,
        1,
        "the same delivery each time",
      );
      const history = await readAlertHistory(h.kv, projectId, rule.id);
      assert.deepEqual(
        history.map((a) => [a.attempt, a.status, a.outcome]),
        [[3, 200, "delivered"], [2, 503, "retrying"], [1, 500, "retrying"]],
      );
      const left = await Array.fromAsync(
        h.kv.list({ prefix: alertOutboxKey() }),
      );
      assert.equal(left.length, 0, "the outbox is empty");
    },
  );
});

Deno.test("a delivery is given up after its last retry and recorded as failed", async () => {
  const statuses = Array(RETRY_DELAYS_MS.length + 1).fill(500);
  await withAlerts(
    statuses,
    async ({ h, projectId, receiver, loop, addRule, sendAndTick }) => {
      const rule = await addRule();
      await sendAndTick(1, "critical");
      for (const delay of RETRY_DELAYS_MS) {
        h.clock.advance(delay);
        await round(loop);
      }
      h.clock.advance(3_600_000);
      await round(loop);
      assert.equal(receiver.received.length, RETRY_DELAYS_MS.length + 1);
      const history = await readAlertHistory(h.kv, projectId, rule.id);
      assert.equal(history[0]!.outcome, "failed");
      assert.equal(history.length, RETRY_DELAYS_MS.length + 1);
    },
  );
});

Deno.test("the rules of a deleted project are deleted by the next tick", async () => {
  await withAlerts([], async ({ h, projectId, receiver, loop, addRule }) => {
    await addRule();
    await deleteProject(h.kv, projectId);
    await round(loop);
    assert.deepEqual(await listAlertRules(h.kv), []);
    assert.equal(receiver.received.length, 0);
  });
});

Deno.test("two loops on one KV deliver each alert once", async () => {
  await withAlerts([], async ({ h, projectId, receiver, loop, addRule }) => {
    const other = alertLoopOn(h);
    await addRule();
    await sendEntries(h, [projectId], "critical", 3);
    h.clock.advance(SETTLE_MS);
    await Promise.all([round(loop), round(other)]);
    await Promise.all([round(loop), round(other)]);
    assert.deepEqual(bodies(receiver).map((b) => b.count), [3]);
  });
});

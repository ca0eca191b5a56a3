/**
 * The bound on a rule's waiting deliveries: a rule that fires faster than
 * its target takes deliveries keeps its newest ones in the outbox, the
 * older are dropped and recorded, and a delivery that leaves the outbox
 * leaves nothing under its rule.
 *
 * @module
 */
import assert from "node:assert/strict";
import {
  deleteAlertRule,
  type Delivery,
  MAX_WAITING_PER_RULE,
  readAlertHistory,
} from "../../db/alerts.ts";
import { alertOutboxKey, alertWaitingKey } from "../../db/keys.ts";
import { decodeJson } from "../../db/kv.ts";
import { evaluateRules, GROUP_MS } from "../../alerts/evaluate.ts";
import { claimDelivery } from "../../alerts/deliver.ts";
import { ORIGIN, withHarness } from "../_helpers/harness.ts";
import type { Harness } from "../_helpers/harness.ts";
import {
  addCriticalRule,
  round,
  sendEntries,
  withAlertRig,
} from "../_helpers/webhook_receiver.ts";

/** Past the query API's settling time and a delivery's grouping time. */
const SETTLE_MS = 1000 + GROUP_MS;

/** The deliveries of `ruleId` in the outbox, by id. */
async function outboxOf(h: Harness, ruleId: string): Promise<Delivery[]> {
  const entries = await Array.fromAsync(
    h.kv.list({ prefix: alertOutboxKey() }),
  );
  return entries.map((e) => decodeJson<Delivery>(e.value)!)
    .filter((d) => d.ruleId === ruleId)
    .sort((a, b) => a.id < b.id ? -1 : 1);
}

/** The due times listed under a rule, by delivery id. */
async function waitingOf(
  h: Harness,
  projectId: string,
  ruleId: string,
): Promise<Map<string, number>> {
  const entries = await Array.fromAsync(
    h.kv.list({ prefix: alertWaitingKey(projectId, ruleId) }),
  );
  return new Map(
    entries.map((
      e,
    ) => [String(e.key.at(-1)), decodeJson<{ due: number }>(e.value)!.due]),
  );
}

/** The due time of each of the rule's deliveries, read from its outbox key. */
async function dueOf(h: Harness, ruleId: string): Promise<Map<string, number>> {
  const due = new Map<string, number>();
  for await (const e of h.kv.list({ prefix: alertOutboxKey() })) {
    const delivery = decodeJson<Delivery>(e.value)!;
    if (delivery.ruleId === ruleId) due.set(delivery.id, Number(e.key[1]));
  }
  return due;
}

Deno.test(`a rule never sent keeps its newest ${MAX_WAITING_PER_RULE} deliveries; the older are dropped and recorded`, async () => {
  await withHarness(async (h) => {
    const project = await h.project([ORIGIN]);
    // Nothing sends: the deliveries pile up as behind a target that never
    // answers.
    const rule = await addCriticalRule(h, project.id, "http://127.0.0.1:9/");
    const queued: string[] = [];
    for (let i = 0; i < MAX_WAITING_PER_RULE + 6; i++) {
      await sendEntries(h, [project.id], "critical");
      h.clock.advance(SETTLE_MS);
      const round = await evaluateRules({ kv: h.kv, now: h.clock.now });
      assert.equal(round.length, 1, `round ${i} queued one delivery`);
      queued.push(round[0]!.id);
      if (i === 0) {
        // The first is claimed by a server sending it: it is not dropped.
        const [entry] = await Array.fromAsync(
          h.kv.list({ prefix: alertOutboxKey() }),
        );
        const delivery = decodeJson<Delivery>(entry!.value)!;
        assert.ok(await claimDelivery(h.kv, entry!, delivery, h.clock.now()));
      }
    }
    // The five oldest not being sent are dropped, the oldest first.
    const dropped = queued.slice(1, 6);
    const kept = await outboxOf(h, rule.id);
    assert.deepEqual(kept.map((d) => d.id), [queued[0]!, ...queued.slice(6)]);
    assert.deepEqual(
      [...(await waitingOf(h, project.id, rule.id)).keys()].sort(),
      [queued[0]!, ...queued.slice(6)],
    );
    const history = await readAlertHistory(h.kv, project.id, rule.id);
    assert.deepEqual(history.map((a) => a.deliveryId).reverse(), dropped);
    for (const attempt of history) {
      assert.equal(attempt.outcome, "failed");
      assert.equal(
        attempt.error,
        `Dropped unsent: ${MAX_WAITING_PER_RULE} newer deliveries of this rule are waiting`,
      );
    }
  });
});

Deno.test("a delivery's place under its rule follows it through a retry and goes with it", async () => {
  await withAlertRig(
    { statuses: [500] },
    async ({ h, projectId, receiver, loop }) => {
      const rule = await addCriticalRule(h, projectId, receiver.url);
      await sendEntries(h, [projectId], "critical");
      h.clock.advance(SETTLE_MS);
      assert.deepEqual((await round(loop)).attempts, ["retrying"]);
      // Waiting for its retry: listed under the rule with its outbox due time.
      const due = await dueOf(h, rule.id);
      assert.equal(due.size, 1);
      assert.deepEqual(await waitingOf(h, projectId, rule.id), due);
      h.clock.advance(1000);
      assert.deepEqual((await round(loop)).attempts, ["delivered"]);
      assert.equal(receiver.received.length, 2);
      assert.deepEqual(await outboxOf(h, rule.id), []);
      assert.equal((await waitingOf(h, projectId, rule.id)).size, 0);
    },
  );
});

Deno.test("a deleted rule leaves neither its list nor its deliveries behind", async () => {
  await withAlertRig({}, async ({ h, projectId, receiver, loop }) => {
    const rule = await addCriticalRule(h, projectId, receiver.url);
    await sendEntries(h, [projectId], "critical");
    h.clock.advance(SETTLE_MS);
    assert.equal(
      (await evaluateRules({ kv: h.kv, now: h.clock.now })).length,
      1,
    );
    assert.equal((await waitingOf(h, projectId, rule.id)).size, 1);
    assert.ok(await deleteAlertRule(h.kv, projectId, rule.id));
    assert.equal((await waitingOf(h, projectId, rule.id)).size, 0);
    await round(loop);
    assert.deepEqual(await outboxOf(h, rule.id), []);
    assert.equal(receiver.received.length, 0);
  });
});

/**
 * Alert rules read their entries where the service's other reads go: over a
 * database file, through the query thread (db/query/thread.ts), so that
 * rules on a busy project do not hold the endpoint's thread. The rules
 * fire as they do in this thread, and this thread reads none of their
 * entries.
 *
 * @module
 */
import assert from "node:assert/strict";
import { addAlertRule } from "../../alerts/rules.ts";
import { createQueryThread } from "../../db/query/thread.ts";
import { localReads } from "../../db/query/reads.ts";
import { harness, ORIGIN, randomEntry } from "../_helpers/harness.ts";
import {
  addCriticalRule,
  alertLoopOn,
  round,
  startReceiver,
} from "../_helpers/webhook_receiver.ts";
import { notedReads } from "../_helpers/query.ts";

Deno.test("over a database file, query rules and rules on error groups read through the query thread and fire as before", async () => {
  const dir = await Deno.makeTempDir();
  const kvPath = `${dir}/kv.sqlite`;
  const h = await harness({ kv: await Deno.openKv(kvPath) });
  const receiver = startReceiver();
  const calls: string[] = [];
  const thread = createQueryThread({
    kvPath,
    local: notedReads(() => localReads(h.kv), calls),
  });
  try {
    const { id: projectId } = await h.project([ORIGIN]);
    await addCriticalRule(h, projectId, receiver.url);
    await addAlertRule(h.kv, {
      projectId,
      query: "",
      on: "new",
      webhook: receiver.url,
    }, { allowPrivate: true, now: h.clock.now });
    const asked: string[] = [];
    const loop = alertLoopOn(h, { reads: notedReads(() => thread, asked) });
    for (const level of ["critical", "critical", "info"]) {
      const res = await h.post(
        randomEntry({ projectId, level, data: { title: "Cart failed" } }),
        { Origin: ORIGIN },
      );
      assert.equal(res.status, 200);
      await res.body?.cancel();
    }
    await h.process();
    // Past the query API's settling time and a delivery's grouping time.
    h.clock.advance(3_500);
    const { queued, attempts } = await round(loop);
    const counts = queued.map((d) => d.count).sort();
    assert.deepEqual(counts, [1, 2], "one new group, two critical entries");
    assert.deepEqual(attempts, ["delivered", "delivered"]);
    assert.equal(receiver.received.length, 2);
    assert.deepEqual(asked, ["tailLogs", "tailLogs"], "each rule read once");
    assert.deepEqual(calls, [], "and not again in this thread");
    await loop.stop();
  } finally {
    await thread.stop();
    await receiver.close();
    await h.close();
    h.kv.close();
    await Deno.remove(dir, { recursive: true });
  }
});

/**
 * The slow-target run over real sockets, on 127.0.0.1 only: 50 rules of
 * project A point at a listener that accepts connections and never
 * answers; project B's alert must reach its receiver while all of A's
 * attempts still wait (it came after 150 s when every delivery round waited
 * for all of its attempts). A's attempts are given a minute, so that on any
 * machine, however busy, none of them can end before B's is delivered.
 *
 * @module
 */
import assert from "node:assert/strict";
import { type DeliveryAttempt, readAlertHistory } from "../../db/alerts.ts";
import { GROUP_MS } from "../../alerts/evaluate.ts";
import { attemptDelivery } from "../../alerts/deliver.ts";
import { ORIGIN, withHarness } from "../_helpers/harness.ts";
import { within } from "../_helpers/timeout.ts";
import {
  addCriticalRule,
  alertLoopOn,
  sendEntries,
  startReceiver,
} from "../_helpers/webhook_receiver.ts";

/** How long each attempt waits for an answer: longer than any stall. */
const A_TIMEOUT_MS = 60_000;

/** A listener on 127.0.0.1 that accepts every connection and never answers. */
function startSilentListener() {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const held: Deno.Conn[] = [];
  const accepting = (async () => {
    try {
      for await (const conn of listener) held.push(conn);
    } catch {
      // Closed.
    }
  })();
  return {
    url: `http://127.0.0.1:${listener.addr.port}/hook`,
    held,
    async close() {
      listener.close();
      await accepting;
      for (const conn of held) {
        try {
          conn.close();
        } catch {
          // Already closed by the other side.
        }
      }
    },
  };
}

Deno.test("project B's alert is delivered while 50 rules of project A wait on a silent target", async () => {
  const silent = startSilentListener();
  const receiver = startReceiver();
  try {
    await withHarness(async (h) => {
      const a = await h.project([ORIGIN]);
      const b = await h.project([ORIGIN]);
      for (let i = 0; i < 50; i++) await addCriticalRule(h, a.id, silent.url);
      const ruleB = await addCriticalRule(h, b.id, receiver.url);
      /** Attempts of A's rules recorded (each can only end by timing out). */
      let endedA = 0;
      let delivered: (a: DeliveryAttempt) => void = () => {};
      const deliveredB = new Promise<DeliveryAttempt>((resolve) => {
        delivered = resolve;
      });
      const loop = alertLoopOn(h, {
        timeoutMs: A_TIMEOUT_MS,
        onAttempt: (attempt) => {
          if (attempt.ruleId === ruleB.id) delivered(attempt);
          else endedA++;
        },
      });
      try {
        await sendEntries(h, [a.id, b.id], "critical");
        h.clock.advance(1000 + GROUP_MS);
        const tick = await loop.tick();
        assert.equal(tick.queued.length, 51);
        // Against a hang only: B's delivery is not behind A's attempts, so
        // it comes long before the first of them can time out.
        const attempt = await within(A_TIMEOUT_MS, "B's delivery", deliveredB);
        assert.equal(attempt.outcome, "delivered");
        assert.equal(endedA, 0, "B's alert waited for A's attempts");
        assert.equal(receiver.received.length, 1);
        assert.equal(JSON.parse(receiver.received[0]!.body).project.id, b.id);
        assert.ok(silent.held.length >= 1, "A's target was being tried");
        assert.deepEqual(
          (await readAlertHistory(h.kv, b.id, ruleB.id)).map((a) => a.outcome),
          ["delivered"],
        );
      } finally {
        await loop.stop();
      }
    });
  } finally {
    await silent.close();
    await receiver.close();
  }
});

Deno.test("a 2xx whose body never ends is delivered, not timed out and sent again", async () => {
  const kv = await Deno.openKv(":memory:");
  const result = await attemptDelivery(
    {
      id: "d1",
      projectId: "p",
      ruleId: "r",
      body: "{}",
      count: 1,
      attempts: 0,
      createdAt: 0,
    },
    { webhook: "https://hooks.example.com/x", secret: "s" },
    {
      kv,
      allowPrivate: true,
      timeoutMs: 50,
      fetch: (_, init) =>
        Promise.resolve(
          new Response(
            new ReadableStream({
              start(controller) {
                controller.enqueue(new TextEncoder().encode("ok"));
                init?.signal?.addEventListener("abort", () =>
                  controller.error(init.signal!.reason));
              },
            }),
            { status: 200 },
          ),
        ),
    },
  );
  kv.close();
  assert.deepEqual(result, { ok: true, status: 200 });
});

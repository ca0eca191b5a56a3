/**
 * One project's slow alert targets do not delay another project's alerts:
 * a tick waits for no answer, attempts in flight are bounded per target and
 * per project, and a target that keeps timing out is backed off, as each
 * rule's history shows. The clock is the harness's; `fetch` is a fake that
 * answers when told to.
 *
 * @module
 */
import assert from "node:assert/strict";
import { type DeliveryAttempt, readAlertHistory } from "../../db/alerts.ts";
import { alertOutboxKey } from "../../db/keys.ts";
import { GROUP_MS } from "../../alerts/evaluate.ts";
import type { AlertLoop } from "../../alerts/mod.ts";
import {
  BACKOFF_AFTER_TIMEOUTS,
  MAX_IN_FLIGHT_PER_PROJECT,
  MAX_IN_FLIGHT_PER_TARGET,
  TARGET_BACKOFF_MS,
} from "../../alerts/dispatch.ts";
import { RETRY_DELAYS_MS } from "../../alerts/deliver.ts";
import { type Harness, ORIGIN, withHarness } from "../_helpers/harness.ts";
import { within } from "../_helpers/timeout.ts";
import {
  addCriticalRule,
  alertLoopOn,
  round,
  sendEntries,
} from "../_helpers/webhook_receiver.ts";

/** Past the query API's settling time and a delivery's grouping time. */
const SETTLE_MS = 1000 + GROUP_MS;
const B_HOOK = "https://hooks.b.example.com/alert";

/**
 * A fetch whose answers the test decides per host: `hang` never answers
 * (until the attempt is aborted), `timeout` fails as a timed-out attempt
 * does, anything else answers 200.
 */
function fakeFetch(behaviour: (host: string) => "hang" | "timeout" | "ok") {
  const calls: string[] = [];
  const fetcher = ((input: string | URL, init?: RequestInit) => {
    const host = new URL(String(input)).host;
    calls.push(host);
    switch (behaviour(host)) {
      case "hang":
        return new Promise((_, reject) => {
          init?.signal?.addEventListener(
            "abort",
            () => reject(init.signal!.reason),
            { once: true },
          );
        });
      case "timeout":
        return Promise.reject(new DOMException("timed out", "TimeoutError"));
      default:
        return Promise.resolve(new Response("ok"));
    }
  }) as typeof fetch;
  return { fetcher, calls };
}

/** Resolves with the first attempt recorded for `ruleId`. */
function firstAttemptOf(
  attempts: (DeliveryAttempt & { ruleId: string })[],
  waiters: Map<string, (a: DeliveryAttempt) => void>,
  ruleId: string,
): Promise<DeliveryAttempt> {
  const done = attempts.find((a) => a.ruleId === ruleId);
  if (done) return Promise.resolve(done);
  return new Promise((resolve) => waiters.set(ruleId, resolve));
}

interface Slow {
  h: Harness;
  loop: AlertLoop;
  calls: string[];
  projectA: string;
  projectB: string;
  rulesOfA: string[];
  ruleB: string;
  /** Resolves with the first attempt recorded for a rule. */
  attemptOf: (ruleId: string) => Promise<DeliveryAttempt>;
}

/**
 * Project A with `rulesOfA` rules (`--every 0`) on the webhooks
 * `hookOfA(i)`, project B with one rule on {@linkcode B_HOOK}; `fetch` as
 * given.
 */
async function withTwoProjects(
  { rulesOfA, hookOfA }: { rulesOfA: number; hookOfA: (i: number) => string },
  behaviour: (host: string) => "hang" | "timeout" | "ok",
  body: (s: Slow) => Promise<void>,
): Promise<void> {
  await withHarness(async (h) => {
    const a = await h.project([ORIGIN]);
    const b = await h.project([ORIGIN]);
    const idsOfA: string[] = [];
    for (let i = 0; i < rulesOfA; i++) {
      idsOfA.push((await addCriticalRule(h, a.id, hookOfA(i))).id);
    }
    const ruleB = await addCriticalRule(h, b.id, B_HOOK);
    const { fetcher, calls } = fakeFetch(behaviour);
    const attempts: (DeliveryAttempt & { ruleId: string })[] = [];
    const waiters = new Map<string, (a: DeliveryAttempt) => void>();
    const loop = alertLoopOn(h, {
      fetch: fetcher,
      onAttempt: (attempt) => {
        attempts.push(attempt);
        waiters.get(attempt.ruleId)?.(attempt);
      },
    });
    try {
      await body({
        h,
        loop,
        calls,
        projectA: a.id,
        projectB: b.id,
        rulesOfA: idsOfA,
        ruleB: ruleB.id,
        attemptOf: (id) => firstAttemptOf(attempts, waiters, id),
      });
    } finally {
      await loop.stop();
    }
  });
}

Deno.test("a target that never answers does not delay another project's alert", async (t) => {
  for (
    const [name, hookOfA, inFlightOfA] of [
      [
        "50 rules on one target: two attempts to it in flight",
        () => "https://slow.a.example.com/hook",
        MAX_IN_FLIGHT_PER_TARGET,
      ],
      [
        "50 rules on 50 targets: the project's bound holds",
        (i: number) => `https://slow${i}.a.example.com/hook`,
        MAX_IN_FLIGHT_PER_PROJECT,
      ],
    ] as const
  ) {
    await t.step(name, async () => {
      await withTwoProjects(
        { rulesOfA: 50, hookOfA },
        (host) => host.endsWith(".a.example.com") ? "hang" : "ok",
        async ({ h, loop, calls, projectA, projectB, ruleB, attemptOf }) => {
          await sendEntries(h, [projectA, projectB], "critical");
          h.clock.advance(SETTLE_MS);
          const at = h.clock.now();
          // The tick itself returns though A's attempts never end.
          const tick = await within(5000, "the tick", loop.tick());
          assert.equal(tick.queued.length, 51);
          assert.equal(tick.started, inFlightOfA + 1);
          const attempt = await within(5000, "B's attempt", attemptOf(ruleB));
          assert.equal(attempt.outcome, "delivered");
          assert.equal(attempt.at, at, "in the first round");
          assert.deepEqual(
            (await readAlertHistory(h.kv, projectB, ruleB)).map((a) =>
              a.outcome
            ),
            ["delivered"],
          );
          assert.equal(
            calls.filter((c) => c.endsWith(".a.example.com")).length,
            inFlightOfA,
          );
          const waiting = await Array.fromAsync(
            h.kv.list({ prefix: alertOutboxKey() }),
          );
          assert.equal(waiting.length, 50, "A's deliveries all kept");
        },
      );
    });
  }
});

Deno.test("a target that keeps timing out is backed off, in its rule's history, while others are delivered", async () => {
  let slow: "timeout" | "ok" = "timeout";
  await withTwoProjects(
    { rulesOfA: 1, hookOfA: () => "https://slow.a.example.com/hook" },
    (host) => host === "slow.a.example.com" ? slow : "ok",
    async ({ h, loop, calls, projectA, projectB, rulesOfA, ruleB }) => {
      const slowCalls = () =>
        calls.filter((c) => c === "slow.a.example.com").length;
      const historyOfA = () => readAlertHistory(h.kv, projectA, rulesOfA[0]!);
      await sendEntries(h, [projectA], "critical");
      h.clock.advance(SETTLE_MS);
      await round(loop);
      for (
        const delay of RETRY_DELAYS_MS.slice(0, BACKOFF_AFTER_TIMEOUTS - 1)
      ) {
        h.clock.advance(delay);
        await round(loop);
      }
      assert.equal(slowCalls(), BACKOFF_AFTER_TIMEOUTS);
      assert.deepEqual(
        (await historyOfA()).map((a) => a.error),
        Array(BACKOFF_AFTER_TIMEOUTS).fill("No answer within 5000 ms"),
      );
      const backedOffAt = h.clock.now();
      // A new alert of A waits, without an attempt; B's goes out.
      await sendEntries(h, [projectA, projectB], "critical");
      h.clock.advance(SETTLE_MS);
      const { attempts } = await round(loop);
      assert.deepEqual(attempts.toSorted(), ["backed-off", "delivered"]);
      assert.equal(slowCalls(), BACKOFF_AFTER_TIMEOUTS, "no attempt to it");
      assert.deepEqual(
        (await readAlertHistory(h.kv, projectB, ruleB)).map((a) => a.outcome),
        ["delivered"],
      );
      const [held] = await historyOfA();
      assert.equal(held!.outcome, "backed-off");
      const until = new Date(backedOffAt + TARGET_BACKOFF_MS[0]!)
        .toISOString().slice(11, 19);
      assert.equal(
        held!.error,
        `Backed off: "slow.a.example.com" timed out 3 times in a row; next attempt at ${until} UTC`,
      );
      // When the backoff ends both of A's deliveries are tried; an answer
      // ends the backoff.
      slow = "ok";
      h.clock.advance(TARGET_BACKOFF_MS[0]! - SETTLE_MS);
      assert.deepEqual((await round(loop)).attempts, [
        "delivered",
        "delivered",
      ]);
      assert.equal(slowCalls(), BACKOFF_AFTER_TIMEOUTS + 2);
    },
  );
});

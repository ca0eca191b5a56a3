/**
 * A webhook receiver on 127.0.0.1 for the alert suites: it records every
 * request (headers and body) and answers with the statuses it is given,
 * one per request, then 200. And {@linkcode round}: a tick whose
 * deliveries are waited for; {@linkcode addCriticalRule}: a rule that
 * fires on every critical entry; {@linkcode withAlertRig}: a harness, a
 * project, a receiver and an alert loop for one test.
 *
 * @module
 */
import {
  type AlertLoop,
  type AlertLoopOptions,
  createAlertLoop,
} from "../../alerts/mod.ts";
import type { AttemptOutcome, Delivery } from "../../db/alerts.ts";
import { addAlertRule } from "../../alerts/rules.ts";
import assert from "node:assert/strict";
import {
  type Harness,
  harness,
  ORIGIN,
  randomEntry,
  serve,
} from "./harness.ts";

/**
 * Posts `n` entries of `level` to each of `projectIds` from the allowed
 * origin, checks that each is accepted, and stores them.
 *
 * @example
 * ```ts
 * await sendEntries(h, [project.id], "critical", 3);
 * ```
 */
export async function sendEntries(
  h: Harness,
  projectIds: string[],
  level: string,
  n = 1,
): Promise<void> {
  for (const projectId of projectIds) {
    for (let i = 0; i < n; i++) {
      const res = await h.post(randomEntry({ projectId, level }), {
        Origin: ORIGIN,
      });
      assert.equal(res.status, 200);
      await res.body?.cancel();
    }
  }
  await h.process();
}

/**
 * An alert loop on the harness's KV and clock that may deliver to private
 * and loopback targets (the receivers), with `options` over that. The
 * harness's clock is also the one a tick's budget is counted on, so a tick
 * evaluates every rule unless the test moves the clock during it.
 *
 * @example
 * ```ts
 * const loop = alertLoopOn(h, { timeoutMs: 500 });
 * ```
 */
export function alertLoopOn(
  h: Harness,
  options: Partial<AlertLoopOptions> = {},
): AlertLoop {
  return createAlertLoop({
    kv: h.kv,
    now: h.clock.now,
    clock: h.clock.now,
    allowPrivate: true,
    ...options,
  });
}

/**
 * Adds a rule of `projectId` on `level:critical` with no quiet time
 * (`everyMs: 0`), private targets allowed, on the harness's clock.
 *
 * @example
 * ```ts
 * const rule = await addCriticalRule(h, project.id, receiver.url);
 * ```
 */
export function addCriticalRule(
  h: Harness,
  projectId: string,
  webhook: string,
): ReturnType<typeof addAlertRule> {
  return addAlertRule(h.kv, {
    projectId,
    query: "level:critical",
    webhook,
    everyMs: 0,
  }, { allowPrivate: true, now: h.clock.now });
}

/** One request the receiver got. */
export interface Received {
  path: string;
  headers: Headers;
  body: string;
}

/** A running receiver. */
export interface Receiver {
  url: string;
  received: Received[];
  close(): Promise<void>;
}

/** Starts a receiver; `statuses` are answered in order, then 200. */
export function startReceiver(statuses: number[] = []): Receiver {
  const received: Received[] = [];
  const left = [...statuses];
  const server = serve(async (req) => {
    received.push({
      path: new URL(req.url).pathname,
      headers: req.headers,
      body: await req.text(),
    });
    return new Response("ok", { status: left.shift() ?? 200 });
  });
  return {
    url: `http://127.0.0.1:${server.addr.port}/hook`,
    received,
    close: () => server.shutdown(),
  };
}

/**
 * One tick, then the answers of the deliveries it started (a tick itself
 * waits for none): what was queued and every outcome recorded.
 */
export async function round(
  loop: AlertLoop,
): Promise<{ queued: Delivery[]; attempts: AttemptOutcome[] }> {
  const { queued, attempts } = await loop.tick();
  return { queued, attempts: [...attempts, ...await loop.settled()] };
}

/** What {@linkcode withAlertRig} gives a test. */
export interface AlertRig {
  h: Harness;
  /** A project that allows {@linkcode ORIGIN}. */
  projectId: string;
  receiver: Receiver;
  /** A loop on the harness's KV and clock, private targets allowed. */
  loop: AlertLoop;
}

/**
 * Runs `body` with a fresh harness, a project, a receiver answering
 * `statuses` (see {@linkcode startReceiver}) and an alert loop with `loop`'s
 * options added; closes the receiver and the harness after.
 *
 * @example
 * ```ts
 * await withAlertRig({}, async ({ h, projectId, receiver, loop }) => {
 *   await addCriticalRule(h, projectId, receiver.url);
 * });
 * ```
 */
export async function withAlertRig(
  options: { statuses?: number[]; loop?: Partial<AlertLoopOptions> },
  body: (rig: AlertRig) => Promise<void>,
): Promise<void> {
  const h = await harness();
  const receiver = startReceiver(options.statuses);
  try {
    const project = await h.project([ORIGIN]);
    const loop = alertLoopOn(h, options.loop);
    await body({ h, projectId: project.id, receiver, loop });
  } finally {
    await receiver.close();
    await h.close();
  }
}

/**
 * A webhook receiver on 127.0.0.1 for the alert suites: it records every
 * request (headers and body) and answers with the statuses it is given,
 * one per request, then 200. And {@linkcode round}: a tick whose
 * deliveries are waited for; {@linkcode addCriticalRule}: a rule that
 * fires on every critical entry.
 *
 * @module
 */
import type { AlertLoop } from "../../alerts/mod.ts";
import type { AttemptOutcome, Delivery } from "../../db/alerts.ts";
import { addAlertRule } from "../../alerts/rules.ts";
import { type Harness, serve } from "./harness.ts";

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

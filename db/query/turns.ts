/**
 * Turns of the event loop given back by long reads: a query runs on the
 * thread that answers requests, and its synchronous stretches (decoding and
 * filtering a batch of chunks) would otherwise hold every other request
 * until its next read of KV (docs/query.md#what-each-query-reads).
 *
 * @module
 */
import { timeout } from "../kv.ts";

/** Time a read keeps the thread before it gives the event loop a turn. */
export const SLICE_MS = 10;

/**
 * A function to await in a read's loop: it resolves at once, except when
 * {@linkcode SLICE_MS} have passed since the last turn it gave, when it
 * waits for a turn of the event loop (a timer), so that requests waiting
 * meanwhile are answered.
 *
 * @example
 * ```ts
 * const turn = turnTaker();
 * for (const chunk of chunks) {
 *   await turn();
 *   decode(chunk);
 * }
 * ```
 */
export function turnTaker(
  sliceMs = SLICE_MS,
  clock: () => number = () => performance.now(),
): () => Promise<void> | undefined {
  let since = clock();
  return () => {
    const now = clock();
    if (now - since < sliceMs) return undefined;
    return timeout(0).then(() => {
      since = clock();
    });
  };
}

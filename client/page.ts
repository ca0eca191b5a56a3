/**
 * Leaving a page: when it is hidden (tab switched, app sent to the
 * background, where mobile browsers may kill it) or unloaded, what is still
 * queued goes out at once by `navigator.sendBeacon`, as far as the service
 * would take it. A beacon is sent even after the page is gone, but its
 * answer is never read, so there are no retries: a beacon over the service's
 * rate limit is refused (`429`) and lost. So beacons keep to the sender's
 * pace (client/pace.ts), and none goes while it is paused after a failure:
 *
 * - `visibilitychange` to hidden (the page may well come back): what the
 *   pace allows now, the rest staying queued for normal delivery.
 * - `pagehide` (the page is going away): at most the service's burst less
 *   what the pace spent recently. The rest stays queued: sent if the page
 *   comes back (from the back/forward cache), else lost with it, as it
 *   would have been by the service's refusals.
 *
 * And the browser allows 64 KiB of beacons and `keepalive` requests in
 * flight per page, so entries beyond that stay queued too.
 *
 * A string body makes the beacon `text/plain;charset=UTF-8`, a type a page may
 * send to another origin without a CORS preflight (which a beacon cannot
 * make); the service reads it as JSON.
 *
 * @module
 */
import type { Sender } from "./delivery.ts";

/** Where {@linkcode watchPage} listens, and how it sends. */
export interface PageOptions {
  /** Receives `pagehide` and `visibilitychange` (the window). */
  target: EventTarget;
  /** Whether the page is hidden now. */
  hidden: () => boolean;
  /** Sends one body by beacon; `false` when the browser refused it. */
  sendBeacon: (body: string) => boolean;
}

/**
 * Sends what `sender` holds, as far as its pace allows, when the page is
 * hidden or left (see the module doc). Returns the function that stops
 * listening.
 *
 * @example
 * ```ts
 * const unwatch = watchPage(sender, {
 *   target: window,
 *   hidden: () => document.visibilityState === "hidden",
 *   sendBeacon: (body) => navigator.sendBeacon(endpoint, body),
 * });
 * ```
 */
export function watchPage(sender: Sender, options: PageOptions): () => void {
  const { target } = options;
  const onHide = () => sender.beacon(options.sendBeacon, true);
  const onVisibility = () =>
    options.hidden() && sender.beacon(options.sendBeacon, false);
  target.addEventListener("pagehide", onHide);
  target.addEventListener("visibilitychange", onVisibility);
  return () => {
    target.removeEventListener("pagehide", onHide);
    target.removeEventListener("visibilitychange", onVisibility);
  };
}

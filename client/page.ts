/**
 * Leaving a page: when it is hidden (tab switched, app sent to the
 * background, where mobile browsers may kill it) or unloaded, what is still
 * queued goes out at once by `navigator.sendBeacon`. A beacon is sent even
 * after the page is gone, but its answer is never read, so there are no
 * retries; and the browser allows 64 KiB of beacons and `keepalive` requests
 * in flight per page, so entries beyond that stay queued (and are sent
 * normally if the page comes back).
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
 * Sends what `sender` holds when the page is hidden or left. Returns the
 * function that stops listening.
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
  const onHide = () => sender.beacon(options.sendBeacon);
  const onVisibility = () => options.hidden() && onHide();
  target.addEventListener("pagehide", onHide);
  target.addEventListener("visibilitychange", onVisibility);
  return () => {
    target.removeEventListener("pagehide", onHide);
    target.removeEventListener("visibilitychange", onVisibility);
  };
}

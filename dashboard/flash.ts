/**
 * A secret shown once after a redirect. Creating a project or rotating its
 * secret redirects (so that reloading the page repeats nothing) and the page
 * it lands on shows the new secret: kept meanwhile under the session in KV
 * for a few minutes, as bytes, and deleted as it is read, so it is shown
 * once, and never appears in a URL.
 *
 * @module
 */
import { flashKey } from "./keys.ts";

/** How long a flash waits to be shown. */
const FLASH_TTL_MS = 5 * 60_000;

/** A new secret to show once. */
export interface Flash {
  kind: "created" | "rotated";
  projectId: string;
  name: string;
  secret: string;
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/**
 * Keeps `flash` for the session's next page.
 *
 * @example
 * ```ts
 * await setFlash(kv, session.id, { kind: "created", projectId, name, secret });
 * ```
 */
export async function setFlash(
  kv: Deno.Kv,
  sessionId: string,
  flash: Flash,
): Promise<void> {
  await kv.set(flashKey(sessionId), encoder.encode(JSON.stringify(flash)), {
    expireIn: FLASH_TTL_MS,
  });
}

/**
 * Takes the session's flash of `kind` for `projectId`, if any: it is
 * deleted in the same atomic step, so two pages never both show it.
 */
export async function takeFlash(
  kv: Deno.Kv,
  sessionId: string,
  kind: Flash["kind"],
  projectId?: string,
): Promise<Flash | null> {
  const entry = await kv.get<Uint8Array>(flashKey(sessionId));
  if (!(entry.value instanceof Uint8Array)) return null;
  const flash = JSON.parse(decoder.decode(entry.value)) as Flash;
  if (
    flash.kind !== kind ||
    (projectId !== undefined && flash.projectId !== projectId)
  ) {
    return null;
  }
  const taken = await kv.atomic().check(entry).delete(flashKey(sessionId))
    .commit();
  return taken.ok ? flash : null;
}

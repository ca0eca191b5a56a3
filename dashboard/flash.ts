/**
 * What a page shows once after a redirect. Creating a project, rotating its
 * secret and replaying rejected entries redirect (so that reloading the page
 * repeats nothing) and the page they land on shows the outcome: the new
 * secret, or what became of each replayed entry. It is kept meanwhile under
 * the session in KV for a few minutes, as bytes, and deleted as it is read,
 * so it is shown once, and never appears in a URL.
 *
 * @module
 */
import { dashboardFlashKey } from "../db/keys.ts";
import { decodeJson, encodeJson } from "../db/kv.ts";
import type { ReplayResult } from "../queue/replay.ts";

/** How long a flash waits to be shown. */
const FLASH_TTL_MS = 5 * 60_000;

/** Something to show once. */
export type Flash =
  | {
    /** A new secret: of a project just created, or rotated. */
    kind: "created" | "rotated";
    projectId: string;
    name: string;
    secret: string;
  }
  | {
    /** A new alert rule's signing secret. */
    kind: "alert";
    projectId: string;
    ruleId: string;
    secret: string;
  }
  | {
    /** The outcome of replaying kept rejected entries. */
    kind: "replayed";
    projectId: string;
    results: ReplayResult[];
  };

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
  await kv.set(dashboardFlashKey(sessionId), encodeJson(flash), {
    expireIn: FLASH_TTL_MS,
  });
}

/**
 * Takes the session's flash of `kind` for `projectId`, if any: it is
 * deleted in the same atomic step, so two pages never both show it.
 *
 * @example
 * ```ts
 * const flash = await takeFlash(kv, session.id, "rotated", projectId);
 * ```
 */
export async function takeFlash<K extends Flash["kind"]>(
  kv: Deno.Kv,
  sessionId: string,
  kind: K,
  projectId?: string,
): Promise<Flash & { kind: K } | null> {
  const key = dashboardFlashKey(sessionId);
  const entry = await kv.get(key);
  const flash = decodeJson<Flash>(entry.value);
  if (
    flash === null || flash.kind !== kind ||
    (projectId !== undefined && flash.projectId !== projectId)
  ) {
    return null;
  }
  const taken = await kv.atomic().check(entry).delete(key).commit();
  return taken.ok ? flash as Flash & { kind: K } : null;
}

/**
 * The dashboard's own KV keys, spelled here and nowhere else. Values are
 * bytes encoded by the dashboard (never runtime-serialized objects), so any
 * Deno version reading the database can read them.
 *
 * | key | value |
 * |---|---|
 * | `dashboard/secret` | 32 random bytes, mixed with `ADMIN_PASSWORD` into the signing key |
 * | `dashboard_sessions/<sessionId>` | UTF-8 JSON `{"expiresAt":ms}`, expiring with the session |
 * | `dashboard_flash/<sessionId>` | UTF-8 JSON of a secret to show once after a redirect, expiring in minutes |
 *
 * @module
 */

/** Key of the per-database random secret of the session signing key. */
export function dashboardSecretKey(): Deno.KvKey {
  return ["dashboard", "secret"];
}

/** Key of one signed-in session; deleting it ends the session. */
export function sessionKey(sessionId: string): Deno.KvKey {
  return ["dashboard_sessions", sessionId];
}

/** Key of what a session's next page shows once (a new secret). */
export function flashKey(sessionId: string): Deno.KvKey {
  return ["dashboard_flash", sessionId];
}

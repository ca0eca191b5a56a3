/**
 * Small pure helpers of the pages: URLs under the dashboard's base path,
 * times in UTC, an entry's one-line summary, level class names.
 *
 * @module
 */

/**
 * A path under the dashboard's base (`""` standalone, `/dashboard` mounted).
 *
 * @example
 * ```ts
 * link("/dashboard", "/projects/abc"); // "/dashboard/projects/abc"
 * ```
 */
import { type LogRecord, STANDARD_LEVELS } from "../../domain/entry.ts";
import { entryTitle } from "../../domain/fingerprint.ts";
export function link(base: string, path: string): string {
  return `${base}${path}`;
}

/** `2026-01-15 09:31:02.337` (UTC), or to the second without `ms`. */
export function formatTime(ms: number, withMs = true): string {
  const iso = new Date(ms).toISOString();
  return `${iso.slice(0, 10)} ${iso.slice(11, withMs ? 23 : 19)}`;
}

/**
 * How long ago `ms` was, in words.
 *
 * @example
 * ```ts
 * formatAgo(now - 90_000, now); // "1 min ago"
 * ```
 */
export function formatAgo(ms: number, now: number): string {
  const s = Math.max(0, Math.round((now - ms) / 1000));
  if (s < 60) return `${s} s ago`;
  if (s < 3600) return `${Math.floor(s / 60)} min ago`;
  if (s < 172_800) return `${Math.floor(s / 3600)} h ago`;
  return `${Math.floor(s / 86_400)} days ago`;
}

/** A duration in words: `15 min`, `24 h`, `7 d`. */
export function formatDuration(ms: number): string {
  if (ms < 60_000) return `${Math.round(ms / 1000)} s`;
  if (ms < 3_600_000) return `${Math.round(ms / 60_000)} min`;
  if (ms < 86_400_000) return `${Math.round(ms / 3_600_000)} h`;
  return `${Math.round(ms / 86_400_000)} d`;
}

/** CSS class of a level: its own for the standard four, `custom` else. */
export function levelClass(level: string): string {
  return (STANDARD_LEVELS as readonly string[]).includes(level)
    ? `lvl-${level}`
    : "lvl-custom";
}

/**
 * Where an entry came from, for the list's source column: its
 * `context.service`, else its device's `host`, else its origin or app id
 * (`""` when it has none of them); and how it was authorized, as a tag.
 *
 * @example
 * ```ts
 * whereFrom(record); // { where: "checkout-api", auth: "signed" }
 * ```
 */
export function whereFrom(record: LogRecord): { where: string; auth: string } {
  const service = record.context?.service;
  const host = typeof record.device === "object" && record.device !== null
    ? record.device.host
    : undefined;
  const where = typeof service === "string" && service !== ""
    ? service
    : typeof host === "string" && host !== ""
    ? host
    : record.origin ?? record.appid ?? "";
  const auth = record.auth === "signature" ? "signed" : record.auth;
  return {
    where: where.length > 120 ? `${where.slice(0, 119)}…` : where,
    auth,
  };
}

/**
 * An entry's one-line summary: `data.title` and `data.message` when they
 * are text, else its first string field, else its data as compact JSON; at
 * most 300 characters.
 */
export function summary(record: LogRecord): string {
  const { title, message } = record.data;
  const parts = [title, message].filter((v): v is string =>
    typeof v === "string" && v !== ""
  );
  const text = parts.length > 0
    ? parts.join(" — ")
    : entryTitle(record.data) || JSON.stringify(record.data);
  return text.length > 300 ? `${text.slice(0, 299)}…` : text;
}

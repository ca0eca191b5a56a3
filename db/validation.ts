/**
 * What an operator may set on a project: allow-list values (browser origins
 * and app ids) and custom level names, checked when they are set
 * (docs/design.md#allow-list-values, docs/design.md#custom-levels).
 *
 * @module
 */
import { isStandardLevel, LEVEL_PATTERN } from "../domain/entry.ts";

/**
 * Longest text that may name a stored record: ids are at most 28
 * characters and emails 254. A longer one names none, and is never made a
 * database key (whose size is limited): the record functions answer "not
 * found" for it.
 */
export const MAX_RECORD_NAME = 254;

/**
 * The stored entry at `key` of the record a caller names by `id`, `null`
 * when there is none; an id past {@linkcode MAX_RECORD_NAME} names none, and
 * its key is not read.
 *
 * @example
 * ```ts
 * const found = await findRecord(kv, viewId, savedViewKey(projectId, viewId));
 * ```
 */
export async function findRecord(
  kv: Deno.Kv,
  id: string,
  key: Deno.KvKey,
): Promise<Deno.KvEntry<unknown> | null> {
  if (id.length > MAX_RECORD_NAME) return null;
  const found = await kv.get(key);
  return found.versionstamp === null ? null : found;
}

/** Thrown when an operator's value is refused (allow-list entry, level, ...). */
export class InvalidValueError extends Error {
  override name = "InvalidValueError";
}

const SCHEME_HOST_PORT =
  /^[a-z][a-z0-9+.-]*:\/\/(?:[a-z0-9-]+(?:\.[a-z0-9-]+)*|\[[0-9a-f:.]+\])(?::\d{1,5})?$/;
const APP_ID = /^[A-Za-z][A-Za-z0-9_-]*(?:\.[A-Za-z0-9_-]+)+$/;

/**
 * What a browser sends in `Origin` for `value`, `null` when it is no URL:
 * the pattern above lets through a port above 65535, an IPv4 address with
 * a number above 255 or a malformed IPv6 address, which `new URL` refuses.
 */
function originOf(value: string): string | null {
  try {
    return new URL(value).origin;
  } catch {
    return null;
  }
}

/**
 * Checks one allow-list value: a browser origin `scheme://host[:port]` or a
 * reverse-domain app id. Returns it unchanged or throws {@linkcode InvalidValueError}.
 *
 * @example
 * ```ts
 * validateAllowValue("https://app.example.com"); // ok
 * validateAllowValue("com.example.app.ios"); // ok
 * validateAllowValue("*"); // throws: no wildcards
 * validateAllowValue("http://a:99999"); // throws: no valid origin
 * ```
 */
export function validateAllowValue(value: string): string {
  if (value === "*" || value.includes("*")) {
    throw new InvalidValueError(
      `Cannot allow "${value}": wildcards are not supported, list each origin`,
    );
  }
  if (value === "null") {
    throw new InvalidValueError(
      `Cannot allow "null": an opaque origin identifies no client`,
    );
  }
  if (value.length > 256) {
    throw new InvalidValueError(`Cannot allow a value over 256 characters`);
  }
  if (value.includes("://")) {
    if (!SCHEME_HOST_PORT.test(value)) {
      throw new InvalidValueError(
        `Cannot allow "${value}": expected an origin "scheme://host[:port]" in lower case, with no path and no trailing slash`,
      );
    }
    if (/^https?:/.test(value)) {
      const origin = originOf(value);
      if (origin === null) {
        throw new InvalidValueError(
          `Cannot allow "${value}": it is no valid origin`,
        );
      }
      if (origin !== value) {
        throw new InvalidValueError(
          `Cannot allow "${value}": browsers send it as "${origin}"`,
        );
      }
    }
    return value;
  }
  if (!APP_ID.test(value)) {
    throw new InvalidValueError(
      `Cannot allow "${value}": expected an origin "scheme://host[:port]" or an app id in reverse domain notation such as "com.example.app.ios"`,
    );
  }
  return value;
}

/** Checks a custom level name; returns it or throws {@linkcode InvalidValueError}. */
export function validateLevel(level: string): string {
  if (!LEVEL_PATTERN.test(level)) {
    throw new InvalidValueError(
      `Cannot use level "${level}": expected a lower-case name matching ${LEVEL_PATTERN.source}`,
    );
  }
  if (isStandardLevel(level)) {
    throw new InvalidValueError(
      `Cannot add level "${level}": it is a standard level`,
    );
  }
  return level;
}

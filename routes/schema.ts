/**
 * The shape of a submitted log entry (docs/design.md#synchronous-checks),
 * checked by hand in one pass: each member's check and its message, in the
 * order the members are listed. Unknown top-level members are dropped.
 *
 * @module
 */
import { type EntryBody, LEVEL_PATTERN } from "../domain/entry.ts";
import type { Issue } from "./errors.ts";

const LEVEL_MESSAGE =
  `"level" must be one of info, warning, error, critical, or a custom level matching ${LEVEL_PATTERN.source}`;

/** A JSON object (not an array, not `null`). */
function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** The message of a required member that is absent or of the wrong type. */
function wrongType(name: string, value: unknown, type: string): string {
  return value === undefined
    ? `"${name}" is required`
    : `"${name}" must be ${type}`;
}

/**
 * The entry of a parsed JSON object, or the issues that refuse it, one per
 * failing member. Members are the body's own objects, not copies.
 *
 * @example
 * ```ts
 * const checked = validateEntry(body);
 * if (Array.isArray(checked)) throw invalidBody(checked);
 * ```
 */
export function validateEntry(
  body: Record<string, unknown>,
): EntryBody | Issue[] {
  const { level, projectId, data, device, context, appid } = body;
  const issues: Issue[] = [];
  const refuse = (path: string, message: string) =>
    issues.push({ path, message });
  if (typeof level !== "string") {
    refuse("level", wrongType("level", level, "a string"));
  } else if (!LEVEL_PATTERN.test(level)) refuse("level", LEVEL_MESSAGE);
  if (typeof projectId !== "string") {
    refuse("projectId", wrongType("projectId", projectId, "a string"));
  } else if (projectId.length < 1) {
    refuse("projectId", `"projectId" must not be empty`);
  } else if (projectId.length > 128) {
    refuse("projectId", `"projectId" must be at most 128 characters`);
  }
  if (!isObject(data)) refuse("data", wrongType("data", data, "an object"));
  if (device !== undefined && typeof device !== "string" && !isObject(device)) {
    refuse("device", `"device" must be an object or a string`);
  }
  if (context !== undefined && !isObject(context)) {
    refuse("context", `"context" must be an object`);
  }
  if (appid !== undefined && appid !== null) {
    if (typeof appid !== "string") refuse("appid", `"appid" must be a string`);
    else if (appid.length > 256) {
      refuse("appid", `"appid" must be at most 256 characters`);
    }
  }
  if (issues.length > 0) return issues;
  const entry: EntryBody = {
    level: level as string,
    projectId: projectId as string,
    data: data as Record<string, unknown>,
  };
  if (device !== undefined) entry.device = device as EntryBody["device"];
  if (context !== undefined) entry.context = context as EntryBody["context"];
  if (appid !== undefined) entry.appid = appid as EntryBody["appid"];
  return entry;
}

/**
 * The zod schema of a submitted log entry (docs/design.md#synchronous-checks).
 * Unknown top-level members are dropped by `z.object`.
 *
 * @module
 */
import { z } from "zod";
import { LEVEL_PATTERN } from "../domain/entry.ts";
import type { Issue } from "./errors.ts";

const object = (name: string) =>
  z.looseObject({}, {
    error: (issue) =>
      issue.input === undefined
        ? `"${name}" is required`
        : `"${name}" must be an object`,
  });

/** Schema of the request body of `POST /api/v1/logs`. */
export const entrySchema = z.object({
  level: z.string({
    error: (issue) =>
      issue.input === undefined
        ? `"level" is required`
        : `"level" must be a string`,
  }).regex(LEVEL_PATTERN, {
    error:
      `"level" must be one of info, warning, error, critical, or a custom level matching ${LEVEL_PATTERN.source}`,
  }),
  projectId: z.string({
    error: (issue) =>
      issue.input === undefined
        ? `"projectId" is required`
        : `"projectId" must be a string`,
  }).min(1, { error: `"projectId" must not be empty` })
    .max(128, { error: `"projectId" must be at most 128 characters` }),
  data: object("data"),
  device: z.union([z.looseObject({}), z.string()], {
    error: `"device" must be an object or a string`,
  }).optional(),
  context: object("context").optional(),
  appid: z.string({ error: `"appid" must be a string` })
    .max(256, { error: `"appid" must be at most 256 characters` })
    .nullable().optional(),
});

/** Turns zod issues into the `issues` of the error body. */
export function toIssues(error: z.ZodError): Issue[] {
  return error.issues.map((issue) => ({
    path: issue.path.map(String).join(".") || "(body)",
    message: issue.message,
  }));
}

/** A body the schema accepts, as it returns it. */
export type Entry = z.infer<typeof entrySchema>;

/** A JSON object that zod's object schemas take as it is. */
function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null &&
    !Array.isArray(value) && !Object.hasOwn(value, "__proto__");
}

/**
 * What {@linkcode entrySchema} makes of a parsed JSON object, without zod's
 * work, for a body whose every member is plainly valid; `undefined` when
 * zod must decide (a refusal, with its messages; or a member named
 * `__proto__`, which zod's copy drops). Members are the body's own objects,
 * not copies.
 *
 * @example
 * ```ts
 * const entry = parseEntry(body) ?? entrySchema.parse(body);
 * ```
 */
export function parseEntry(body: Record<string, unknown>): Entry | undefined {
  const { level, projectId, data, device, context, appid } = body;
  if (
    typeof level !== "string" || !LEVEL_PATTERN.test(level) ||
    typeof projectId !== "string" || projectId.length < 1 ||
    projectId.length > 128 || !isPlainObject(data) ||
    (device !== undefined && typeof device !== "string" &&
      !isPlainObject(device)) ||
    (context !== undefined && !isPlainObject(context)) ||
    (appid !== undefined && appid !== null &&
      (typeof appid !== "string" || appid.length > 256))
  ) return undefined;
  const entry: Entry = { level, projectId, data };
  if (device !== undefined) entry.device = device;
  if (context !== undefined) entry.context = context;
  if (appid !== undefined) entry.appid = appid;
  return entry;
}

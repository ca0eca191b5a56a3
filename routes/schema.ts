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

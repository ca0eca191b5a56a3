/**
 * How `deno task project` prints a project: as JSON (the secret only when
 * asked) or as an aligned table for people.
 *
 * @module
 */
import type { Project } from "../db/projects.ts";
import { STANDARD_LEVELS } from "../domain/entry.ts";
import { type CommandContext, type Parsed, useColor } from "./command.ts";
import { printResult } from "./output.ts";
import { formatLevel, formatTable, formatTime, inert } from "./format.ts";

/** The JSON form of a project; the secret only when asked. */
export function projectJson(
  project: Project,
  options: { secret?: boolean; now?: number } = {},
): Record<string, unknown> {
  const expires = project.previousSecretExpiresAt;
  return {
    projectId: project.id,
    name: project.name,
    ...(options.secret ? { secret: project.secret } : {}),
    settings: { allowedOrigin: project.settings.allowedOrigin },
    levels: project.levels,
    retentionDays: project.retentionDays,
    createdAt: new Date(project.createdAt).toISOString(),
    ...(expires !== undefined && expires > (options.now ?? 0)
      ? { previousSecretExpiresAt: new Date(expires).toISOString() }
      : {}),
  };
}

/** A project as a table for people; the secret only when asked. */
export function describeProject(
  ctx: CommandContext,
  project: Project,
  secret: boolean,
): string {
  const color = useColor(ctx);
  const allowed = project.settings.allowedOrigin;
  const rows: string[][] = [
    ["Name", inert(project.name)],
    ["ID", project.id],
  ];
  if (secret) rows.push(["Secret", project.secret]);
  allowed.forEach((value, i) => rows.push([i === 0 ? "Allowed" : "", value]));
  if (allowed.length === 0) {
    rows.push(["Allowed", "(none: only signed entries are accepted)"]);
  }
  rows.push([
    "Levels",
    [...STANDARD_LEVELS, ...project.levels].map((l) => formatLevel(l, color))
      .join(", "),
  ]);
  rows.push(["Retention", `${project.retentionDays} days`]);
  rows.push(["Created", formatTime(project.createdAt)]);
  const expires = project.previousSecretExpiresAt;
  if (expires !== undefined && expires > ctx.now()) {
    rows.push(["Old secret", `verifies until ${formatTime(expires)}`]);
  }
  return formatTable(rows);
}

/**
 * Prints a project as JSON with `--json`, else `headline` and a table;
 * returns the exit code, 0.
 */
export function printProject(
  ctx: CommandContext,
  parsed: Parsed,
  project: Project,
  headline: string,
): number {
  return printResult(ctx, parsed, {
    json: projectJson(project, { now: ctx.now() }),
    text: [headline, "", describeProject(ctx, project, false)],
  });
}

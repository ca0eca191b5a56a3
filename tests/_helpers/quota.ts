/**
 * The quota suites' fixture: a project under a quota with entries queued.
 *
 * @module
 */
import type { Project } from "../../db/projects.ts";
import { type Quota, setQuota } from "../../db/quota.ts";
import { type Harness, ORIGIN, postEntries } from "./harness.ts";

/**
 * A new project under `quota`, sent `count` entries from {@linkcode ORIGIN}
 * (queued, not yet processed).
 *
 * @example
 * ```ts
 * const project = await projectUnderQuota(h, { perDay: 5 }, 8);
 * await h.process();
 * ```
 */
export async function projectUnderQuota(
  h: Harness,
  quota: Quota,
  count: number,
): Promise<Project> {
  const project = await h.project();
  await setQuota(h.kv, project.id, quota);
  await postEntries(h, project.id, { origin: ORIGIN, count });
  return project;
}

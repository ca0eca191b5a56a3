/**
 * Project records: creation with a random id and secret, the allow-list of
 * origins and app ids, custom levels, retention, secret rotation with a grace
 * period, and deletion with everything stored under the project.
 *
 * Every change is a compare-and-swap on the record's versionstamp, so two
 * operators editing at once never lose each other's change.
 *
 * @module
 */
import {
  projectKey,
  projectsPrefix,
  rejectionsPrefix,
  seenSignaturesPrefix,
  statsPrefix,
} from "./keys.ts";
import {
  countStoredEntries,
  storedLogKeys,
  storedLogPrefixes,
} from "./query/storage.ts";

/** The four levels of the spec, in increasing severity. */
export const STANDARD_LEVELS = [
  "info",
  "warning",
  "error",
  "critical",
] as const;

/** Shape of a custom level name (CONTRACT §2). */
export const LEVEL_PATTERN = /^[a-z][a-z0-9_-]{0,31}$/;

/** Retention of a new project, in days. */
export const DEFAULT_RETENTION_DAYS = 30;

/** A project as stored in KV. */
export interface Project {
  id: string;
  name: string;
  /** HMAC key of server clients. Never logged, never returned but by create and rotate. */
  secret: string;
  /** The secret before the last rotation, valid until `previousSecretExpiresAt`. */
  previousSecret?: string;
  previousSecretExpiresAt?: number;
  settings: { allowedOrigin: string[] };
  /** Custom levels accepted beside the four standard ones. */
  levels: string[];
  retentionDays: number;
  /** Creation time, Unix milliseconds. */
  createdAt: number;
}

/** Thrown when a project id names no project. */
export class ProjectNotFoundError extends Error {
  override name = "ProjectNotFoundError";
  constructor(projectId: string) {
    super(`Cannot find project "${projectId}"`);
  }
}

/** Thrown when an operator's value is refused (allow-list entry, level, ...). */
export class InvalidValueError extends Error {
  override name = "InvalidValueError";
}

function randomToken(bytes: number): string {
  const raw = crypto.getRandomValues(new Uint8Array(bytes));
  return btoa(String.fromCharCode(...raw))
    .replaceAll("+", "-").replaceAll("/", "_").replace(/=+$/, "");
}

const SCHEME_HOST_PORT =
  /^[a-z][a-z0-9+.-]*:\/\/(?:[a-z0-9-]+(?:\.[a-z0-9-]+)*|\[[0-9a-f:.]+\])(?::\d{1,5})?$/;
const APP_ID = /^[A-Za-z][A-Za-z0-9_-]*(?:\.[A-Za-z0-9_-]+)+$/;

/**
 * Checks one allow-list value: a browser origin `scheme://host[:port]` or a
 * reverse-domain app id. Returns it unchanged or throws {@linkcode InvalidValueError}.
 *
 * @example
 * ```ts
 * validateAllowValue("https://app.example.com"); // ok
 * validateAllowValue("com.example.app.ios"); // ok
 * validateAllowValue("*"); // throws: no wildcards
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
      const origin = new URL(value).origin;
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
  if ((STANDARD_LEVELS as readonly string[]).includes(level)) {
    throw new InvalidValueError(
      `Cannot add level "${level}": it is a standard level`,
    );
  }
  return level;
}

/** Options of {@linkcode createProject}. */
export interface CreateProjectOptions {
  name: string;
  /** Initial allow-list entries. @default {[]} */
  allow?: string[];
  /** Clock. @default {Date.now} */
  now?: () => number;
}

/**
 * Creates a project with a random 128-bit id and a 256-bit secret.
 *
 * @example
 * ```ts
 * const project = await createProject(kv, { name: "web", allow: ["https://example.com"] });
 * ```
 */
export async function createProject(
  kv: Deno.Kv,
  options: CreateProjectOptions,
): Promise<Project> {
  const name = options.name.trim();
  if (name === "" || name.length > 200) {
    throw new InvalidValueError(
      `Cannot name a project "${options.name}": expected 1 to 200 characters`,
    );
  }
  const allowed = [...new Set((options.allow ?? []).map(validateAllowValue))];
  for (;;) {
    const id = randomToken(16);
    // An id starting with "-" would read as an option on a command line.
    if (!/^[A-Za-z0-9]/.test(id)) continue;
    const project: Project = {
      id,
      name,
      secret: randomToken(32),
      settings: { allowedOrigin: allowed },
      levels: [],
      retentionDays: DEFAULT_RETENTION_DAYS,
      createdAt: (options.now ?? Date.now)(),
    };
    const result = await kv.atomic()
      .check({ key: projectKey(project.id), versionstamp: null })
      .set(projectKey(project.id), project)
      .commit();
    if (result.ok) return project;
  }
}

/** Reads a project, or `null` when there is none with that id. */
export async function getProject(
  kv: Deno.Kv,
  projectId: string,
): Promise<Project | null> {
  if (projectId === "") return null;
  return (await kv.get<Project>(projectKey(projectId))).value;
}

/** Lists every project, ordered by id. */
export async function listProjects(kv: Deno.Kv): Promise<Project[]> {
  const projects: Project[] = [];
  for await (const entry of kv.list<Project>({ prefix: projectsPrefix() })) {
    projects.push(entry.value);
  }
  return projects;
}

/**
 * Applies `change` to a project with a compare-and-swap, retrying when another
 * writer got there first. Returns the record as written.
 */
export async function updateProject(
  kv: Deno.Kv,
  projectId: string,
  change: (project: Project) => Project,
): Promise<Project> {
  for (;;) {
    const entry = await kv.get<Project>(projectKey(projectId));
    if (entry.value === null) throw new ProjectNotFoundError(projectId);
    const next = change(structuredClone(entry.value));
    const result = await kv.atomic()
      .check(entry)
      .set(projectKey(projectId), next)
      .commit();
    if (result.ok) return next;
  }
}

/** Adds an origin or app id to a project's allow-list (validated first). */
export function allowValue(
  kv: Deno.Kv,
  projectId: string,
  value: string,
): Promise<Project> {
  validateAllowValue(value);
  return updateProject(kv, projectId, (project) => {
    if (!project.settings.allowedOrigin.includes(value)) {
      project.settings.allowedOrigin.push(value);
    }
    return project;
  });
}

/** Removes an origin or app id from a project's allow-list. */
export function disallowValue(
  kv: Deno.Kv,
  projectId: string,
  value: string,
): Promise<Project> {
  return updateProject(kv, projectId, (project) => {
    const list = project.settings.allowedOrigin;
    if (!list.includes(value)) {
      throw new InvalidValueError(
        `Cannot disallow "${value}": it is not in the allow-list`,
      );
    }
    project.settings.allowedOrigin = list.filter((v) => v !== value);
    return project;
  });
}

/** Adds a custom level to a project. */
export function addLevel(
  kv: Deno.Kv,
  projectId: string,
  level: string,
): Promise<Project> {
  validateLevel(level);
  return updateProject(kv, projectId, (project) => {
    if (!project.levels.includes(level)) project.levels.push(level);
    return project;
  });
}

/** Removes a custom level from a project. */
export function removeLevel(
  kv: Deno.Kv,
  projectId: string,
  level: string,
): Promise<Project> {
  return updateProject(kv, projectId, (project) => {
    if (!project.levels.includes(level)) {
      throw new InvalidValueError(
        `Cannot remove level "${level}": the project does not declare it`,
      );
    }
    project.levels = project.levels.filter((l) => l !== level);
    return project;
  });
}

/** Sets how many days stored entries are kept (applies to entries stored from now on). */
export function setRetention(
  kv: Deno.Kv,
  projectId: string,
  days: number,
): Promise<Project> {
  if (!Number.isInteger(days) || days < 1 || days > 3650) {
    throw new InvalidValueError(
      `Cannot keep entries for "${days}" days: expected a whole number from 1 to 3650`,
    );
  }
  return updateProject(kv, projectId, (project) => {
    project.retentionDays = days;
    return project;
  });
}

/** Options of {@linkcode rotateSecret}. */
export interface RotateSecretOptions {
  /** How long the previous secret still verifies. @default {86400000} (24 h) */
  graceMs?: number;
  /** Clock. @default {Date.now} */
  now?: () => number;
}

/**
 * Replaces a project's secret; the previous one keeps verifying for the grace
 * period so that servers can be redeployed with the new one.
 */
export function rotateSecret(
  kv: Deno.Kv,
  projectId: string,
  options: RotateSecretOptions = {},
): Promise<Project> {
  const graceMs = options.graceMs ?? 86_400_000;
  if (!Number.isFinite(graceMs) || graceMs < 0) {
    throw new InvalidValueError(`Cannot use a grace period of "${graceMs}" ms`);
  }
  const now = (options.now ?? Date.now)();
  return updateProject(kv, projectId, (project) => {
    if (graceMs > 0) {
      project.previousSecret = project.secret;
      project.previousSecretExpiresAt = now + graceMs;
    } else {
      delete project.previousSecret;
      delete project.previousSecretExpiresAt;
    }
    project.secret = randomToken(32);
    return project;
  });
}

/**
 * Deletes a project and everything stored under it: entries (pages, chunks,
 * their summaries and counters), counters, recent rejections and remembered
 * signatures. Returns how many entries were
 * deleted.
 */
export async function deleteProject(
  kv: Deno.Kv,
  projectId: string,
): Promise<number> {
  const entry = await kv.get<Project>(projectKey(projectId));
  if (entry.value === null) throw new ProjectNotFoundError(projectId);
  // The record goes first: the consumer stops storing for this id at once
  // (within its cache time), then the data under it is removed.
  await kv.delete(projectKey(projectId));
  const logs = await countStoredEntries(kv, projectId);
  for (
    const prefix of [
      ...storedLogPrefixes(projectId),
      statsPrefix(projectId),
      rejectionsPrefix(projectId),
      seenSignaturesPrefix(projectId),
    ]
  ) {
    await deletePrefix(kv, prefix);
  }
  for (const key of storedLogKeys(projectId)) await kv.delete(key);
  return logs;
}

/** Deletes every key under `prefix`, 500 per atomic operation. */
export async function deletePrefix(
  kv: Deno.Kv,
  prefix: Deno.KvKey,
): Promise<number> {
  let deleted = 0;
  for (;;) {
    const keys: Deno.KvKey[] = [];
    for await (const entry of kv.list({ prefix }, { limit: 500 })) {
      keys.push(entry.key);
    }
    if (keys.length === 0) return deleted;
    const op = kv.atomic();
    for (const key of keys) op.delete(key);
    await op.commit();
    deleted += keys.length;
  }
}

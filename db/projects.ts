/**
 * Project records: creation with a random id and secret, the allow-list of
 * origins and app ids, custom levels, retention, secret rotation with a grace
 * period. Deleting a project with everything under it is db/deletion.ts's.
 *
 * Every change is a compare-and-swap on the record's versionstamp, so two
 * operators editing at once never lose each other's change.
 *
 * @module
 */
import { DAY_MS } from "../domain/entry.ts";
import type { ScrubRule } from "../domain/scrub.ts";
import type { Quota, RetentionRule, SpikeProtection } from "../domain/quota.ts";
import { decodeJson, encodeJson, listJson } from "./kv.ts";
import {
  InvalidValueError,
  MAX_RECORD_NAME,
  validateAllowValue,
  validateLevel,
} from "./validation.ts";
import { projectKey, projectsPrefix } from "./keys.ts";

/** Shortest retention a project may set, in days. */
export const MIN_RETENTION_DAYS = 1;
/** Longest retention a project may set, in days (ten years). */
export const MAX_RETENTION_DAYS = 3650;
/**
 * Values an allow-list holds at most, and custom levels a project declares:
 * the project record, read by every batch, stays far under KV's 64 KiB.
 */
export const MAX_ALLOWED_VALUES = 100;
export const MAX_LEVELS = 50;
/** How long the previous secret verifies after a rotation, by default. */
export const DEFAULT_ROTATION_GRACE_MS = DAY_MS;
/** Random bytes of a project id (128 bits) and of a secret (256 bits). */
const ID_BYTES = 16;
const SECRET_BYTES = 32;
/** Keys deleted per atomic operation when a project is deleted. */
const DELETE_CHUNK = 500;

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
  /** Scrubbing rules beside the defaults (db/scrub.ts). @default absent: none */
  scrub?: { rules: ScrubRule[]; next: number };
  /**
   * Key of the project's keyed hashes (HMAC-SHA256), made when first needed
   * and never rotated, so one value hashes alike for the project's life.
   * A secret: never printed. @default absent
   */
  hashKey?: string;
  /** Entries stored per day and per minute at most (db/quota.ts). @default absent: none */
  quota?: Quota;
  /** Sampling of info and warning entries in a spike (db/quota.ts). @default absent: off */
  spike?: SpikeProtection;
  /** Retention by filter beside `retentionDays` (db/retention_rules.ts). @default absent: none */
  retentionRules?: RetentionRule[];
}

/**
 * Thrown when a project id (or name) names no project; the message shows
 * its first 100 characters, so that a long argument is not echoed whole.
 */
export class ProjectNotFoundError extends Error {
  override name = "ProjectNotFoundError";
  constructor(projectId: string) {
    super(`Cannot find project "${projectId.slice(0, 100)}"`);
  }
}

function randomToken(bytes: number): string {
  const raw = crypto.getRandomValues(new Uint8Array(bytes));
  return btoa(String.fromCharCode(...raw))
    .replaceAll("+", "-").replaceAll("/", "_").replace(/=+$/, "");
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
  if (allowed.length > MAX_ALLOWED_VALUES) {
    throw new InvalidValueError(
      `Cannot allow ${allowed.length} values: an allow-list holds at most ${MAX_ALLOWED_VALUES}`,
    );
  }
  for (;;) {
    const id = randomToken(ID_BYTES);
    // An id starting with "-" would read as an option on a command line.
    if (!/^[A-Za-z0-9]/.test(id)) continue;
    const project: Project = {
      id,
      name,
      secret: randomToken(SECRET_BYTES),
      settings: { allowedOrigin: allowed },
      levels: [],
      retentionDays: DEFAULT_RETENTION_DAYS,
      createdAt: (options.now ?? Date.now)(),
    };
    const result = await kv.atomic()
      .check({ key: projectKey(project.id), versionstamp: null })
      .set(projectKey(project.id), encodeJson(project))
      .commit();
    if (result.ok) return project;
  }
}

/**
 * Reads a project, or `null` when there is none with that id. An id that is
 * empty or past {@linkcode MAX_RECORD_NAME} names none (ids are 22
 * characters), and is never made a database key, whose size is limited.
 *
 * @example
 * ```ts
 * const project = await getProject(kv, projectId);
 * if (project === null) throw new ProjectNotFoundError(projectId);
 * ```
 */
export async function getProject(
  kv: Deno.Kv,
  projectId: string,
): Promise<Project | null> {
  if (projectId === "" || projectId.length > MAX_RECORD_NAME) return null;
  return decodeJson<Project>((await kv.get(projectKey(projectId))).value);
}

/** Lists every project, ordered by id. */
export async function listProjects(kv: Deno.Kv): Promise<Project[]> {
  return await listJson<Project>(kv, projectsPrefix());
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
    const entry = await kv.get(projectKey(projectId));
    const current = decodeJson<Project>(entry.value);
    if (current === null) throw new ProjectNotFoundError(projectId);
    const next = change(structuredClone(current));
    const result = await kv.atomic()
      .check(entry)
      .set(projectKey(projectId), encodeJson(next))
      .commit();
    if (result.ok) return next;
  }
}

/**
 * Commits `op`'s writes checked on the project's record, so that none lands
 * after the project's deletion ({@linkcode ProjectNotFoundError} when it is
 * gone). `build` adds them to a fresh operation each time: a record changed
 * meanwhile (a setting) is read again and the writes retried. `false` when
 * a check of `build`'s own failed.
 *
 * @example
 * ```ts
 * await commitUnderProject(kv, projectId, (op) => op.set(key, value));
 * ```
 */
export async function commitUnderProject(
  kv: Deno.Kv,
  projectId: string,
  build: (op: Deno.AtomicOperation) => void,
): Promise<boolean> {
  for (;;) {
    const entry = await kv.get(projectKey(projectId));
    if (entry.versionstamp === null) throw new ProjectNotFoundError(projectId);
    const op = kv.atomic().check(entry);
    build(op);
    if ((await op.commit()).ok) return true;
    const now = await kv.get(projectKey(projectId));
    if (now.versionstamp === entry.versionstamp) return false;
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
    const list = project.settings.allowedOrigin;
    if (list.includes(value)) return project;
    if (list.length >= MAX_ALLOWED_VALUES) {
      throw new InvalidValueError(
        `Cannot allow "${value}": the allow-list holds at most ${MAX_ALLOWED_VALUES} values; remove one first`,
      );
    }
    list.push(value);
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
    if (project.levels.includes(level)) return project;
    if (project.levels.length >= MAX_LEVELS) {
      throw new InvalidValueError(
        `Cannot add level "${level}": a project declares at most ${MAX_LEVELS} custom levels; remove one first`,
      );
    }
    project.levels.push(level);
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

/**
 * Checks a number of days to keep entries, of the project or of a rule;
 * returns it or throws {@linkcode InvalidValueError}.
 *
 * @example
 * ```ts
 * validateRetentionDays(30); // 30
 * ```
 */
export function validateRetentionDays(days: number): number {
  if (
    !Number.isInteger(days) || days < MIN_RETENTION_DAYS ||
    days > MAX_RETENTION_DAYS
  ) {
    throw new InvalidValueError(
      `Cannot keep entries for "${days}" days: expected a whole number from ${MIN_RETENTION_DAYS} to ${MAX_RETENTION_DAYS}`,
    );
  }
  return days;
}

/**
 * Sets how many days entries are kept: the next merge round ends stored
 * entries past a shorter retention; a longer one applies to entries stored
 * from now on (KV's expiry of a stored chunk is not moved).
 */
export function setRetention(
  kv: Deno.Kv,
  projectId: string,
  days: number,
): Promise<Project> {
  validateRetentionDays(days);
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
  const graceMs = options.graceMs ?? DEFAULT_ROTATION_GRACE_MS;
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
    project.secret = randomToken(SECRET_BYTES);
    return project;
  });
}

/** Deletes every key under `prefix`, {@linkcode DELETE_CHUNK} per atomic operation. */
export async function deletePrefix(
  kv: Deno.Kv,
  prefix: Deno.KvKey,
): Promise<number> {
  let deleted = 0;
  for (;;) {
    const keys: Deno.KvKey[] = [];
    for await (const entry of kv.list({ prefix }, { limit: DELETE_CHUNK })) {
      keys.push(entry.key);
    }
    if (keys.length === 0) return deleted;
    deleted += await deleteKeys(kv, keys);
  }
}

/** Deletes `keys`, {@linkcode DELETE_CHUNK} per atomic operation; returns how many. */
async function deleteKeys(kv: Deno.Kv, keys: Deno.KvKey[]): Promise<number> {
  for (let at = 0; at < keys.length; at += DELETE_CHUNK) {
    const op = kv.atomic();
    for (const key of keys.slice(at, at + DELETE_CHUNK)) op.delete(key);
    await op.commit();
  }
  return keys.length;
}

/**
 * Dashboard accounts: an email, a role, the projects given to it, and the
 * scrypt hash of its password (db/passwords.ts). The built-in
 * account `admin` (signing in with `ADMIN_PASSWORD`) is not stored here; no
 * stored account may take its name.
 *
 * Each account carries a `stamp`, a random value copied into its sessions:
 * a new password draws a new stamp, so the sessions signed in with the old
 * one stop verifying; removing the account ends them the same way.
 *
 * @module
 */
import { decodeJson, encodeJson, listJson } from "./kv.ts";
import { projectKey, userKey } from "./keys.ts";
import { getProject, ProjectNotFoundError } from "./projects.ts";
import { InvalidValueError, MAX_RECORD_NAME } from "./validation.ts";
import { hashPassword, MAX_PASSWORD_LENGTH } from "./passwords.ts";

/** The roles, from the most to the least allowed. */
export const ROLES = ["admin", "member", "viewer"] as const;

/**
 * `admin`: everything, accounts included; `member`: reads and configures
 * the projects given to it; `viewer`: reads the projects given to it and
 * sees no secret.
 */
export type Role = typeof ROLES[number];

/** Email of the built-in account that signs in with `ADMIN_PASSWORD`. */
export const BUILTIN_ADMIN = "admin";

/**
 * Who the operator commands act as (they run with direct access to the
 * database): the actor of their audit events and the creator of their
 * tokens. No account can take the name (an email has an `@`).
 */
export const CLI_ACTOR = "cli";

/** Shortest password of an account. */
export const MIN_USER_PASSWORD_LENGTH = 8;
/** Longest password of an account (the hash's input stays small). */
export const MAX_USER_PASSWORD_LENGTH = MAX_PASSWORD_LENGTH;

/** An account as stored. */
export interface User {
  /** Lower case; the account's name. */
  email: string;
  role: Role;
  /** Project ids given to the account (all projects for `admin`). */
  projects: string[];
  /** `scrypt$N$r$p$<salt base64>$<hash base64>`. */
  passwordHash: string;
  /** Copied into every session; a new one ends them. */
  stamp: string;
  createdAt: number;
  updatedAt: number;
}

/** Who is signed in: a stored account or the built-in one, no hash. */
export interface Account {
  email: string;
  role: Role;
  projects: string[];
  stamp: string;
}

/** The built-in `admin` account. */
export const BUILTIN_ACCOUNT: Account = Object.freeze({
  email: BUILTIN_ADMIN,
  role: "admin",
  projects: [],
  stamp: "builtin",
}) as Account;

/** Thrown when an email names no account. */
export class UserNotFoundError extends Error {
  override name = "UserNotFoundError";
  constructor(email: string) {
    super(`Cannot find user "${email}"`);
  }
}

/** Thrown when adding an account whose email is taken. */
export class UserExistsError extends Error {
  override name = "UserExistsError";
  constructor(email: string) {
    super(`Cannot add user "${email}": a user with this email exists`);
  }
}

const EMAIL = /^[^\s@]+@[^\s@]+$/;

/**
 * The stored form of an email (trimmed, lower case), or an
 * {@linkcode InvalidValueError}.
 *
 * @example
 * ```ts
 * normalizeEmail(" Ana@Example.COM "); // "ana@example.com"
 * ```
 */
export function normalizeEmail(email: string): string {
  const value = email.trim().toLowerCase();
  if (value === BUILTIN_ADMIN) {
    throw new InvalidValueError(
      `Cannot use "${BUILTIN_ADMIN}" as an email: it is the built-in account of ADMIN_PASSWORD`,
    );
  }
  if (value.length > 254 || !EMAIL.test(value)) {
    throw new InvalidValueError(
      `Cannot use "${email}" as an email: expected name@domain, at most 254 characters`,
    );
  }
  return value;
}

/** Checks a role name. */
export function parseRole(role: string): Role {
  if (!(ROLES as readonly string[]).includes(role)) {
    throw new InvalidValueError(
      `Cannot use role "${role}": expected one of ${ROLES.join(", ")}`,
    );
  }
  return role as Role;
}

function checkPassword(password: string): void {
  if (
    password.length < MIN_USER_PASSWORD_LENGTH ||
    password.length > MAX_USER_PASSWORD_LENGTH
  ) {
    throw new InvalidValueError(
      `Cannot use this password: expected ${MIN_USER_PASSWORD_LENGTH} to ${MAX_USER_PASSWORD_LENGTH} characters`,
    );
  }
}

function newStamp(): string {
  return crypto.randomUUID();
}

/**
 * The distinct ids of `ids`, each a project's (else
 * {@linkcode ProjectNotFoundError}).
 */
async function checkProjects(kv: Deno.Kv, ids: string[]): Promise<string[]> {
  const unique = [...new Set(ids)];
  for (const id of unique) {
    if (await getProject(kv, id) === null) throw new ProjectNotFoundError(id);
  }
  return unique;
}

/**
 * After an account's commit, takes out of it those of `ids` whose project
 * was deleted meanwhile: the deletion's {@linkcode forgetProject} may have
 * read the accounts before the commit, and an account holds any number of
 * projects, more than one commit may check.
 */
async function forgetDeleted(
  kv: Deno.Kv,
  email: string,
  ids: string[],
): Promise<void> {
  const gone: string[] = [];
  for (const id of ids) {
    if ((await kv.get(projectKey(id))).versionstamp === null) gone.push(id);
  }
  if (gone.length === 0) return;
  await changeUser(kv, email, (user) => ({
    ...user,
    projects: user.projects.filter((id) => !gone.includes(id)),
  }));
}

/** Options of {@linkcode addUser}. */
export interface AddUserOptions {
  email: string;
  role: Role;
  password: string;
  /** Project ids given to a member or viewer. @default {[]} */
  projects?: string[];
  /** Clock. @default {Date.now} */
  now?: () => number;
}

/**
 * Adds an account; its projects must exist.
 *
 * @example
 * ```ts
 * await addUser(kv, { email: "ana@example.com", role: "viewer", projects: [id], password });
 * ```
 */
export async function addUser(
  kv: Deno.Kv,
  options: AddUserOptions,
): Promise<User> {
  const email = normalizeEmail(options.email);
  const role = parseRole(options.role);
  checkPassword(options.password);
  const projects = await checkProjects(kv, options.projects ?? []);
  const now = (options.now ?? Date.now)();
  const user: User = {
    email,
    role,
    projects,
    passwordHash: await hashPassword(options.password),
    stamp: newStamp(),
    createdAt: now,
    updatedAt: now,
  };
  const result = await kv.atomic()
    .check({ key: userKey(email), versionstamp: null })
    .set(userKey(email), encodeJson(user))
    .commit();
  if (!result.ok) throw new UserExistsError(email);
  await forgetDeleted(kv, email, projects);
  return user;
}

/** Reads an account, or `null`. */
export async function getUser(
  kv: Deno.Kv,
  email: string,
): Promise<User | null> {
  const key = email.trim().toLowerCase();
  if (key === "" || key === BUILTIN_ADMIN || key.length > MAX_RECORD_NAME) {
    return null;
  }
  return decodeJson<User>((await kv.get(userKey(key))).value);
}

/** Every stored account, by email. */
export async function listUsers(kv: Deno.Kv): Promise<User[]> {
  return await listJson<User>(kv, userKey());
}

/** Changes an account by compare-and-swap; returns it as stored. */
async function changeUser(
  kv: Deno.Kv,
  email: string,
  change: (user: User) => User | Promise<User>,
): Promise<User> {
  if (email.trim().length > MAX_RECORD_NAME) throw new UserNotFoundError(email);
  const key = userKey(email.trim().toLowerCase());
  for (;;) {
    const entry = await kv.get(key);
    const user = decodeJson<User>(entry.value);
    if (user === null) throw new UserNotFoundError(email);
    const next = await change(user);
    const result = await kv.atomic().check(entry).set(key, encodeJson(next))
      .commit();
    if (result.ok) return next;
  }
}

/** Options of {@linkcode updateUser}. */
export interface UpdateUserOptions {
  role?: Role;
  projects?: string[];
  now?: () => number;
}

/**
 * Sets an account's role or projects; it applies to its sessions on their
 * next request.
 */
export async function updateUser(
  kv: Deno.Kv,
  email: string,
  options: UpdateUserOptions,
): Promise<User> {
  const role = options.role === undefined ? undefined : parseRole(options.role);
  const projects = options.projects === undefined
    ? undefined
    : await checkProjects(kv, options.projects);
  const user = await changeUser(kv, email, (user) => ({
    ...user,
    ...(role === undefined ? {} : { role }),
    ...(projects === undefined ? {} : { projects }),
    updatedAt: (options.now ?? Date.now)(),
  }));
  if (projects === undefined) return user;
  await forgetDeleted(kv, email, projects);
  return (await getUser(kv, email)) ?? user;
}

/**
 * Takes a deleted project out of every account given it (the project's
 * deletion calls it after deleting the record; an account given projects
 * reads them again after its commit, so none keeps the project after).
 */
export async function forgetProject(
  kv: Deno.Kv,
  projectId: string,
): Promise<void> {
  for (const user of await listUsers(kv)) {
    if (!user.projects.includes(projectId)) continue;
    try {
      await changeUser(kv, user.email, (u) => ({
        ...u,
        projects: u.projects.filter((id) => id !== projectId),
      }));
    } catch (error) {
      if (!(error instanceof UserNotFoundError)) throw error;
    }
  }
}

/** Sets a new password; every session of the account ends. */
export async function setPassword(
  kv: Deno.Kv,
  email: string,
  password: string,
  now: () => number = Date.now,
): Promise<User> {
  checkPassword(password);
  const passwordHash = await hashPassword(password);
  return await changeUser(kv, email, (user) => ({
    ...user,
    passwordHash,
    stamp: newStamp(),
    updatedAt: now(),
  }));
}

/**
 * Removes an account; its sessions end at their next request. The
 * deletion is checked on the record read, so of removals at once one
 * returns and the others throw {@linkcode UserNotFoundError}.
 */
export async function removeUser(kv: Deno.Kv, email: string): Promise<User> {
  if (email.trim().length > MAX_RECORD_NAME) throw new UserNotFoundError(email);
  const key = userKey(email.trim().toLowerCase());
  for (;;) {
    const entry = await kv.get(key);
    const user = decodeJson<User>(entry.value);
    if (user === null) throw new UserNotFoundError(email);
    if ((await kv.atomic().check(entry).delete(key).commit()).ok) return user;
  }
}

/** The account a stored user signs in as (no hash). */
export function accountOf(user: User): Account {
  return {
    email: user.email,
    role: user.role,
    projects: user.projects,
    stamp: user.stamp,
  };
}

/** Whether `account` may read project `projectId`. */
export function canRead(account: Account, projectId: string): boolean {
  return account.role === "admin" || account.projects.includes(projectId);
}

/** Whether `account` may change project `projectId` (settings, tokens). */
export function canConfigure(account: Account, projectId: string): boolean {
  return account.role === "admin" ||
    (account.role === "member" && account.projects.includes(projectId));
}

/**
 * Read tokens: a script's key to one project's entries through the read API
 * (dashboard/routes/api.ts). A token is `lgr_` and 256 random bits; only its
 * SHA-256 is stored, under the project (with its name) and as a key that
 * finds it again, so the token itself is shown once, when created, and is
 * never stored or logged.
 *
 * A token made by an account acts with that account's right to configure
 * its project, checked at every use: it stops working the moment its
 * creator is removed, made a viewer or loses the project, and those changes
 * revoke it ({@linkcode revokeTokensOf}). One made by the operator
 * (`deno task token`) or the built-in `admin` belongs to the project.
 *
 * @module
 */
import { createHash, timingSafeEqual } from "node:crypto";
import { recordAudit } from "./audit.ts";
import { decodeJson, encodeJson, keepWithin, listJson } from "./kv.ts";
import {
  readTokenHashKey,
  readTokenKey,
  readTokenNameKey,
  readTokenNamesPrefix,
  readTokensPrefix,
} from "./keys.ts";
import {
  commitUnderProject,
  deletePrefix,
  getProject,
  listProjects,
  ProjectNotFoundError,
} from "./projects.ts";
import {
  type Account,
  accountOf,
  BUILTIN_ADMIN,
  canConfigure,
  CLI_ACTOR,
  getUser,
} from "./users.ts";
import { InvalidValueError } from "./validation.ts";

/** What every read token starts with (so that scanners recognise one). */
export const TOKEN_PREFIX = "lgr_";
/** Read tokens one project may have. */
export const MAX_TOKENS_PER_PROJECT = 100;
const TOKEN_SHAPE = /^lgr_[A-Za-z0-9_-]{43}$/;

/**
 * What a token allows: `read` a project's entries through the read API, or
 * `upload` its source maps (docs/errors.md#source-maps), never both, so a
 * CI pipeline's upload token reads nothing.
 */
export const TOKEN_SCOPES = ["read", "upload"] as const;

/** One of {@linkcode TOKEN_SCOPES}. */
export type TokenScope = typeof TOKEN_SCOPES[number];

/** A read token as stored (never the token). */
export interface ReadToken {
  id: string;
  projectId: string;
  name: string;
  /** What it allows; absent on tokens made before scopes: `read`. */
  scope?: TokenScope;
  /** SHA-256 of the token, hex. */
  hash: string;
  /**
   * Who created it: an account's email, whose right to configure the
   * project the token needs at every use, or `cli` or `admin`.
   */
  createdBy: string;
  createdAt: number;
}

/** Thrown when a name or id names no token of the project. */
export class TokenNotFoundError extends Error {
  override name = "TokenNotFoundError";
  constructor(projectId: string, nameOrId: string) {
    super(`Cannot find token "${nameOrId}" of project "${projectId}"`);
  }
}

function base64url(bytes: Uint8Array): string {
  return btoa(String.fromCharCode(...bytes))
    .replaceAll("+", "-").replaceAll("/", "_").replace(/=+$/, "");
}

/** SHA-256 of a token, hex: how it is stored and found. */
export function tokenHash(token: string): string {
  return createHash("sha256").update(token).digest("hex");
}

/** Options of {@linkcode createReadToken}. */
export interface CreateReadTokenOptions {
  projectId: string;
  /** Unique within the project: 1 to 64 characters. */
  name: string;
  /** Who creates it, for the list and the audit log. */
  createdBy: string;
  /** What it allows. @default "read" */
  scope?: TokenScope;
  now?: () => number;
}

/** The scope of a stored token. */
export function scopeOf(token: ReadToken): TokenScope {
  return token.scope ?? "read";
}

/**
 * Creates a read token of a project; returns the token (this is the only
 * time it exists outside the caller) and what is stored.
 *
 * @example
 * ```ts
 * const { token } = await createReadToken(kv, { projectId, name: "ci", createdBy: "cli" });
 * ```
 */
export async function createReadToken(
  kv: Deno.Kv,
  options: CreateReadTokenOptions,
): Promise<{ token: string; record: ReadToken }> {
  const name = options.name.trim();
  const control = [...name].some((ch) =>
    ch.charCodeAt(0) < 32 || ch.charCodeAt(0) === 127
  );
  if (name === "" || name.length > 64 || control) {
    throw new InvalidValueError(
      `Cannot name a token "${options.name}": expected 1 to 64 characters`,
    );
  }
  if (await getProject(kv, options.projectId) === null) {
    throw new ProjectNotFoundError(options.projectId);
  }
  if (options.scope !== undefined && !TOKEN_SCOPES.includes(options.scope)) {
    throw new InvalidValueError(
      `Cannot read scope "${
        String(options.scope).slice(0, 20)
      }": expected "read" or "upload"`,
    );
  }
  const taken = () =>
    new InvalidValueError(
      `Cannot create token "${name}": the project has a token of this name`,
    );
  const existing = await listReadTokens(kv, options.projectId);
  if (existing.some((t) => t.name === name)) throw taken();
  const full = () =>
    new InvalidValueError(
      `Cannot create token "${name}": the project has ${MAX_TOKENS_PER_PROJECT} tokens, revoke one first`,
    );
  if (existing.length >= MAX_TOKENS_PER_PROJECT) throw full();
  for (;;) {
    const token = TOKEN_PREFIX +
      base64url(crypto.getRandomValues(new Uint8Array(32)));
    const id = base64url(crypto.getRandomValues(new Uint8Array(6)));
    // An id starting with "-" would read as an option on a command line.
    if (!/^[A-Za-z0-9]/.test(id)) continue;
    const record: ReadToken = {
      id,
      projectId: options.projectId,
      name,
      hash: tokenHash(token),
      createdBy: options.createdBy,
      createdAt: (options.now ?? Date.now)(),
      ...(options.scope === "upload" ? { scope: "upload" as const } : {}),
    };
    if (!await commitToken(kv, record)) {
      // Another token took the name since the listing; else a drawn id or
      // hash was taken: draw again.
      const other = await kv.get(readTokenNameKey(record.projectId, name));
      if (other.versionstamp !== null) throw taken();
      continue;
    }
    await keepWithin(
      kv,
      readTokensPrefix(options.projectId),
      MAX_TOKENS_PER_PROJECT,
      keysOf(record),
      full,
    );
    return { token, record };
  }
}

/** The keys a token is stored under: its record, its hash's and its name's. */
function keysOf(token: ReadToken): [Deno.KvKey, Deno.KvKey, Deno.KvKey] {
  return [
    readTokenKey(token.projectId, token.id),
    readTokenHashKey(token.hash),
    readTokenNameKey(token.projectId, token.name),
  ];
}

/**
 * Writes a new token's keys in one commit checked on its project, its id,
 * its hash and its name, all unused; `false` when one was taken.
 */
async function commitToken(kv: Deno.Kv, record: ReadToken): Promise<boolean> {
  const [key, hashKey, nameKey] = keysOf(record);
  return await commitUnderProject(kv, record.projectId, (op) =>
    op
      .check({ key: hashKey, versionstamp: null })
      .check({ key, versionstamp: null })
      .check({ key: nameKey, versionstamp: null })
      .set(key, encodeJson(record))
      .set(
        hashKey,
        encodeJson({ projectId: record.projectId, id: record.id }),
      )
      .set(nameKey, encodeJson({ id: record.id })));
}

/** A project's read tokens, oldest first. */
export async function listReadTokens(
  kv: Deno.Kv,
  projectId: string,
): Promise<ReadToken[]> {
  const tokens = await listJson<ReadToken>(kv, readTokensPrefix(projectId));
  return tokens.sort((a, b) => a.createdAt - b.createdAt);
}

/**
 * Revokes a project's token named `nameOrId` (its name, or its id): it
 * stops working at once. Returns what was stored; of revocations at once,
 * one returns, the others throw {@linkcode TokenNotFoundError}.
 */
export async function revokeReadToken(
  kv: Deno.Kv,
  projectId: string,
  nameOrId: string,
): Promise<ReadToken> {
  const tokens = await listReadTokens(kv, projectId);
  const token = tokens.find((t) => t.id === nameOrId) ??
    tokens.find((t) => t.name === nameOrId.trim());
  if (token === undefined || !await deleteToken(kv, token)) {
    throw new TokenNotFoundError(projectId, nameOrId);
  }
  return token;
}

/**
 * Deletes a stored token's keys (its name's only while it names this
 * token), checked on its record: `false` when the record was gone, so
 * that of deletions at once one only says it deleted.
 */
async function deleteToken(kv: Deno.Kv, token: ReadToken): Promise<boolean> {
  const [key, hashKey, nameKey] = keysOf(token);
  for (;;) {
    const [entry, name] = await kv.getMany([key, nameKey]);
    if (entry.versionstamp === null) return false;
    const op = kv.atomic().check(entry, name).delete(key).delete(hashKey);
    if (decodeJson<{ id: string }>(name.value)?.id === token.id) {
      op.delete(nameKey);
    }
    if ((await op.commit()).ok) return true;
  }
}

/**
 * The stored token that `token` is, or `null` (malformed, unknown or
 * revoked). Found by its hash; the stored hash is compared again in
 * constant time.
 */
export async function findReadToken(
  kv: Deno.Kv,
  token: string,
): Promise<ReadToken | null> {
  if (!TOKEN_SHAPE.test(token)) return null;
  const hash = tokenHash(token);
  const ref = decodeJson<{ projectId: string; id: string }>(
    (await kv.get(readTokenHashKey(hash))).value,
  );
  if (ref === null) return null;
  const record = decodeJson<ReadToken>(
    (await kv.get(readTokenKey(ref.projectId, ref.id))).value,
  );
  if (record === null) return null;
  const same = timingSafeEqual(
    new TextEncoder().encode(record.hash.padEnd(64)).subarray(0, 64),
    new TextEncoder().encode(hash),
  );
  return same && await creatorMayUse(kv, record) ? record : null;
}

/**
 * Whether the creator of `token` may still configure its project: always
 * for the operator's and the built-in `admin`'s tokens; for an account's,
 * while it exists and is an admin or a member given the project.
 */
async function creatorMayUse(kv: Deno.Kv, token: ReadToken): Promise<boolean> {
  if (token.createdBy === CLI_ACTOR || token.createdBy === BUILTIN_ADMIN) {
    return true;
  }
  const user = await getUser(kv, token.createdBy);
  return user !== null && canConfigure(accountOf(user), token.projectId);
}

/** Options of {@linkcode revokeTokensOf}. */
export interface RevokeTokensOfOptions {
  /** Who changed the account, for the audit log. */
  actor: string;
  /** Clock. @default {Date.now} */
  now?: () => number;
}

/**
 * Revokes the tokens the account `before` created in the projects it may
 * no longer configure as `after` (`null`: removed), each written to its
 * project's audit log as `token.revoke`; returns them. The projects looked
 * at are those `before` was given (every project, for an admin); the check
 * at every use stops the others, made in a race with the change, all the
 * same.
 *
 * @example
 * ```ts
 * const revoked = await revokeTokensOf(kv, accountOf(before), null, { actor: "admin" });
 * ```
 */
export async function revokeTokensOf(
  kv: Deno.Kv,
  before: Account,
  after: Account | null,
  options: RevokeTokensOfOptions,
): Promise<ReadToken[]> {
  const projectIds = before.role === "admin"
    ? (await listProjects(kv)).map((p) => p.id)
    : before.projects;
  const revoked: ReadToken[] = [];
  for (const projectId of projectIds) {
    if (after !== null && canConfigure(after, projectId)) continue;
    for (const token of await listReadTokens(kv, projectId)) {
      if (token.createdBy !== before.email) continue;
      if (!await deleteToken(kv, token)) continue;
      await recordAudit(kv, {
        projectId,
        actor: options.actor,
        action: "token.revoke",
        detail: `${token.name} (${token.id}) of ${before.email}`,
        ...(options.now ? { now: options.now } : {}),
      });
      revoked.push(token);
    }
  }
  return revoked;
}

/** Deletes every read token of a project (when the project is deleted). */
export async function deleteReadTokens(
  kv: Deno.Kv,
  projectId: string,
): Promise<number> {
  const tokens = await listReadTokens(kv, projectId);
  for (const token of tokens) await deleteToken(kv, token);
  await deletePrefix(kv, readTokenNamesPrefix(projectId));
  return tokens.length;
}

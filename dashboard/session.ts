/**
 * Sessions of the dashboard's accounts: the built-in `admin` (signing in
 * with `ADMIN_PASSWORD`) and the stored ones (db/users.ts). A session is a
 * random id kept in KV with its account's email and stamp (so that signing
 * out, a new password or removing the account ends it on the server,
 * whoever still holds the cookie) and a cookie `<id>.<expiry>.<mac>` signed
 * with HMAC-SHA256 under a key derived from `ADMIN_PASSWORD` and a random
 * secret stored once per database: changing that password ends every
 * session, and a leaked database alone cannot forge one. Every check of a
 * session reads its account again, so a new role or project list applies to
 * the next request. Forms carry a CSRF token that is the same kind of MAC
 * over the session id. Every comparison of a secret runs in constant time.
 *
 * @module
 */
import { createHash, createHmac, timingSafeEqual } from "node:crypto";
import { dashboardSecretKey, dashboardSessionKey } from "../db/keys.ts";
import { decodeJson, encodeJson } from "../db/kv.ts";
import {
  type Account,
  accountOf,
  BUILTIN_ACCOUNT,
  BUILTIN_ADMIN,
  getUser,
} from "../db/users.ts";
import { verifyPassword } from "../db/passwords.ts";

/** How long a session lasts after signing in. */
export const SESSION_TTL_MS = 12 * 3_600_000;

/** A valid session, as read from its cookie. */
export interface Session {
  id: string;
  /** Unix milliseconds. */
  expiresAt: number;
  /** The token forms must carry. */
  csrf: string;
  /** Who is signed in, as stored now. */
  account: Account;
}

/** What KV keeps of a session. */
interface SessionRecord {
  expiresAt: number;
  /** Absent in sessions of the built-in account made before accounts. */
  email?: string;
  stamp?: string;
}

function base64url(bytes: Uint8Array): string {
  return btoa(String.fromCharCode(...bytes))
    .replaceAll("+", "-").replaceAll("/", "_").replace(/=+$/, "");
}

/**
 * A random URL-safe token of `bytes` random bytes.
 *
 * @example
 * ```ts
 * randomToken(16); // "q3T0u9lW4mX2fJ8cZp1aYg"
 * ```
 */
export function randomToken(bytes = 16): string {
  return base64url(crypto.getRandomValues(new Uint8Array(bytes)));
}

/**
 * Whether two strings are equal, in time that depends on neither (both are
 * hashed first, so not even their lengths leak).
 *
 * @example
 * ```ts
 * safeEqual(given, expected); // true or false
 * ```
 */
export function safeEqual(a: string, b: string): boolean {
  const ha = createHash("sha256").update(a).digest();
  const hb = createHash("sha256").update(b).digest();
  return timingSafeEqual(ha, hb);
}

/**
 * Whether signing in as `email` costs a password hash: every email but the
 * built-in account's (`admin`, or none), whose password is compared through
 * SHA-256 alone (the sign-in limit's ceiling counts only hashes).
 *
 * @example
 * ```ts
 * signInHashes("Admin"); // false
 * signInHashes("ana@example.com"); // true
 * ```
 */
export function signInHashes(email: string): boolean {
  const name = email.trim().toLowerCase();
  return name !== "" && name !== BUILTIN_ADMIN;
}

/** Reads the database's dashboard secret, creating it on first use. */
async function databaseSecret(kv: Deno.Kv): Promise<Uint8Array> {
  for (;;) {
    const entry = await kv.get<Uint8Array>(dashboardSecretKey());
    if (entry.value instanceof Uint8Array) return entry.value;
    const fresh = crypto.getRandomValues(new Uint8Array(32));
    // Two processes starting at once: the first write wins, the other reads it.
    const result = await kv.atomic()
      .check({ key: dashboardSecretKey(), versionstamp: null })
      .set(dashboardSecretKey(), fresh)
      .commit();
    if (result.ok) return fresh;
  }
}

/** Options of {@linkcode SessionStore}. */
export interface SessionStoreOptions {
  kv: Deno.Kv;
  password: string;
  /** Clock. @default {Date.now} */
  now?: () => number;
  /** Session lifetime. @default {SESSION_TTL_MS} */
  ttlMs?: number;
}

/** Creates, checks and ends sessions. */
export class SessionStore {
  #kv: Deno.Kv;
  #password: string;
  #now: () => number;
  #ttlMs: number;
  #key: Promise<Uint8Array> | undefined;

  constructor(options: SessionStoreOptions) {
    this.#kv = options.kv;
    this.#password = options.password;
    this.#now = options.now ?? Date.now;
    this.#ttlMs = options.ttlMs ?? SESSION_TTL_MS;
  }

  /** Lifetime of a new session, for the cookie's `Max-Age`. */
  get ttlMs(): number {
    return this.#ttlMs;
  }

  /**
   * The account that `email` and `password` sign in as, or `null`. The
   * email `admin` (or none) is the built-in account of `ADMIN_PASSWORD`;
   * any other is looked up and its scrypt hash checked, and an unknown
   * email costs the same hashing as a wrong password.
   */
  async signIn(email: string, password: string): Promise<Account | null> {
    if (!signInHashes(email)) {
      return safeEqual(password, this.#password) ? BUILTIN_ACCOUNT : null;
    }
    const user = await getUser(this.#kv, email.trim().toLowerCase());
    const ok = await verifyPassword(password, user?.passwordHash ?? null);
    return ok && user !== null ? accountOf(user) : null;
  }

  /** The account a stored session belongs to now, or `null` if it ended. */
  async #account(record: SessionRecord): Promise<Account | null> {
    const email = record.email ?? BUILTIN_ADMIN;
    if (email === BUILTIN_ADMIN) {
      return (record.stamp ?? BUILTIN_ACCOUNT.stamp) === BUILTIN_ACCOUNT.stamp
        ? BUILTIN_ACCOUNT
        : null;
    }
    const user = await getUser(this.#kv, email);
    if (user === null || record.stamp === undefined) return null;
    return safeEqual(record.stamp, user.stamp) ? accountOf(user) : null;
  }

  #signingKey(): Promise<Uint8Array> {
    this.#key ??= databaseSecret(this.#kv).then((secret) =>
      new Uint8Array(
        createHmac("sha256", secret).update("dashboard session\0")
          .update(this.#password).digest(),
      )
    ).catch((error) => {
      this.#key = undefined;
      throw error;
    });
    return this.#key;
  }

  async #mac(text: string): Promise<string> {
    const key = await this.#signingKey();
    return base64url(createHmac("sha256", key).update(text).digest());
  }

  /**
   * Starts a session of `account` (the built-in one by default); returns
   * the cookie value and the session.
   */
  async create(
    account: Account = BUILTIN_ACCOUNT,
  ): Promise<{ cookie: string; session: Session }> {
    const id = randomToken(16);
    const expiresAt = this.#now() + this.#ttlMs;
    const record: SessionRecord = {
      expiresAt,
      email: account.email,
      stamp: account.stamp,
    };
    await this.#kv.set(dashboardSessionKey(id), encodeJson(record), {
      expireIn: this.#ttlMs,
    });
    const body = `${id}.${expiresAt.toString(36)}`;
    return {
      cookie: `${body}.${await this.#mac(body)}`,
      session: { id, expiresAt, csrf: await this.#mac(`csrf.${id}`), account },
    };
  }

  /**
   * Checks a cookie value: its MAC, its expiry, that the session was not
   * ended, and that its account still exists with the same password.
   * Returns the session or `null`.
   */
  async verify(cookie: string | undefined): Promise<Session | null> {
    if (cookie === undefined) return null;
    const parts = cookie.split(".");
    if (parts.length !== 3) return null;
    const [id, expiry, mac] = parts as [string, string, string];
    if (!safeEqual(mac, await this.#mac(`${id}.${expiry}`))) return null;
    const expiresAt = parseInt(expiry, 36);
    if (!(expiresAt > this.#now())) return null;
    const stored = await this.#kv.get(dashboardSessionKey(id));
    const record = decodeJson<SessionRecord>(stored.value);
    if (record === null || record.expiresAt !== expiresAt) return null;
    const account = await this.#account(record);
    if (account === null) return null;
    return { id, expiresAt, csrf: await this.#mac(`csrf.${id}`), account };
  }

  /** Whether `token` is the CSRF token of `session` (constant time). */
  checkCsrf(session: Session, token: string | undefined): boolean {
    return token !== undefined && safeEqual(token, session.csrf);
  }

  /** Ends a session on the server: its cookie no longer signs in. */
  async revoke(sessionId: string): Promise<void> {
    await this.#kv.delete(dashboardSessionKey(sessionId));
  }
}

/**
 * Fixtures of the accounts tests: accounts stored with a known password,
 * and signing in as one of them the way a browser does (form token cookie,
 * then email and password).
 *
 * @module
 */
import { addUser, type Role } from "../../db/users.ts";
import type { DashApp } from "../../dashboard/routes/common.ts";
import {
  type Browser,
  browserOn,
  csrfOf,
  PEER,
  setCookies,
  submitLoginForm,
} from "./dashboard.ts";

/** The password of every test account. */
export const ACCOUNT_PASSWORD = "staple battery horse";

/** Stores an account with {@linkcode ACCOUNT_PASSWORD}. */
export async function addAccount(
  kv: Deno.Kv,
  email: string,
  role: Role,
  projects: string[] = [],
): Promise<void> {
  await addUser(kv, { email, role, projects, password: ACCOUNT_PASSWORD });
}

/** Submits the sign-in form with an email and a password. */
export function submitAs(
  app: DashApp,
  email: string,
  password: string,
  peer: typeof PEER = PEER,
  headers: Record<string, string> = {},
  base = "",
): Promise<Response> {
  return submitLoginForm(app, { email, password, next: `${base}/` }, {
    base,
    peer,
    headers,
  });
}

/**
 * Signs in as `email` to a dashboard under `base`; returns the session
 * cookie and the forms' token.
 */
export async function signInAs(
  app: DashApp,
  email: string,
  password = ACCOUNT_PASSWORD,
  base = "",
): Promise<Browser> {
  const res = await submitAs(app, email, password, PEER, {}, base);
  if (res.status !== 303) {
    throw new Error(
      `Expected 303 after signing in as ${email}, got ${res.status}`,
    );
  }
  const cookie = `dash_session=${setCookies(res)["dash_session"]}`;
  const home = await app.request(`${base}/`, { headers: { cookie } }, PEER);
  return browserOn(app, { cookie, csrf: csrfOf(await home.text()) });
}

/**
 * Stores an account with {@linkcode ACCOUNT_PASSWORD} and signs in as it.
 *
 * @example
 * ```ts
 * const viewer = await signInNew(h, "viewer@example.com", "viewer", [id]);
 * ```
 */
export async function signInNew(
  h: { kv: Deno.Kv; dash: DashApp },
  email: string,
  role: Role,
  projects: string[] = [],
): Promise<Browser> {
  await addAccount(h.kv, email, role, projects);
  return await signInAs(h.dash, email);
}

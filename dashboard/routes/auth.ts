/**
 * Signing in and out. `GET /login` shows the form with a fresh token (also
 * set as a short-lived cookie: the form must send both); `POST /login`
 * checks the token (without it the request takes no attempt), counts the
 * attempt against the client's address (an IPv6 /64), its network (an IPv4
 * /24, an IPv6 /48) and, when it will cost a password hash, all networks
 * together (shared out by turns), then checks the email and password
 * (`admin` or no email: the built-in account of `ADMIN_PASSWORD`; any
 * other: an account's scrypt hash), and sets the signed session cookie
 * (`HttpOnly`, `SameSite=Strict`, `Secure` over HTTPS, expiring with the
 * session); `POST /logout` ends the session on the server and clears it.
 *
 * @module
 */
import { deleteCookie, getCookie, setCookie } from "hono/cookie";
import { LoginPage } from "../pages/login.tsx";
import { clientAddress, isHttps } from "../security.ts";
import { randomToken, safeEqual, signInHashes } from "../session.ts";
import {
  type DashApp,
  type DashboardDeps,
  type DashContext,
  formField,
  message,
  pageContext,
  render,
} from "./common.ts";

/** Name of the session cookie. */
export const SESSION_COOKIE = "dash_session";
/** Name of the sign-in form's token cookie. */
export const LOGIN_COOKIE = "dash_login";

/** Where to go after signing in: a path under the base, else the projects. */
export function safeNext(base: string, next: string | undefined): string {
  const home = `${base}/`;
  if (
    next === undefined || !next.startsWith(home) ||
    next.startsWith(`${base}//`) ||
    next.includes("\\") || [...next].some((ch) => ch.charCodeAt(0) < 32) ||
    next.startsWith(`${base}/login`)
  ) {
    return home;
  }
  return next;
}

async function loginForm(
  c: DashContext,
  deps: DashboardDeps,
  next: string,
  status: 200 | 401 | 403 | 429,
  message?: { error?: string; info?: string; email?: string },
): Promise<Response> {
  // Reused while it lasts, so that two tabs (or a stray request for an
  // icon) showing the form do not invalidate each other.
  const existing = getCookie(c, LOGIN_COOKIE);
  const token = existing !== undefined && /^[\w-]{22}$/.test(existing)
    ? existing
    : randomToken(16);
  setCookie(c, LOGIN_COOKIE, token, {
    httpOnly: true,
    sameSite: "Strict",
    secure: isHttps(c.req.raw),
    path: `${deps.base}/login`,
    maxAge: 3600,
  });
  return await render(
    c,
    LoginPage({
      ctx: { ...pageContext(c, deps), csrf: null },
      data: { next, token, ...message },
    }),
    status,
  );
}

/** Adds the sign-in and sign-out routes. */
export function authRoutes(app: DashApp, deps: DashboardDeps): void {
  const { base, sessions, limiter } = deps;

  app.get(`/login`, async (c) => {
    const next = safeNext(base, c.req.query("next"));
    if (c.get("session")) return c.redirect(next, 303);
    const info = c.req.query("done") === "out"
      ? "You are signed out."
      : undefined;
    return await loginForm(c, deps, next, 200, info ? { info } : {});
  });

  app.post(`/login`, async (c) => {
    const next = safeNext(base, await formField(c, "next"));
    // The form's token first: a request without it could never sign in,
    // so it costs no hash and takes no attempt from anyone's bucket.
    const token = await formField(c, "_csrf");
    const expected = getCookie(c, LOGIN_COOKIE);
    if (expected === undefined || token === "" || !safeEqual(token, expected)) {
      return await loginForm(c, deps, next, 403, {
        error: "The form expired: enter the password again",
      });
    }
    const address = clientAddress(
      c.req.raw,
      c.env?.remoteAddr,
      deps.trustProxy,
    );
    // Only an attempt that will cost a hash spends the shared ceiling:
    // the built-in account's check is one SHA-256.
    const email = (await formField(c, "email")).slice(0, 254);
    const wait = limiter.take(address, { hashes: signInHashes(email) });
    if (wait > 0) {
      c.header("Retry-After", String(wait));
      return await loginForm(c, deps, next, 429, {
        error: `Too many attempts: try again in ${wait} s`,
      });
    }
    const account = await sessions.signIn(
      email,
      await formField(c, "password"),
    );
    if (account === null) {
      return await loginForm(c, deps, next, 401, {
        error: "Wrong email or password",
        email,
      });
    }
    const { cookie } = await sessions.create(account);
    deleteCookie(c, LOGIN_COOKIE, { path: `${base}/login` });
    setCookie(c, SESSION_COOKIE, cookie, {
      httpOnly: true,
      sameSite: "Strict",
      secure: isHttps(c.req.raw),
      path: `${base}/`,
      maxAge: Math.floor(sessions.ttlMs / 1000),
    });
    return c.redirect(next, 303);
  });

  app.post(`/logout`, async (c) => {
    const session = c.get("session");
    if (session) await sessions.revoke(session.id);
    deleteCookie(c, SESSION_COOKIE, {
      path: `${base}/`,
      secure: isHttps(c.req.raw),
    });
    return c.redirect(`${base}/login?done=out`, 303);
  });
}

/** The answer to a request that needs a session and has none. */
export async function signInFirst(
  c: DashContext,
  deps: DashboardDeps,
): Promise<Response> {
  const url = new URL(c.req.url);
  if (c.req.method === "GET" && !/\/(entries|tail)$/.test(url.pathname)) {
    const next = encodeURIComponent(url.pathname + url.search);
    return c.redirect(`${deps.base}/login?next=${next}`, 303);
  }
  c.status(401);
  return await message(
    c,
    deps,
    "Signed out",
    "Your session has ended: sign in again.",
    401,
  );
}

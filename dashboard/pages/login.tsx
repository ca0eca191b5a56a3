/**
 * The sign-in page: an email (or `admin`) and a password. A wrong password or too many
 * attempts are said plainly; the form carries its own CSRF token (the
 * double-submit of a cookie set with the page).
 *
 * @module
 */
import { link } from "./format.ts";
import { Layout, Notice, type PageContext } from "./layout.tsx";

/** Data of the sign-in page. */
export interface LoginData {
  /** Where to go after signing in (a path under the base). */
  next: string;
  /** The form's token. */
  token: string;
  error?: string;
  info?: string;
  /** The email of a refused attempt, shown again. */
  email?: string;
}

/** The sign-in page. */
export function LoginPage(props: { ctx: PageContext; data: LoginData }) {
  const { ctx, data } = props;
  return (
    <Layout ctx={ctx} title="Sign in" bodyClass="login">
      <section class="card narrow">
        <h1>Sign in</h1>
        {data.error && <Notice kind="error">{data.error}</Notice>}
        {data.info && <Notice kind="ok">{data.info}</Notice>}
        <form
          method="post"
          action={link(ctx.base, "/login")}
          class="stack"
          id="login-form"
        >
          <input type="hidden" name="_csrf" value={data.token} />
          <input type="hidden" name="next" value={data.next} />
          <label>
            Email
            <input
              type="text"
              name="email"
              id="email"
              value={data.email ?? ""}
              autofocus
              autocomplete="username"
              maxlength={254}
            />
          </label>
          <label>
            Password
            <input
              type="password"
              name="password"
              id="password"
              required
              autocomplete="current-password"
            />
          </label>
          <button type="submit" class="primary">Sign in</button>
        </form>
        <p class="hint">
          Your account's email, or <code>admin</code>{" "}
          with the server's ADMIN_PASSWORD.
        </p>
      </section>
    </Layout>
  );
}

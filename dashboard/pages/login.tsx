/**
 * The sign-in page: one password field. A wrong password or too many
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
            Password
            <input
              type="password"
              name="password"
              id="password"
              required
              autofocus
              autocomplete="current-password"
            />
          </label>
          <button type="submit" class="primary">Sign in</button>
        </form>
        <p class="hint">The password is the server's ADMIN_PASSWORD.</p>
      </section>
    </Layout>
  );
}

/**
 * The read tokens section of a project's settings: the tokens by name (never
 * the tokens themselves), a form that creates one — shown in full on the
 * answer to that form, this once — and a Revoke button each.
 *
 * @module
 */
import { formatTime, link } from "./format.ts";
import {
  Card,
  CopyableCode,
  Notice,
  type PageContext,
  PostForm,
} from "./layout.tsx";

/** A read token as listed. */
export interface TokenRow {
  id: string;
  name: string;
  createdAt: number;
  createdBy: string;
  /** `read` or `upload` (source maps). @default "read" */
  scope?: string;
}

/** Props of {@linkcode TokensSection}. */
export interface TokensSectionProps {
  ctx: PageContext;
  projectId: string;
  tokens: TokenRow[];
  /** A token just created, shown this once. */
  newToken?: { name: string; token: string };
  error?: { value: string; message: string };
}

/** The read tokens card. */
export function TokensSection(props: TokensSectionProps) {
  const { ctx, projectId } = props;
  const action = (path: string) =>
    link(ctx.base, `/projects/${projectId}/settings/${path}`);
  return (
    <Card id="tokens" titleId="tokens-title" title="Read tokens">
      <p class="hint">
        A read token lets a script read this project's entries through{" "}
        <code>GET {link(ctx.base, `/api/v1/projects/${projectId}/logs`)}</code>
        {" "}
        with{" "}
        <code>Authorization: Bearer TOKEN</code>. An upload token uploads source
        maps from CI to{" "}
        <code>
          POST {link(ctx.base, `/api/v1/projects/${projectId}/sourcemaps`)}
        </code>{" "}
        instead, and reads nothing.
      </p>
      {props.newToken && (
        <div class="created" id="new-token">
          <Notice kind="ok">
            Token “{props.newToken.name}” created. Copy it now: it is shown this
            once and stored only as a hash.
          </Notice>
          <CopyableCode id="token-value" value={props.newToken.token} secret />
        </div>
      )}
      {props.tokens.length === 0
        ? <p class="empty">No read tokens.</p>
        : (
          <ul class="values" id="token-list">
            {props.tokens.map((t) => (
              <li>
                <code>{t.name}</code>{" "}
                <span class="hint">
                  {t.id}
                  {t.scope === "upload" ? ", uploads source maps" : ""}, by{" "}
                  {t.createdBy}, {formatTime(t.createdAt, false)} UTC
                </span>
                <PostForm
                  ctx={ctx}
                  action={action("tokens/revoke")}
                  class="inline"
                >
                  <input type="hidden" name="token" value={t.id} />
                  <button
                    type="submit"
                    class="link danger"
                    aria-label={`Revoke token ${t.name}`}
                  >
                    Revoke
                  </button>
                </PostForm>
              </li>
            ))}
          </ul>
        )}
      <PostForm ctx={ctx} action={action("tokens")} class="row" id="token-form">
        <input
          name="name"
          required
          maxlength={64}
          placeholder="Name, such as ci-export"
          aria-label="Token name"
          value={props.error?.value ?? ""}
        />
        <select name="scope" aria-label="Token scope">
          <option value="read">read entries</option>
          <option value="upload">upload source maps</option>
        </select>
        <button type="submit">Create token</button>
      </PostForm>
      {props.error && (
        <p class="field-error" role="alert">{props.error.message}</p>
      )}
    </Card>
  );
}

/**
 * Pieces of the rejections page about kept rejected entries: one entry
 * (what was sent, for `bad_signature` the text the service expected to be
 * signed, what to do, Replay and Allow buttons), the outcome of a replay,
 * and the one-click "allow" of a refused origin or app id. Everything the
 * sender supplied is JSX text, escaped by construction.
 *
 * @module
 */
import { type KeptEntry, sentBody, sentSignedText } from "../../db/rejected.ts";
import type { ReplayResult } from "../../queue/replay.ts";
import { entryTitle } from "../../domain/fingerprint.ts";
import { formatTime, levelClass, link } from "./format.ts";
import { Card, CopyButton, type PageContext, PostForm } from "./layout.tsx";
import { REASON_HELP } from "./reasons.ts";

/**
 * A short line saying what the entry was about: its title or message, else
 * its first string field.
 */
function gist(kept: KeptEntry): string {
  const data = kept.entry?.data ?? {};
  const text =
    [data.title, data.message].filter((v) => typeof v === "string" && v !== "")
      .join(" — ") ||
    entryTitle(data) ||
    (kept.entry ? JSON.stringify(data) : "");
  return text.length > 160 ? `${text.slice(0, 159)}…` : text;
}

/**
 * Reasons a replay can cure once the settings are fixed: allow the origin or
 * app id, create the project, declare the level. A bad signature, a stale
 * timestamp, a replayed signature or missing credentials stay so.
 */
const CURABLE: readonly string[] = [
  "bad_origin",
  "unknown_appid",
  "unknown_project",
  "unknown_level",
];

/** Whether a replay can store this entry at all. */
export function replayable(kept: KeptEntry): boolean {
  return kept.entry !== undefined && CURABLE.includes(kept.reason);
}

/** Index of the first character where `a` and `b` differ; -1 when equal. */
export function firstDifference(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) return i;
  return a.length === b.length ? -1 : n;
}

/** The sent text beside the expected one, the first difference marked. */
function SignedTexts(props: { id: string; sent: string; expected: string }) {
  const { id, sent, expected } = props;
  const at = firstDifference(sent, expected);
  const mark = (text: string) =>
    at < 0 ? text : (
      <>
        {text.slice(0, at)}
        <mark>{text.slice(at, at + 1) || "⏎"}</mark>
        {text.slice(at + 1)}
      </>
    );
  return (
    <div class="signed-texts">
      <div>
        <h4>
          Text as sent <CopyButton target={`sent-text-${id}`} />
        </h4>
        <pre class="sent-text" id={`sent-text-${id}`}>{mark(sent)}</pre>
      </div>
      <div>
        <h4>
          Text the service expected to be signed{" "}
          <CopyButton target={`expected-${id}`} />
        </h4>
        <pre class="expected" id={`expected-${id}`}>{mark(expected)}</pre>
      </div>
      <p class="hint difference">
        {at < 0
          ? "The members as sent give exactly the expected text: the signature was made over other bytes than the ones sent (JSON written again after signing), with another secret, or with another timestamp."
          : `They differ from character ${
            at + 1
          } on (marked): sign the compact JSON of the members, as expected.`}
      </p>
    </div>
  );
}

/** Props of {@linkcode QuickAllow}. */
export interface QuickAllowProps {
  ctx: PageContext;
  projectId: string;
  allowed: string[];
  value: string | undefined;
}

/** "Allow" for an origin or app id that was refused and is not allowed yet. */
export function QuickAllow(props: QuickAllowProps) {
  const { ctx, value } = props;
  if (value === undefined || props.allowed.includes(value)) return null;
  const to = `/projects/${props.projectId}/settings/allow`;
  if (!ctx.posts(to)) return null;
  return (
    <PostForm ctx={ctx} to={to} class="inline">
      <input type="hidden" name="value" value={value} />
      <input type="hidden" name="back" value="rejections" />
      <button type="submit" class="small">Allow</button>
    </PostForm>
  );
}

/** A form that replays one kept entry, or all of them (`entry` = `all`). */
export function ReplayForm(
  props: { ctx: PageContext; projectId: string; entry: string; label: string },
) {
  const { ctx } = props;
  if (!ctx.posts(`/projects/${props.projectId}/rejections/replay`)) return null;
  return (
    <PostForm
      ctx={ctx}
      to={`/projects/${props.projectId}/rejections/replay`}
      class="inline replay"
    >
      <input type="hidden" name="entry" value={props.entry} />
      <button type="submit">{props.label}</button>
    </PostForm>
  );
}

/** Props of {@linkcode KeptEntryItem}. */
export interface KeptEntryProps {
  ctx: PageContext;
  projectId: string;
  /** The project's allow-list, for the Allow button. */
  allowed: string[];
  kept: KeptEntry;
  open?: boolean;
}

/**
 * The origin or app id of a kept entry, with "Allow" where the entry was
 * refused for it; nothing where the entry had none.
 */
function SenderPair(
  props: KeptEntryProps & {
    label: string;
    value: string | undefined;
    refusedAs: KeptEntry["reason"];
  },
) {
  const { value } = props;
  if (value === undefined) return null;
  return (
    <>
      <dt>{props.label}</dt>
      <dd>
        <code>{value}</code>{" "}
        {props.kept.reason === props.refusedAs && (
          <QuickAllow {...props} value={value} />
        )}
      </dd>
    </>
  );
}

/** A term and its value in code; nothing when there is no value. */
function CodePair(
  props: { label: string; value: string | undefined; class?: string },
) {
  if (props.value === undefined) return null;
  return (
    <>
      <dt>{props.label}</dt>
      <dd>
        {/* An absent class would still print a space in the tag. */}
        <code {...(props.class ? { class: props.class } : {})}>
          {props.value}
        </code>
      </dd>
    </>
  );
}

/** The entry's id, its sender (with "Allow" where refused), its signature. */
function KeptPairs(props: KeptEntryProps) {
  const { kept } = props;
  return (
    <dl class="pairs">
      <CodePair label="Entry id" value={kept.entryId} />
      <SenderPair
        {...props}
        label="Origin"
        value={kept.origin}
        refusedAs="bad_origin"
      />
      <SenderPair
        {...props}
        label="App id"
        value={kept.appid}
        refusedAs="unknown_appid"
      />
      <CodePair
        label="Signature"
        value={kept.entry?.signature}
        class="wrap"
      />
      <CodePair label="Timestamp" value={kept.entry?.timestamp} />
    </dl>
  );
}

/**
 * For a `bad_signature`: the text the service expected to be signed (beside
 * the sent one when it is known), and how that text is made.
 */
function ExpectedText(props: { kept: KeptEntry; expected: string }) {
  const { kept, expected } = props;
  const id = kept.entryId;
  const sent = sentSignedText(kept);
  return (
    <>
      {sent !== undefined
        ? <SignedTexts id={id} sent={sent} expected={expected} />
        : (
          <>
            <h4>
              Text the service expected to be signed{" "}
              <CopyButton target={`expected-${id}`} />
            </h4>
            <pre class="expected" id={`expected-${id}`}>{expected}</pre>
          </>
        )}
      <p class="hint">
        projectId, then the compact JSON of level, projectId, device, context
        and data, then the timestamp: no spaces after separators, keys in this
        order, no newline at the end. Sign exactly these bytes.
      </p>
    </>
  );
}

/** The entry as received, or why its content was not kept. */
function SentEntry(props: { kept: KeptEntry }) {
  const { kept } = props;
  const body = sentBody(kept);
  const id = kept.entryId;
  if (body === undefined) {
    return (
      <p class="hint">
        Its content was not kept: it took {kept.omittedBytes}{" "}
        bytes, over the 10,000 kept per entry. It cannot be replayed.
      </p>
    );
  }
  return (
    <>
      <h4>
        Entry as received <CopyButton target={`sent-${id}`} label="Copy JSON" />
      </h4>
      <pre class="sent" id={`sent-${id}`}>
        {JSON.stringify(body, null, 2)}
      </pre>
    </>
  );
}

/** One kept rejected entry. */
export function KeptEntryItem(props: KeptEntryProps) {
  const { ctx, kept } = props;
  const e = kept.entry;
  const from = kept.origin ?? kept.appid ??
    (e?.signature !== undefined ? "signed" : "—");
  const id = kept.entryId;
  return (
    <details
      class="kept"
      id={`k-${id}`}
      data-reason={kept.reason}
      data-id={id}
      open={props.open}
    >
      <summary>
        <time datetime={new Date(kept.at).toISOString()}>
          {formatTime(kept.at, false)}
        </time>
        <code class="reason">{kept.reason}</code>
        <span class={`lvl ${levelClass(kept.level)}`}>{kept.level}</span>
        <span class="src">{from}</span>
        <span class="msg">{gist(kept)}</span>
      </summary>
      <div class="detail">
        <KeptPairs {...props} />
        {kept.expected !== undefined && (
          <ExpectedText kept={kept} expected={kept.expected} />
        )}
        <SentEntry kept={kept} />
        <p class="fix">{REASON_HELP[kept.reason]?.fix ?? ""}</p>
        {replayable(kept) && (
          <ReplayForm
            ctx={ctx}
            projectId={props.projectId}
            entry={id}
            label="Replay this entry"
          />
        )}
      </div>
    </details>
  );
}

/** What a replay result says, in words. */
export function resultText(result: ReplayResult): string {
  switch (result.outcome) {
    case "stored":
      return `stored (authorized by ${result.auth})`;
    case "rejected":
      return `rejected again: ${result.reason} — ${
        REASON_HELP[result.reason]?.meaning ?? ""
      }`;
    case "skipped":
      return `not replayed: ${result.why}`;
    case "missing":
      return "not replayed: no longer kept (expired, already replayed, or never rejected)";
  }
}

/** The outcome of the last replay. */
export function ReplayResults(
  props: { ctx: PageContext; projectId: string; results: ReplayResult[] },
) {
  const { ctx, results } = props;
  const stored = results.filter((r) => r.outcome === "stored").length;
  return (
    <Card id="replay-results" titleId="replay-results-title" title="Replay">
      <p role="status">
        {results.length === 0
          ? "There was no kept entry to replay."
          : `Replayed ${results.length} ${
            results.length === 1 ? "entry" : "entries"
          }: ${stored} stored, ${results.length - stored} not.`}
      </p>
      {results.length > 0 && (
        <table class="list">
          <tbody>
            {results.map((r) => (
              <tr data-outcome={r.outcome}>
                <td>
                  <code class="small">{r.entryId}</code>
                </td>
                <td>
                  {resultText(r)}
                  {r.outcome === "stored" && (
                    <>
                      {" "}
                      <a
                        href={link(
                          ctx.base,
                          `/projects/${props.projectId}?around=${r.entryId}&open=${r.entryId}`,
                        )}
                      >
                        Show in the explorer
                      </a>
                    </>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </Card>
  );
}

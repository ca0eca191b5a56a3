/**
 * One entry in the explorer's list: a `<details>` row (time, level, sender,
 * summary) that expands to the entry's fields — each value a link that
 * filters by it or excludes it — and its full JSON with a copy button.
 * The same component renders the first page, further pages and the rows
 * live tail sends, so all three look and behave alike.
 *
 * @module
 */
import { type LogRecord, recordJson } from "../../domain/entry.ts";
import { formatTime, levelClass, sender, summary } from "./format.ts";
import { CopyButton } from "./layout.tsx";
import { StackView } from "./stack.tsx";

/** Links an entry row needs, built by the page from its state. */
export interface EntryLinks {
  /** The view with `term` added to the query. */
  filter(term: { path: string; value: string; exclude: boolean }): string;
  /** The view around this entry. */
  around(id: string): string;
  /** The view with this entry expanded. */
  permalink(id: string): string;
}

const PATH_PART = /^[A-Za-z_$][\w$-]*$/;

/** The leaves of an entry that can be filtered on: path and text value. */
export function entryFields(
  record: LogRecord,
): { path: string; value: string; linkable: boolean }[] {
  const out: { path: string; value: string; linkable: boolean }[] = [];
  const visit = (
    path: string,
    value: unknown,
    linkable: boolean,
    depth: number,
  ) => {
    if (
      typeof value === "object" && value !== null && !Array.isArray(value) &&
      depth < 6
    ) {
      for (const [key, inner] of Object.entries(value)) {
        visit(
          `${path}.${key}`,
          inner,
          linkable && PATH_PART.test(key),
          depth + 1,
        );
      }
      return;
    }
    if (value === undefined) return;
    out.push({
      path,
      value: typeof value === "string" ? value : JSON.stringify(value),
      linkable,
    });
  };
  out.push({ path: "level", value: record.level, linkable: true });
  out.push({ path: "auth", value: record.auth, linkable: true });
  if (record.origin !== undefined) {
    out.push({ path: "origin", value: record.origin, linkable: true });
  }
  if (record.appid !== undefined) {
    out.push({ path: "appid", value: record.appid, linkable: true });
  }
  visit("data", record.data, true, 0);
  visit("context", record.context, true, 0);
  visit("device", record.device, true, 0);
  return out;
}

/** Props of {@linkcode EntryRow}. */
export interface EntryRowProps {
  record: LogRecord;
  links: EntryLinks;
  open?: boolean;
  /** Marks the entry a context view is centred on. */
  focus?: boolean;
}

/** One entry row. */
export function EntryRow(props: EntryRowProps) {
  const { record, links } = props;
  const level = levelClass(record.level);
  const classes = ["entry", level, props.focus ? "focus" : ""]
    .filter((c) => c !== "").join(" ");
  return (
    <details
      class={classes}
      id={`e-${record.id}`}
      data-id={record.id}
      open={props.open}
    >
      <summary>
        <time
          datetime={new Date(record.receivedAt).toISOString()}
          data-format="ms"
        >
          {formatTime(record.receivedAt)}
        </time>
        <span class={`lvl ${level}`}>{record.level}</span>
        <span class="src">{sender(record)}</span>
        <span class="msg">{summary(record)}</span>
      </summary>
      <div class="detail">
        <div class="actions">
          <CopyButton target={`json-${record.id}`} label="Copy JSON" />
          <a href={links.around(record.id)}>Show in context</a>
          <a href={links.permalink(record.id)} class="permalink">
            Link to this entry
          </a>
        </div>
        <StackView stack={record.data.stack} />
        <table class="fields">
          <tbody>
            {entryFields(record).map((field) => (
              <tr data-path={field.path}>
                <th scope="row">{field.path}</th>
                <td>
                  {field.linkable
                    ? (
                      <a
                        class="value"
                        title={`Show only entries with ${field.path} = this value`}
                        href={links.filter({ ...field, exclude: false })}
                      >
                        {field.value}
                      </a>
                    )
                    : <span class="value">{field.value}</span>}
                </td>
                <td class="exclude">
                  {field.linkable && (
                    <a
                      title={`Hide entries with ${field.path} = this value`}
                      aria-label={`Exclude ${field.path}`}
                      href={links.filter({ ...field, exclude: true })}
                    >
                      −
                    </a>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
        <pre
          class="json"
          id={`json-${record.id}`}
        >{JSON.stringify(recordJson(record), null, 2)}</pre>
      </div>
    </details>
  );
}

/**
 * One entry in the explorer's list: a `<details>` row (time, level, sender,
 * summary) that expands to the entry's fields — each value a link that
 * filters by it or excludes it — and its JSON with a copy button.
 * The same component renders the first page, further pages and the rows
 * live tail sends, so all three look and behave alike.
 *
 * In a list an entry shows a preview: its first fields and the start of its
 * JSON, within a budget per entry and one shared by the page, so that a page
 * of entries with thousands of members each stays small (50 such entries
 * once made 114 MB of HTML). A cut preview says so and links to the full
 * entry (`…/entries/:entryId`), which the script fetches in place.
 *
 * An entry's fields and JSON are read only as far as shown: its leaves with
 * their paths (the first ones, the rest only counted) and the start of its
 * pretty-printed JSON, so that an entry with thousands of members costs a
 * preview no more than the preview shows.
 *
 * The full entry shows all its JSON and its first fields, as many as
 * {@linkcode FULL_FIELDS} and {@linkcode FULL_PATH_CHARS} allow. A row
 * writes its path several times (one long key above a thousand leaves, a
 * 42 KB entry, once made 229 MB of HTML), so it shows a long path by its
 * start and end, and a path too long to filter by gets no links; the page
 * says what its table leaves out.
 *
 * @module
 */
import {
  type LogRecord,
  recordJson,
  type ResolvedStack,
} from "../../domain/entry.ts";
import { MAX_FIELD_CHARS } from "../explorer_state.ts";
import { formatTime, levelClass, summary, whereFrom } from "./format.ts";
import { CopyButton } from "./layout.tsx";
import {
  orderedStack,
  ResolvedStackView,
  StackView,
  stackWithin,
} from "./stack.tsx";

/**
 * Bytes of fields and JSON one entry's preview may take in a list; its
 * stack may take as much again.
 */
export const ENTRY_PREVIEW_BYTES = 16 * 1024;
/** Bytes of stacks, fields and JSON all previews of one page may take together. */
export const PAGE_PREVIEW_BYTES = 768 * 1024;
/** Fields a preview lists at most. */
const PREVIEW_FIELDS = 40;
/** Characters of one field's value in a preview. */
const PREVIEW_VALUE_CHARS = 300;
/** Characters of JSON in a preview. */
const PREVIEW_JSON_CHARS = 4096;
/** Fields the full entry lists at most; its JSON has them all. */
export const FULL_FIELDS = 1000;
/** Markup around one field's row, counted against the budget. */
const FIELD_MARKUP_BYTES = 300;
/**
 * Characters of a field's path its row shows: a longer path shows its
 * start and end around "…", and has no `data-path` to pin it to the facets
 * by (a facet's field has at most as many).
 */
const SHOWN_PATH_CHARS = MAX_FIELD_CHARS;
/** Characters of a long path's start that its row shows. */
const PATH_HEAD_CHARS = Math.ceil((SHOWN_PATH_CHARS - 1) / 2);
/** Characters of a long path's end that its row shows, after "…". */
const PATH_TAIL_CHARS = SHOWN_PATH_CHARS - 1 - PATH_HEAD_CHARS;
/**
 * Characters of a path whose field links by value at most: a longer one's
 * links would pass half of the 2,000 characters a query keeps.
 */
const LINKED_PATH_CHARS = 1000;
/**
 * Characters of paths the full entry's field table writes: each row's path
 * as shown (its header, titles and `data-path`) and as its links encode it.
 * The fields past it are left to the JSON, which has them all.
 */
export const FULL_PATH_CHARS = 1024 * 1024;

/** What is left of a page's preview budget, shared by its rows. */
export interface PreviewBudget {
  left: number;
}

/**
 * A fresh budget for the previews of one page.
 *
 * @example
 * ```ts
 * const budget = pageBudget(); // { left: PAGE_PREVIEW_BYTES }
 * ```
 */
export function pageBudget(): PreviewBudget {
  return { left: PAGE_PREVIEW_BYTES };
}

/** Links an entry row needs, built by the page from its state. */
export interface EntryLinks {
  /** The view with `term` added to the query. */
  filter(term: { path: string; value: string; exclude: boolean }): string;
  /** The view around this entry. */
  around(id: string): string;
  /** The view with this entry expanded. */
  permalink(id: string): string;
  /** The page of this entry in full; with `part=detail`, its detail alone. */
  entry(id: string): { page: string; detail: string };
}

/** Props of {@linkcode EntryRow}. */
export interface EntryRowProps {
  record: LogRecord;
  links: EntryLinks;
  open?: boolean;
  /** Marks the entry a context view is centred on. */
  focus?: boolean;
  /** Every field (up to {@linkcode FULL_FIELDS}) and all the JSON. @default {false} */
  full?: boolean;
  /** The page's preview budget, shared by its rows. @default one row's own */
  budget?: PreviewBudget;
  /** The stack resolved through source maps. @default none shown */
  resolved?: ResolvedStack | null;
}

/** The source column: where the entry came from, and its auth as a tag. */
function Source(props: { record: LogRecord }) {
  const { where, auth } = whereFrom(props.record);
  return (
    <span class="src" title={where === "" ? auth : `${where} (${auth})`}>
      {where !== "" && <span class="from">{where}</span>}{" "}
      <span class="auth">{auth}</span>
    </span>
  );
}

/** One entry row. */
export function EntryRow(props: EntryRowProps) {
  const { record } = props;
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
        <Source record={record} />
        <span class="msg">{summary(record)}</span>
      </summary>
      <div class="detail">
        <EntryDetail
          record={record}
          links={props.links}
          full={props.full ?? false}
          {...(props.budget ? { budget: props.budget } : {})}
          {...(props.resolved ? { resolved: props.resolved } : {})}
        />
      </div>
    </details>
  );
}

/** A field as a detail shows it. */
interface ShownField extends Leaf {
  /** The value is cut short. */
  cut: boolean;
  /** Links by value and without it, when linkable. */
  hrefs: { only: string; without: string } | null;
}

/** What of an entry's paths its full field table leaves out. */
interface PathsLeft {
  /** Fields whose path is shown by its start and end. */
  long: number;
  /** Of those, fields with no links for their path's length. */
  unlinked: number;
  /** The table stopped at {@linkcode FULL_PATH_CHARS}. */
  full: boolean;
}

/** What of an entry its detail shows. */
interface Shown {
  fields: ShownField[];
  total: number;
  json: string;
  jsonCut: boolean;
  stack: string[];
  stackCut: boolean;
  /** The full entry's paths left out. @default none (a preview) */
  paths?: PathsLeft;
}

/** A field's links: the entries sharing its value, and those without it. */
type FieldHrefs = (
  field: { path: string; value: string },
) => { only: string; without: string };

/** Characters of `path` a full entry's row writes, with links or without. */
function pathChars(path: string, linked: boolean): number {
  const shown = Math.min(path.length, SHOWN_PATH_CHARS);
  const pin = path.length <= SHOWN_PATH_CHARS ? path.length : 0;
  // A linked path is of ASCII names, which encode without fail.
  return pin + shown * (linked ? 4 : 1) +
    (linked ? 2 * encodeURIComponent(path).length : 0);
}

/**
 * The whole entry: the whole JSON and stack, and the first fields, as many
 * as {@linkcode FULL_FIELDS} and {@linkcode FULL_PATH_CHARS} allow.
 */
function shownWhole(
  record: LogRecord,
  hrefs: FieldHrefs,
  stack: string[],
): Shown {
  const { fields: all, total } = walkFields(record, FULL_FIELDS);
  const fields: ShownField[] = [];
  const paths: PathsLeft = { long: 0, unlinked: 0, full: false };
  let left = FULL_PATH_CHARS;
  for (const field of all) {
    const linkable = field.linkable &&
      field.path.length <= LINKED_PATH_CHARS;
    const cost = pathChars(field.path, linkable);
    if (cost > left) {
      paths.full = true;
      break;
    }
    left -= cost;
    if (field.path.length > SHOWN_PATH_CHARS) paths.long++;
    if (field.linkable && !linkable) paths.unlinked++;
    fields.push({
      ...field,
      linkable,
      cut: false,
      hrefs: linkable ? hrefs(field) : null,
    });
  }
  return {
    fields,
    total,
    json: JSON.stringify(recordJson(record), null, 2),
    jsonCut: false,
    stack,
    stackCut: false,
    paths,
  };
}

/**
 * The preview's fields in `start` bytes of markup, each value cut at
 * {@linkcode PREVIEW_VALUE_CHARS}; returns them and the bytes left.
 */
function previewFields(
  all: ReturnType<typeof walkFields>["fields"],
  start: number,
  hrefs: FieldHrefs,
): { fields: ShownField[]; left: number } {
  let left = start;
  const fields: ShownField[] = [];
  for (const field of all) {
    if (left <= 0) break;
    const cut = field.value.length > PREVIEW_VALUE_CHARS;
    const value = cut
      ? `${field.value.slice(0, PREVIEW_VALUE_CHARS - 1)}…`
      : field.value;
    // A cut value filters by nothing shown: no links for it here.
    const linked =
      field.linkable && !cut && field.path.length <= LINKED_PATH_CHARS
        ? hrefs(field)
        : null;
    const cost = FIELD_MARKUP_BYTES + field.path.length + value.length +
      (linked ? linked.only.length + linked.without.length : 0);
    if (cost > left) break;
    left -= cost;
    fields.push({
      path: field.path,
      shown: field.shown,
      value,
      linkable: linked !== null,
      cut,
      hrefs: linked,
    });
  }
  return { fields, left };
}

/** What of an entry its detail shows, whole or within a preview's budget. */
function chooseShown(
  record: LogRecord,
  links: EntryLinks,
  full: boolean,
  budget: PreviewBudget | undefined,
): Shown {
  const hrefs: FieldHrefs = (field) => ({
    only: links.filter({ ...field, exclude: false }),
    without: links.filter({ ...field, exclude: true }),
  });
  const stack = orderedStack(record.data.stack);
  if (full) return shownWhole(record, hrefs, stack);
  const start = Math.min(ENTRY_PREVIEW_BYTES, budget?.left ?? Infinity);
  if (start <= 0) {
    return {
      fields: [],
      total: 0,
      json: "",
      jsonCut: true,
      stack: [],
      stackCut: stack.length > 0,
    };
  }
  // The stack has an allowance of its own, so that the fields and JSON a
  // preview shows are the same with or without one.
  const stackShown = stackWithin(stack, start);
  const { fields: all, total } = walkFields(record, PREVIEW_FIELDS);
  const { fields, left: afterFields } = previewFields(all, start, hrefs);
  const json = jsonStart(
    recordJson(record),
    Math.max(0, Math.min(PREVIEW_JSON_CHARS, afterFields)),
  );
  const left = afterFields - json.text.length;
  const stackBytes = stackShown.reduce((n, line) => n + line.length + 1, 0);
  if (budget) budget.left -= start - left + stackBytes;
  return {
    fields,
    total,
    json: json.text,
    jsonCut: json.cut,
    stack: stackShown,
    stackCut: stackShown.length < stack.length,
  };
}

/**
 * One field's row: a value links to the entries sharing it, and "−" to
 * those without it. A long path is shown by its start and end.
 */
function FieldRow(props: { field: ShownField }) {
  const { field } = props;
  const path = field.shown;
  const pin = path === field.path ? { "data-path": field.path } : {};
  return (
    <tr {...pin}>
      <th scope="row">{path}</th>
      <td>
        {field.hrefs
          ? (
            <a
              class="value"
              title={`Show only entries with ${path} = this value`}
              href={field.hrefs.only}
            >
              {field.value}
            </a>
          )
          : <span class="value">{field.value}</span>}
      </td>
      <td class="exclude">
        {field.hrefs && (
          <a
            title={`Hide entries with ${path} = this value`}
            aria-label={`Exclude ${path}`}
            href={field.hrefs.without}
          >
            −
          </a>
        )}
      </td>
    </tr>
  );
}

/** The fields shown, a row each. */
function FieldTable(props: { fields: ShownField[] }) {
  return (
    <table class="fields">
      <tbody>
        {props.fields.map((field, i) => <FieldRow key={i} field={field} />)}
      </tbody>
    </table>
  );
}

/** What the full entry's field table leaves out, said in words. */
function FullNotes(props: { shown: Shown }) {
  const { fields, total, paths } = props.shown;
  const long = paths?.long ?? 0;
  const unlinked = paths?.unlinked ?? 0;
  const stopped = paths?.full
    ? ` (the table writes at most ${
      FULL_PATH_CHARS.toLocaleString("en")
    } characters of their paths)`
    : "";
  const noLinks = unlinked === 0
    ? ""
    : `; ${unlinked} of them, longer than ${
      LINKED_PATH_CHARS.toLocaleString("en")
    } characters, ${unlinked === 1 ? "has" : "have"} no links to filter by`;
  return (
    <>
      {fields.length < total && (
        <p class="preview-note">
          {`The first ${fields.length} of ${total} fields${stopped}; the JSON below has them all.`}
        </p>
      )}
      {long > 0 && (
        <p class="preview-note">
          {`${long} ${
            long === 1 ? "field has a path" : "fields have paths"
          } longer than ${SHOWN_PATH_CHARS} characters, shown cut in the middle${noLinks}. The JSON below has the paths whole.`}
        </p>
      )}
    </>
  );
}

/**
 * The detail of an entry: its actions, fields and JSON, as a preview or in
 * full. Also the answer to the script's request for the full entry.
 */
export function EntryDetail(
  props: {
    record: LogRecord;
    links: EntryLinks;
    full: boolean;
    budget?: PreviewBudget;
    /** The stack resolved through source maps (the full entry only). */
    resolved?: ResolvedStack | null;
  },
) {
  const { record, links } = props;
  const shown = chooseShown(record, links, props.full, props.budget);
  const jsonCut = shown.jsonCut;
  const cut = jsonCut || shown.stackCut ||
    shown.fields.length < shown.total || shown.fields.some((f) => f.cut);
  const entry = links.entry(record.id);
  return (
    <>
      <div class="actions">
        {!jsonCut && (
          <CopyButton target={`json-${record.id}`} label="Copy JSON" />
        )}
        <a href={links.around(record.id)}>Show in context</a>
        <a href={links.permalink(record.id)} class="permalink">
          Link to this entry
        </a>
      </div>
      {cut && !props.full && (
        <p class="preview-note">
          {shown.fields.length === 0 && shown.json === ""
            ? "Not previewed: this page has shown as much as it may."
            : `Preview: ${shown.fields.length} of ${shown.total} fields${
              jsonCut ? ", the JSON cut short" : ""
            }${shown.stackCut ? ", the stack cut short" : ""}.`}{" "}
          <a class="full-entry" href={entry.page} data-fragment={entry.detail}>
            Show the full entry
          </a>
        </p>
      )}
      {props.full && <FullNotes shown={shown} />}
      <ResolvedStackView stack={props.resolved} />
      <StackView lines={shown.stack} />
      {shown.fields.length > 0 && <FieldTable fields={shown.fields} />}
      {shown.json !== "" && (
        <pre class="json" id={`json-${record.id}`}>
          {jsonCut ? `${shown.json}\n…` : shown.json}
        </pre>
      )}
    </>
  );
}

const PATH_PART = /^[A-Za-z_$][\w$-]*$/;

/** A leaf of an entry: its path and its value as text. */
export interface Leaf {
  path: string;
  /** The path as a row shows it: whole, or its start and end around "…". */
  shown: string;
  value: string;
  /** The path is of names a query can write. */
  linkable: boolean;
}

/** The leaves of an entry that can be filtered on: path and text value. */
export function entryFields(record: LogRecord): Leaf[] {
  return walkFields(record, Infinity).fields;
}

/**
 * The start and end of a path, as far as a row shows them; kept as a walk
 * goes down, so that the leaves of a long key do not each copy it whole.
 */
interface PathEnds {
  head: string;
  tail: string;
}

/** The ends of `${path}.${key}`, from those of `path`. */
function endsBelow(ends: PathEnds, key: string): PathEnds {
  const head = ends.head.length >= PATH_HEAD_CHARS
    ? ends.head
    : `${ends.head}.${key.slice(0, PATH_HEAD_CHARS)}`.slice(0, PATH_HEAD_CHARS);
  const tail = key.length >= PATH_TAIL_CHARS
    ? key.slice(key.length - PATH_TAIL_CHARS)
    : `${ends.tail}.${key}`.slice(-PATH_TAIL_CHARS);
  return { head, tail };
}

/**
 * `path` as a row shows it: whole up to {@linkcode SHOWN_PATH_CHARS}, else
 * its start and end around "…" (`data.aaa…aaa.k1`), neither keeping half
 * of a surrogate pair.
 */
function shownPath(path: string, ends: PathEnds): string {
  if (path.length <= SHOWN_PATH_CHARS) return path;
  const head = /[\uD800-\uDBFF]$/.test(ends.head)
    ? ends.head.slice(0, -1)
    : ends.head;
  const tail = /^[\uDC00-\uDFFF]/.test(ends.tail)
    ? ends.tail.slice(1)
    : ends.tail;
  return `${head}…${tail}`;
}

/**
 * The first `limit` leaves of an entry and how many there are: past the
 * limit, leaves are only counted (an entry may have thousands).
 */
export function walkFields(
  record: LogRecord,
  limit: number,
): { fields: Leaf[]; total: number } {
  const out: Leaf[] = [];
  let total = 0;
  const add = (
    path: string,
    value: string,
    linkable: boolean,
    ends: PathEnds = { head: path, tail: path },
  ) => {
    total++;
    if (out.length < limit) {
      out.push({ path, shown: shownPath(path, ends), value, linkable });
    }
  };
  const visit = (
    path: string,
    ends: PathEnds,
    value: unknown,
    linkable: boolean,
    depth: number,
  ) => {
    if (out.length >= limit) {
      total += countLeaves(value, depth);
      return;
    }
    if (
      typeof value === "object" && value !== null && !Array.isArray(value) &&
      depth < 6
    ) {
      for (const key in value) {
        if (!Object.hasOwn(value, key)) continue;
        visit(
          `${path}.${key}`,
          endsBelow(ends, key),
          (value as Record<string, unknown>)[key],
          linkable && PATH_PART.test(key),
          depth + 1,
        );
      }
      return;
    }
    if (value === undefined) return;
    add(
      path,
      typeof value === "string" ? value : JSON.stringify(value),
      linkable,
      ends,
    );
  };
  add("level", record.level, true);
  add("auth", record.auth, true);
  if (record.origin !== undefined) add("origin", record.origin, true);
  if (record.appid !== undefined) add("appid", record.appid, true);
  for (const top of ["data", "context", "device"] as const) {
    visit(top, { head: top, tail: top }, record[top], true, 0);
  }
  return { fields: out, total };
}

/** Leaves below `value` as {@linkcode walkFields} counts them, without paths. */
function countLeaves(value: unknown, depth: number): number {
  if (value === undefined) return 0;
  if (
    typeof value !== "object" || value === null || Array.isArray(value) ||
    depth >= 6
  ) {
    return 1;
  }
  let n = 0;
  for (const key in value) {
    if (Object.hasOwn(value, key)) {
      n += countLeaves((value as Record<string, unknown>)[key], depth + 1);
    }
  }
  return n;
}

/**
 * The start of `JSON.stringify(value, null, 2)`, at most `limit`
 * characters, written without building the rest; `cut` when there is more.
 *
 * @example
 * ```ts
 * jsonStart({ a: [1, 2] }, 10); // { text: '{\n  "a": [', cut: true }
 * ```
 */
export function jsonStart(
  value: unknown,
  limit: number,
): { text: string; cut: boolean } {
  const parts: string[] = [];
  let length = 0;
  const put = (text: string): boolean => {
    parts.push(text);
    length += text.length;
    return length <= limit;
  };
  const write = (v: unknown, indent: string): boolean => {
    if (v === null || typeof v !== "object") {
      return put(JSON.stringify(v) ?? "null");
    }
    const inner = `${indent}  `;
    if (Array.isArray(v)) {
      if (v.length === 0) return put("[]");
      if (!put("[")) return false;
      for (let i = 0; i < v.length; i++) {
        if (!put(`${i === 0 ? "" : ","}\n${inner}`)) return false;
        if (!write(v[i] === undefined ? null : v[i], inner)) return false;
      }
      return put(`\n${indent}]`);
    }
    let first = true;
    for (const key in v) {
      const item = (v as Record<string, unknown>)[key];
      if (!Object.hasOwn(v, key) || item === undefined) continue;
      if (!put(`${first ? "{" : ","}\n${inner}${JSON.stringify(key)}: `)) {
        return false;
      }
      first = false;
      if (!write(item, inner)) return false;
    }
    return put(first ? "{}" : `\n${indent}}`);
  };
  const whole = write(value, "");
  const text = parts.join("");
  return whole && text.length <= limit
    ? { text, cut: false }
    : { text: text.slice(0, limit), cut: true };
}

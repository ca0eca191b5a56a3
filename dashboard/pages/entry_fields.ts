/**
 * An entry's fields and JSON, read only as far as shown: its leaves with
 * their paths (the first ones, the rest only counted) and the start of its
 * pretty-printed JSON, so that an entry with thousands of members costs a
 * preview no more than the preview shows.
 *
 * @module
 */
import type { LogRecord } from "../../domain/entry.ts";

const PATH_PART = /^[A-Za-z_$][\w$-]*$/;

/** The leaves of an entry that can be filtered on: path and text value. */
export function entryFields(
  record: LogRecord,
): { path: string; value: string; linkable: boolean }[] {
  return walkFields(record, Infinity).fields;
}

/**
 * The first `limit` leaves of an entry and how many there are: past the
 * limit, leaves are only counted (an entry may have thousands).
 */
export function walkFields(
  record: LogRecord,
  limit: number,
): {
  fields: { path: string; value: string; linkable: boolean }[];
  total: number;
} {
  const out: { path: string; value: string; linkable: boolean }[] = [];
  let total = 0;
  const add = (path: string, value: string, linkable: boolean) => {
    total++;
    if (out.length < limit) out.push({ path, value, linkable });
  };
  const visit = (
    path: string,
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
    );
  };
  add("level", record.level, true);
  add("auth", record.auth, true);
  if (record.origin !== undefined) add("origin", record.origin, true);
  if (record.appid !== undefined) add("appid", record.appid, true);
  visit("data", record.data, true, 0);
  visit("context", record.context, true, 0);
  visit("device", record.device, true, 0);
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

/**
 * A chunk's columns: what aggregations read instead of its lines. Per entry
 * in line order, the minute of its receipt time (an offset from the chunk's
 * first minute), a level code, and a dictionary code for each of
 * {@linkcode COLUMN_FIELDS}. A dictionary holds the field's exact JSON
 * values (502 and "502" apart), code 0 standing for a missing field. A field
 * with more than {@linkcode MAX_COLUMN_VALUES} distinct values in a chunk is
 * left out of that chunk's columns (listed as such): a query on it reads
 * that chunk's lines.
 *
 * Written with the chunk, in the same atomic operation, under
 * `log_columns/<projectId>/<last id>` (further slices of a value over
 * `SLICE_BYTES`, db/blob.ts, under `log_column_slices/`), and deleted with it
 * (db/storage/write.ts). The value: format, slices, then the deflated body:
 * a JSON header (u32 length first), each held field's dictionary of values,
 * the minutes (u8 each), the level codes (u8 each) and per field its codes
 * (u8 or u16 each, little-endian).
 *
 * @module
 */
import { deflateRawSync, inflateRawSync } from "node:zlib";
import { concatBytes, joinSlices, splitBytes } from "../blob.ts";
import { logColumnSliceKey } from "../keys.ts";
import type { LogRecord } from "../../domain/entry.ts";
import { idTime } from "../../domain/ids.ts";

/** The fields a chunk's columns hold. */
export const COLUMN_FIELDS: readonly string[] = [
  "context.service",
  "context.environment",
  "context.release",
  "context.userId",
  "device.os",
  "device.browser",
  "device.type",
  "appid",
  "origin",
  "auth",
  "data.status",
];
/** Distinct values of a field in one chunk's columns at most. */
export const MAX_COLUMN_VALUES = 4096;
/** Distinct levels in one chunk's columns at most (else no columns). */
const MAX_LEVELS = 255;
const FORMAT = 1;
const MINUTE_MS = 60_000;

/** The decoded columns of a chunk. */
export interface Columns {
  /** Entries. */
  count: number;
  /** The first entry's minute, as Unix ms. */
  baseMs: number;
  /**
   * Whether every entry's id names the minute of its receipt time (the id
   * bounds a time filter, the receipt time a time bucket).
   */
  timeExact: boolean;
  /** Minute of each entry: offset from `baseMs`, in minutes. */
  minutes: Uint8Array;
  /** The levels; `levelCodes` index this. */
  levels: string[];
  levelCodes: Uint8Array;
  /** Per field held: its values (index 0: missing) and each entry's code. */
  fields: Map<string, { values: unknown[]; codes: Uint8Array | Uint16Array }>;
  /** Fields left out of this chunk (too many distinct values). */
  omitted: string[];
}

/** Collects the columns of a chunk's entries, in line order. */
export class ColumnsBuilder {
  #count = 0;
  #baseMs = -1;
  #timeExact = true;
  #minutes: number[] = [];
  #levels = new Map<string, number>();
  #levelCodes: number[] = [];
  /** Per field, code by {@linkcode dictKey} of the value. */
  #dicts = COLUMN_FIELDS.map(() => new Map<unknown, number>());
  #codes: (number[] | null)[] = COLUMN_FIELDS.map(() => []);

  /** Adds the next entry (entries come in line order). */
  add(record: LogRecord): void {
    const minute = Math.floor(record.receivedAt / MINUTE_MS) * MINUTE_MS;
    if (this.#baseMs < 0) this.#baseMs = minute;
    let offset = (minute - this.#baseMs) / MINUTE_MS;
    if (offset < 0 || offset > 255) {
      this.#timeExact = false;
      offset = 0;
    }
    if (Math.floor(idTime(record.id) / MINUTE_MS) * MINUTE_MS !== minute) {
      this.#timeExact = false;
    }
    this.#minutes.push(offset);
    let level = this.#levels.get(record.level);
    if (level === undefined) {
      level = this.#levels.size;
      this.#levels.set(record.level, level);
    }
    this.#levelCodes.push(level);
    for (let f = 0; f < PARTS.length; f++) {
      const codes = this.#codes[f];
      if (!codes) continue;
      const value = resolveParts(record, PARTS[f]!);
      if (value === undefined) {
        codes.push(0);
        continue;
      }
      const dict = this.#dicts[f]!;
      const key = dictKey(value);
      let code = dict.get(key);
      if (code === undefined) {
        if (dict.size >= MAX_COLUMN_VALUES) {
          this.#codes[f] = null;
          dict.clear();
          continue;
        }
        code = dict.size + 1;
        dict.set(key, code);
      }
      codes.push(code);
    }
    this.#count++;
  }

  /**
   * The encoded value and its further slices; null when it cannot be held.
   * `fast`: the fastest deflate, for a chunk the merger rewrites soon.
   */
  build(fast = false): { head: Uint8Array; rest: Uint8Array[] } | null {
    if (this.#count === 0 || this.#levels.size > MAX_LEVELS) return null;
    const held = COLUMN_FIELDS.flatMap((path, f) => {
      const codes = this.#codes[f];
      if (!codes) return [];
      const values = [...this.#dicts[f]!.keys()].map(keyJson);
      return [{ path, values, codes, wide: values.length >= 256 }];
    });
    const encoder = new TextEncoder();
    const dicts = held.map((h) => encoder.encode(`[${h.values.join()}]`));
    const header = encoder.encode(
      `{"n":${this.#count},"m":${this.#baseMs},"t":${this.#timeExact},` +
        `"lv":${JSON.stringify([...this.#levels.keys()])},"f":[${
          held.map((h, f) =>
            `[${JSON.stringify(h.path)},${h.wide ? 2 : 1},${dicts[f]!.length}]`
          ).join()
        }],"x":${
          JSON.stringify(COLUMN_FIELDS.filter((_, f) => !this.#codes[f]))
        }}`,
    );
    const n = this.#count;
    const parts: Uint8Array[] = [u32(header.length), header, ...dicts];
    parts.push(Uint8Array.from(this.#minutes));
    parts.push(Uint8Array.from(this.#levelCodes));
    for (const h of held) {
      if (!h.wide) parts.push(Uint8Array.from(h.codes));
      else {
        const bytes = new Uint8Array(2 * n);
        const view = new DataView(bytes.buffer);
        h.codes.forEach((c, i) => view.setUint16(2 * i, c, true));
        parts.push(bytes);
      }
    }
    const body = deflateRawSync(concatBytes(parts), fast ? { level: 1 } : {});
    const { head, rest } = splitBytes(body);
    return {
      head: concatBytes([new Uint8Array([FORMAT, 1 + rest.length]), head]),
      rest,
    };
  }
}

/** `n` little-endian 16-bit numbers from `at`. */
function uint16s(
  bytes: Uint8Array,
  view: DataView,
  at: number,
  n: number,
): Uint16Array {
  if (new Uint8Array(new Uint16Array([1]).buffer)[0] === 1) {
    // A copy (an inflated Buffer's slice is a view), aligned.
    return new Uint16Array(
      new Uint8Array(bytes.subarray(at, at + 2 * n)).buffer,
    );
  }
  const codes = new Uint16Array(n);
  for (let i = 0; i < n; i++) codes[i] = view.getUint16(at + 2 * i, true);
  return codes;
}

/** The paths of {@linkcode COLUMN_FIELDS}, split. */
const PARTS = COLUMN_FIELDS.map((path) => path.split("."));

/**
 * `resolvePath` (db/storage/text.ts) of a path split already. No name of
 * {@linkcode COLUMN_FIELDS} is a member of `Object.prototype` or
 * `Array.prototype`, so a plain read finds only own members.
 */
function resolveParts(record: LogRecord, parts: string[]): unknown {
  let value: unknown = record;
  for (const name of parts) {
    if (typeof value !== "object" || value === null) return undefined;
    value = (value as Record<string, unknown>)[name];
  }
  return value;
}

/**
 * A value as a dictionary's key: a number, boolean or null as itself (a Map
 * keeps 502 apart from "502"), a string as itself unless it starts with
 * "\0", else "\0s" and the string, an object or array as "\0" and its JSON.
 */
function dictKey(value: unknown): unknown {
  if (typeof value === "string") {
    return value.startsWith("\0") ? "\0s" + value : value;
  }
  return typeof value === "object" && value !== null
    ? "\0" + JSON.stringify(value)
    : value;
}

/** The JSON of the value a {@linkcode dictKey} stands for. */
function keyJson(key: unknown): string {
  if (typeof key !== "string" || !key.startsWith("\0")) {
    return JSON.stringify(key);
  }
  return key[1] === "s" ? JSON.stringify(key.slice(2)) : key.slice(1);
}

function u32(n: number): Uint8Array {
  const bytes = new Uint8Array(4);
  new DataView(bytes.buffer).setUint32(0, n, true);
  return bytes;
}

/**
 * Decodes a `log_columns/` value, reading its further slices when it has
 * any; of the fields held, only those in `wanted` (all by default).
 */
export async function readColumns(
  kv: Deno.Kv,
  projectId: string,
  lastId: string,
  value: unknown,
  wanted?: ReadonlySet<string>,
): Promise<Columns> {
  if (!(value instanceof Uint8Array) || value[0] !== FORMAT) {
    throw new Error(`Cannot read the columns of "${lastId}": unknown format`);
  }
  const body = await joinSlices(
    kv,
    value.subarray(2),
    value[1]!,
    (n) => logColumnSliceKey(projectId, lastId, n),
  );
  return decodeColumnsBody(inflateRawSync(body), wanted);
}

/**
 * Decodes the inflated body of a columns value; of the fields held, only
 * those in `wanted` (all by default).
 */
export function decodeColumnsBody(
  bytes: Uint8Array,
  wanted?: ReadonlySet<string>,
): Columns {
  const decoder = new TextDecoder();
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.length);
  const size = view.getUint32(0, true);
  const header = JSON.parse(decoder.decode(bytes.subarray(4, 4 + size))) as {
    n: number;
    m: number;
    t: boolean;
    lv: string[];
    f: [string, number, number][];
    x: string[];
  };
  const n = header.n;
  let at = 4 + size;
  const dicts = header.f.map(([, , length]) => {
    const text = bytes.subarray(at, at + length);
    at += length;
    return text;
  });
  const minutes = bytes.subarray(at, at + n);
  const levelCodes = bytes.subarray(at + n, at + 2 * n);
  at += 2 * n;
  const fields: Columns["fields"] = new Map();
  header.f.forEach(([path, width], f) => {
    const start = at;
    at += width * n;
    if (wanted && !wanted.has(path)) return;
    const values = JSON.parse(decoder.decode(dicts[f]!)) as unknown[];
    fields.set(path, {
      values: [undefined, ...values],
      codes: width === 1 ? bytes.subarray(start, start + n) : uint16s(
        bytes,
        view,
        start,
        n,
      ),
    });
  });
  return {
    count: n,
    baseMs: header.m,
    timeExact: header.t,
    minutes,
    levels: header.lv,
    levelCodes,
    fields,
    omitted: header.x,
  };
}

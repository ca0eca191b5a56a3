/**
 * The Bloom members of a chunk's entries, found in one walk of each entry:
 * exactly the members db/storage/text.ts defines (every token of
 * `forEachText`'s values lower-cased, then every pair of
 * `forEachPair`), added to a {@linkcode BloomMembers} in the same
 * order, hashed as `bloomHash` hashes their strings. Three things make it
 * cheaper than those definitions followed to the letter (the merger indexes
 * every entry it rewrites):
 *
 * - A value of ASCII units is cut into tokens and hashed as it is read,
 *   A-Z lower-cased as they are hashed: no lower-cased copy. Any other
 *   value goes the definitions' way (Unicode lower-casing may change a
 *   value's length and depends on context); the tokens hashed before its
 *   first non-ASCII unit are then added again, which changes nothing.
 * - A field pair's path is hashed once per chunk, not once per entry: the
 *   paths met are kept in a tree ({@linkcode MAX_PATHS} at most), each with
 *   both hashes' states after `path=`. The second hash's seed is the
 *   pair's length, so its state is kept per length of the value (at most
 *   `PAIR_MAX_CHARS + 1` of them); a pair then costs the hash of its value.
 * - The text and the pairs of `data`, `context` and `device` are found in
 *   the same walk; their pairs wait in a buffer until the entry's tokens
 *   are added, so that the members come in the definitions' order (the
 *   order of a coarse group's pending hashes, db/storage/coarse.ts).
 *
 * Values are walked as JSON makes them: arrays by index, objects by their
 * own enumerable members (`for...in`: a parsed object's prototype has no
 * enumerable member).
 *
 * @module
 */
import type { LogRecord } from "../../domain/entry.ts";
import {
  BloomMembers,
  HASH_A_SEED,
  hashAStep,
  hashBSeed,
  hashBStep,
} from "./bloom.ts";
import {
  fieldText,
  forEachTokenRange,
  isAsciiWord,
  PAIR_MAX_CHARS,
  PAIR_MAX_DEPTH,
  TEXT_MAX_DEPTH,
} from "./text.ts";

/**
 * Paths whose hash states one chunk keeps; a path met past them is hashed
 * for each pair, as the definitions do (an entry of thousands of distinct
 * member names costs what it did, and holds no memory).
 */
export const MAX_PATHS = 4096;

/** A field path met, and its hashes' states after `path=`. */
class PathNode {
  readonly path: string;
  /** The first hash's state after `path=`. */
  readonly a: number;
  /** The second hash's state after `path=`, per length of the value. */
  #b: number[] = [];
  /** The paths below, by member name or item index. */
  children: Map<string | number, PathNode> | undefined;

  constructor(path: string) {
    this.path = path;
    let a = HASH_A_SEED;
    for (let i = 0; i < path.length; i++) a = hashAStep(a, path.charCodeAt(i));
    this.a = hashAStep(a, 61); // "="
  }

  /** The second hash's state after `path=` for a value of `length` units. */
  b(length: number): number {
    let b = this.#b[length];
    if (b !== undefined) return b;
    const path = this.path;
    b = hashBSeed(path.length + 1 + length);
    for (let i = 0; i < path.length; i++) b = hashBStep(b, path.charCodeAt(i));
    b = hashBStep(b, 61);
    this.#b[length] = b;
    return b;
  }
}

/**
 * Adds the tokens and field pairs of entries to Bloom members; one per
 * chunk built (it keeps the chunk's paths).
 *
 * @example
 * ```ts
 * const indexer = new EntryIndexer();
 * const members = new BloomMembers();
 * for (const record of records) indexer.add(record, members);
 * const bloom = members.build();
 * ```
 */
export class EntryIndexer {
  #members = new BloomMembers();
  #paths = 0;
  #roots = {
    data: new PathNode("data"),
    context: new PathNode("context"),
    device: new PathNode("device"),
    level: new PathNode("level"),
    auth: new PathNode("auth"),
    origin: new PathNode("origin"),
    appid: new PathNode("appid"),
  };
  /** Whether a pair found waits in {@linkcode EntryIndexer.#waiting}. */
  #defer = false;
  /** Hash states of the pairs waiting (two numbers each). */
  #waiting = new Int32Array(64);
  #waitingCount = 0;

  /**
   * Adds the members of `record` to `members`: its tokens, then its field
   * pairs, in the order of text.ts's `forEachText` and `forEachPair`.
   */
  add(record: LogRecord, members: BloomMembers): void {
    this.#members = members;
    this.#defer = true;
    this.#waitingCount = 0;
    this.#walk(record.data, this.#roots.data, 0, true);
    this.#walk(record.context, this.#roots.context, 0, true);
    this.#walk(record.device, this.#roots.device, 0, true);
    if (record.origin !== undefined) this.#addTokens(record.origin);
    if (record.appid !== undefined) this.#addTokens(record.appid);
    this.#defer = false;
    this.#walk(record.level, this.#roots.level, 0, false);
    this.#walk(record.auth, this.#roots.auth, 0, false);
    if (record.origin !== undefined) {
      this.#walk(record.origin, this.#roots.origin, 0, false);
    }
    if (record.appid !== undefined) {
      this.#walk(record.appid, this.#roots.appid, 0, false);
    }
    const waiting = this.#waiting;
    for (let i = 0; i < this.#waitingCount; i += 2) {
      members.addStates(waiting[i]!, waiting[i + 1]!);
    }
  }

  /**
   * Adds the tokens (when `text`) and the pairs (when `node`) of `value`,
   * `depth` objects deep under its root.
   */
  #walk(value: unknown, node: PathNode | null, depth: number, text: boolean) {
    if (typeof value === "string") {
      if (text) this.#addTokens(value);
      if (node) this.#addPair(node, value);
    } else if (typeof value === "number") {
      const finite = Number.isFinite(value);
      const valueText = finite ? String(value) : "null"; // as JSON has it
      if (text && finite) this.#addTokens(valueText);
      if (node) this.#addPair(node, valueText);
    } else if (typeof value === "object" && value !== null) {
      // An object deeper than a pair's path may be still holds text.
      const pairs = node !== null && depth + 1 < PAIR_MAX_DEPTH;
      if (!(pairs || text) || depth >= TEXT_MAX_DEPTH) return;
      if (Array.isArray(value)) {
        for (let i = 0; i < value.length; i++) {
          const child = pairs ? this.#child(node!, i) : null;
          this.#walk(value[i], child, depth + 1, text);
        }
      } else {
        const object = value as Record<string, unknown>;
        for (const name in object) {
          const child = pairs ? this.#child(node!, name) : null;
          this.#walk(object[name], child, depth + 1, text);
        }
      }
    } else if (node) {
      const valueText = value === null
        ? "null"
        : typeof value === "boolean"
        ? (value ? "true" : "false")
        : fieldText(value);
      if (valueText !== undefined) this.#addPair(node, valueText);
    }
  }

  /** Adds the tokens of `text` lower-cased. */
  #addTokens(text: string): void {
    const members = this.#members;
    let start = -1;
    for (let i = 0; i < text.length; i++) {
      const c = text.charCodeAt(i);
      if (c >= 128) return addTokensOf(text.toLowerCase(), members);
      if (isAsciiWord(c)) {
        if (start < 0) start = i;
      } else if (start >= 0) {
        members.addLowerAscii(text, start, i);
        start = -1;
      }
    }
    if (start >= 0) members.addLowerAscii(text, start, text.length);
  }

  /** Adds the pair `${node.path}=${text}`, or keeps it waiting. */
  #addPair(node: PathNode, text: string): void {
    if (text.length > PAIR_MAX_CHARS) return;
    let a = node.a;
    let b = node.b(text.length);
    for (let i = 0; i < text.length; i++) {
      const c = text.charCodeAt(i);
      a = hashAStep(a, c);
      b = hashBStep(b, c);
    }
    if (!this.#defer) return this.#members.addStates(a, b);
    if (this.#waitingCount === this.#waiting.length) {
      const grown = new Int32Array(this.#waiting.length * 2);
      grown.set(this.#waiting);
      this.#waiting = grown;
    }
    this.#waiting[this.#waitingCount++] = a;
    this.#waiting[this.#waitingCount++] = b;
  }

  /** The path of member `name` (or item) under `node`. */
  #child(node: PathNode, name: string | number): PathNode {
    let child = node.children?.get(name);
    if (child !== undefined) return child;
    child = new PathNode(`${node.path}.${name}`);
    if (this.#paths < MAX_PATHS) {
      this.#paths++;
      (node.children ??= new Map()).set(name, child);
    }
    return child;
  }
}

/** Adds the tokens of `lower`, an already lower-cased text. */
function addTokensOf(lower: string, members: BloomMembers): void {
  forEachTokenRange(lower, (start, end) => members.addRange(lower, start, end));
}

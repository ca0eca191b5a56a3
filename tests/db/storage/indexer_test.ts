/**
 * The indexer of a chunk's entries (db/storage/indexer.ts) adds exactly
 * the members db/storage/text.ts defines, in the same order, for values no
 * line holds too (records at hand may: non-finite numbers, holes,
 * `undefined`), and past the paths it keeps.
 *
 * @module
 */
import assert from "node:assert/strict";
import { bloomHash, BloomMembers } from "../../../db/storage/bloom.ts";
import { EntryIndexer, MAX_PATHS } from "../../../db/storage/indexer.ts";
import {
  forEachPair,
  forEachText,
  forEachToken,
} from "../../../db/storage/text.ts";
import type { LogRecord } from "../../../domain/entry.ts";

/** The members of `records` by text.ts, as first hashes, each once, in order. */
function reference(records: LogRecord[]): number[] {
  const seen = new Set<string>();
  const out: number[] = [];
  const add = (member: string) => {
    const { h1, h2 } = bloomHash(member);
    if (seen.has(`${h1} ${h2}`)) return;
    seen.add(`${h1} ${h2}`);
    out.push(h1);
  };
  for (const record of records) {
    forEachText(record, (text) => forEachToken(text.toLowerCase(), add));
    forEachPair(record, add);
  }
  return out;
}

function indexed(records: LogRecord[]): number[] {
  const indexer = new EntryIndexer();
  const members = new BloomMembers();
  for (const record of records) indexer.add(record, members);
  return [...members.hashes];
}

function record(fields: Partial<LogRecord>): LogRecord {
  return {
    id: "0193f0c2a1b4000000017f3a9c21",
    receivedAt: 0,
    level: "info",
    data: {},
    device: {},
    context: {},
    auth: "origin",
    ...fields,
  };
}

Deno.test("the indexer adds the members text.ts defines, in its order, for values of every kind", () => {
  const sparse: unknown[] = ["First"];
  sparse[3] = "Fourth";
  const records = [
    record({
      level: "ERROR",
      data: {
        nan: NaN,
        inf: -Infinity,
        undef: undefined,
        yes: true,
        no: false,
        nothing: null,
        empty: {},
        none: [],
        sparse,
        ZIP: "ZIP Zone AZ az @[`{",
        mixed: ["Zürich ZZ", 12.5, { "Ünï": "CODE" }],
      },
      device: "A Device As Text",
      context: { userId: "Ada", n: 1e-7 },
      origin: "https://Example.com",
    }),
    record({ appid: "com.Example.App", auth: "appid", data: { x: "ΣΑΣ" } }),
  ];
  assert.deepEqual(indexed(records), reference(records));
});

Deno.test("past MAX_PATHS paths in a chunk, pairs are hashed as they are met", () => {
  const wide = Object.fromEntries(
    Array.from({ length: MAX_PATHS + 100 }, (_, i) => [`key${i}`, `v${i % 7}`]),
  );
  const records = [
    record({ data: wide }),
    record({ data: { key5: "again", title: "Later" }, context: { a: "b" } }),
  ];
  assert.deepEqual(indexed(records), reference(records));
});

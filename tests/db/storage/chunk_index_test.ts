/**
 * What a chunk stores for its entries (db/storage/chunk.ts): each block's
 * Bloom filter holds exactly the tokens and field pairs that
 * db/storage/text.ts defines, hashed by `bloomHash`, and the members handed
 * to a coarse group are those, in the order first found; and a chunk built
 * from the same lines is, byte for byte, what it has been (its body,
 * filters, columns and summary): a faster indexing must not change a byte.
 *
 * @module
 */
import assert from "node:assert/strict";
import { inflateRawSync } from "node:zlib";
import {
  type Bloom,
  bloomAdd,
  bloomHas,
  bloomHash,
  createBloom,
} from "../../../db/storage/bloom.ts";
import {
  buildChunk,
  type BuildChunkOptions,
  type BuiltChunk,
  CHUNK_TARGET_BYTES,
  decodeChunkBlooms,
} from "../../../db/storage/chunk.ts";
import {
  forEachPair,
  forEachText,
  forEachToken,
  PAIR_MAX_CHARS,
  PAIR_MAX_DEPTH,
} from "../../../db/storage/text.ts";
import {
  decodeRecordLine,
  encodeRecordLine,
} from "../../../db/storage/lines.ts";
import type { LogRecord } from "../../../domain/entry.ts";
import { timeBound } from "../../../domain/ids.ts";

/** Texts of every kind the tokens meet: case, scripts, surrogates, digits. */
const TEXTS = [
  "GET /api/v1/Users answered 502 in 31 ms",
  "Straße", // ß lower-cases to itself, upper-cases to SS
  "İstanbul", // İ lower-cases to two units: i and a combining dot
  "ISTANBUL istanbul",
  "ΣΑΣ A.Σ b.Σ, ΌΣΟΣ", // final sigma: lower-casing depends on the context
  "emoji 😀 between🎉words",
  "𝐀𝐁c 𝐱y", // letters outside the BMP
  "snake_case and __dunder__ CamelCase",
  "ÉCOLE École école",
  "Ǆemal ǅ ǆ", // a title-case letter
  "tab\tnew\nline\r\u0000nul",
  "",
  "   ",
  "_",
  "x".repeat(PAIR_MAX_CHARS),
  "Y".repeat(PAIR_MAX_CHARS + 1),
  "mixed ASCII then ünïcode then ASCII again",
  "Ends with ASCII after Ωmega",
  "日本語のテキスト and 中文",
  "ﬁle ligature", // ﬁ has no single lower-case form change
  "KELVIN SIGN \u212a", // lower-cases to an ASCII "k"
  "ZIP Zone AZ az",
];
const NUMBERS = [0, -0, 42, -7, 3.25, 1e21, 1.5e-7, 2 ** 53, -1234567.875];

/** A value nested `depth` objects and arrays deep, ending in `leaf`. */
function nested(depth: number, leaf: unknown): unknown {
  let value = leaf;
  for (let d = depth; d > 0; d--) {
    value = d % 3 === 0 ? [value, `item ${d}`] : { [`Level${d}`]: value, n: d };
  }
  return value;
}

/** Deterministic varied records (the same every run), ids increasing. */
function variedRecords(n: number): LogRecord[] {
  const t0 = Date.UTC(2026, 2, 1, 12);
  return Array.from({ length: n }, (_, i) => {
    const text = (k: number) => TEXTS[(i * 5 + k * 3) % TEXTS.length]!;
    const receivedAt = t0 + i * 250;
    const data: Record<string, unknown> = {
      title: text(0),
      message: `${text(1)} #${i} ${text(2)}`,
      status: [200, 404, 502, "503", null][i % 5],
      durationMs: NUMBERS[i % NUMBERS.length],
      ok: i % 2 === 0,
      tags: [text(3), i, { Key: text(4) }, [true, null]],
      "ключ": text(5),
      "a.b": "a member name with a dot",
    };
    if (i % 4 === 0) {
      data.deep = nested(
        PAIR_MAX_DEPTH + (i >> 2) % 4,
        `DeepLeaf${(i >> 2) % 4}`,
      );
    }
    if (i % 50 === 0) data.deeper = nested(60, "within the text depth");
    if (i % 50 === 25) data.deeper = nested(70, "past the text depth");
    if (i % 9 === 0) data.long = text(1).repeat(3);
    // An own member named "__proto__", as JSON.parse makes it.
    const withProto = i % 11 === 0
      ? JSON.parse('{"__proto__":{"x":"own proto member"}}')
      : {};
    const record: LogRecord = {
      id: timeBound(receivedAt) + i.toString(16).padStart(8, "0") + "5eed0000",
      // Every third entry was received a little after its id's time.
      receivedAt: receivedAt + (i % 3 === 0 ? 90_000 : 0),
      level: ["info", "warning", "error", "critical", "Info"][i % 5]!,
      data: Object.defineProperties(
        data,
        Object.getOwnPropertyDescriptors(withProto),
      ),
      device: i % 13 === 0 ? "Plain Device String" : {
        os: ["Linux", "macOS 15", "Windows 11"][i % 3],
        screen: "1920x1080",
      },
      context: {
        userId: `User_${i % 37}`,
        service: ["Payments", "ÜberService", "search"][i % 3],
        release: "2026.8.0",
        environment: i % 6 === 0 ? "Production" : "staging",
        nested: { Level1: { Level2: [text(7), NUMBERS[i % 4]] } },
      },
      auth: i % 2 === 0 ? "origin" : "appid",
    };
    if (i % 2 === 0) record.origin = "https://Shop.example.com/Straße";
    else record.appid = i % 4 === 1 ? "com.Example.İOS" : "com.example.android";
    return record;
  });
}

const RECORDS = variedRecords(900);
const LINES = RECORDS.map(encodeRecordLine);
/** The options `mergeGroup` (db/storage/merge.ts) builds with. */
const MERGER: BuildChunkOptions = {
  tier: 3,
  finalAtBytes: CHUNK_TARGET_BYTES / 2,
};

/** The lines of each block of a built chunk, inflated from its body. */
function blockLines(chunk: BuiltChunk): string[][] {
  const parts = [chunk.head.subarray(2), ...chunk.rest];
  const body = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    body.set(p, at);
    at += p.length;
  }
  const view = new DataView(body.buffer);
  const blocks: string[][] = [];
  at = 1 + 4 * body[0]!;
  for (let i = 0; i < body[0]!; i++) {
    const size = view.getUint32(1 + 4 * i, true);
    const text = new TextDecoder().decode(
      inflateRawSync(body.subarray(at, at + size)),
    );
    blocks.push(text.split("\n"));
    at += size;
  }
  return blocks;
}

/**
 * The members of a block as db/storage/text.ts defines them, as strings,
 * each once, in the order first found: per entry its text's tokens, then
 * its field pairs.
 */
function referenceMembers(lines: string[]): string[] {
  const members = new Set<string>();
  for (const line of lines) {
    const record = decodeRecordLine(line);
    forEachText(
      record,
      (text) => forEachToken(text.toLowerCase(), (t) => members.add(t)),
    );
    forEachPair(record, (pair) => members.add(pair));
  }
  return [...members];
}

/** A filter of `members` built from their `bloomHash`, as BloomMembers sizes it. */
function referenceBloom(members: string[]): Bloom {
  const hashes = new Map<string, { h1: number; h2: number }>();
  for (const m of members) {
    const hash = bloomHash(m);
    hashes.set(`${hash.h1} ${hash.h2}`, hash);
  }
  const bloom = createBloom(hashes.size);
  for (const hash of hashes.values()) bloomAdd(bloom, hash);
  return bloom;
}

Deno.test("each block's filter holds exactly its entries' tokens and field pairs", async (t) => {
  for (
    const [name, options] of [["parsed from the lines", {}], [
      "records at hand",
      { records: RECORDS },
    ]] as const
  ) {
    await t.step(name, () => {
      const members = new Set<number>();
      const chunk = buildChunk(LINES, { ...MERGER, ...options, members });
      const blocks = blockLines(chunk);
      assert.ok(blocks.length >= 2, `${blocks.length} blocks`);
      assert.deepEqual(blocks.flat(), LINES);
      const { blooms } = decodeChunkBlooms(chunk.bloomValue, "x");
      assert.equal(blooms.length, blocks.length);
      const expected = new Set<number>();
      blocks.forEach((lines, b) => {
        const reference = referenceMembers(lines);
        for (const m of reference) {
          assert.ok(bloomHas(blooms[b]!, bloomHash(m)), m);
          expected.add(bloomHash(m).h1);
        }
        assert.deepEqual(blooms[b], referenceBloom(reference));
      });
      // The coarse group's members: each first hash once, in the order found.
      assert.deepEqual([...members], [...expected]);
    });
  }
});

Deno.test("the reference members cover what the varied lines hold", () => {
  const members = new Set(referenceMembers(LINES));
  for (
    const m of [
      "straße",
      "stanbul", // "İstanbul" lower-cased: "i", a combining dot, "stanbul"
      "ǆemal", // a title-case letter lower-cased
      "σας", // "ΣΑΣ" lower-cased ends in a final sigma
      "όσος",
      "ς", // "A.Σ": a final sigma after a case-ignorable full stop
      "𝐀𝐁c",
      "__dunder__",
      "502",
      "1e", // 1e21 as text is "1e+21"
      "data.durationMs=1e+21",
      "data.status=502",
      "data.status=503",
      "data.status=null",
      "data.ok=true",
      "data.tags.1=0",
      "data.tags.3.0=true",
      "data.ключ=Straße",
      "data.__proto__.x=own proto member",
      "device=Plain Device String",
      "level=Info",
      "appid=com.Example.İOS",
      `data.title=${"x".repeat(PAIR_MAX_CHARS)}`,
    ]
  ) assert.ok(members.has(m), m);
  assert.ok(!members.has(`data.title=${"Y".repeat(PAIR_MAX_CHARS + 1)}`));
  assert.ok(members.has("y".repeat(PAIR_MAX_CHARS + 1)));
  // Deep values give tokens, but no pairs past PAIR_MAX_DEPTH segments,
  // and no tokens past 64 objects.
  for (let d = 0; d < 4; d++) assert.ok(members.has(`deepleaf${d}`));
  assert.ok(members.has("within"));
  assert.ok(!members.has("past"));
  const depths = [...members].filter((m) => m.includes("="))
    .map((m) => m.slice(0, m.indexOf("=")).split(".").length);
  assert.equal(Math.max(...depths), PAIR_MAX_DEPTH);
});

/** SHA-256 of every value a build stores, and its members, in hex. */
async function digest(chunk: BuiltChunk, members?: Set<number>) {
  const parts = [
    chunk.head,
    ...chunk.rest,
    chunk.summaryValue,
    chunk.bloomValue,
    ...(chunk.columns ? [chunk.columns.head, ...chunk.columns.rest] : []),
    new Uint8Array(new Uint32Array([...members ?? []]).buffer),
  ];
  const all = new Uint8Array(parts.reduce((n, p) => n + p.length + 4, 0));
  const view = new DataView(all.buffer);
  let at = 0;
  for (const p of parts) {
    view.setUint32(at, p.length, true);
    all.set(p, at + 4);
    at += 4 + p.length;
  }
  const hash = await crypto.subtle.digest("SHA-256", all);
  return Array.from(
    new Uint8Array(hash),
    (b) => b.toString(16).padStart(2, "0"),
  )
    .join("");
}

Deno.test("a chunk built from these lines stores exactly the bytes recorded for them", async (t) => {
  const cases: [string, BuildChunkOptions, string][] = [
    [
      "as the merger builds it",
      { ...MERGER, members: new Set() },
      "17e82e509913aa42159f4a86d1c2acbd42613d8d6e9a079f842b3eca924ee0dd",
    ],
    [
      "as the consumer builds it",
      { records: RECORDS, fast: true, tokens: false },
      "05d82785ecf6808f275c6a56742319d3bc82c581cce1b97a29d9678d36010927",
    ],
    [
      "with its filters, without members",
      {},
      "6e92a6d3e18f45d74f5082f0675d07751ce26b5e8eb61efef48091a155048261",
    ],
  ];
  for (const [name, options, expected] of cases) {
    await t.step(name, async () => {
      const chunk = buildChunk(LINES, options);
      assert.equal(await digest(chunk, options.members), expected);
    });
  }
});

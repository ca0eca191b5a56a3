/**
 * Chunk columns (db/storage/columns.ts): what a chunk's columns hold per
 * entry, exact JSON values (502 apart from "502", missing apart from
 * null), a field with too many values left out, a value too large for
 * one KV value sliced, and the columns written and deleted with their
 * chunk by the consumer and the merger.
 *
 * @module
 */
import assert from "node:assert/strict";
import type { LogRecord } from "../../../domain/entry.ts";
import { buildChunk } from "../../../db/storage/chunk.ts";
import {
  ColumnsBuilder,
  decodeColumnsBody,
  MAX_COLUMN_VALUES,
  readColumns,
} from "../../../db/storage/columns.ts";
import { encodeRecordLine } from "../../../db/storage/lines.ts";
import { setChunk } from "../../../db/storage/write.ts";
import { logColumnsKey, logColumnsPrefix } from "../../../db/keys.ts";
import { harnessTest, ORIGIN, postEntries } from "../../_helpers/harness.ts";
import { inflateRawSync } from "node:zlib";
import {
  HOUR,
  kvTest,
  mergeAt,
  noise,
  queryProject,
  recordAt,
  storeBatch,
  T0,
} from "../../_helpers/query.ts";

/** Decodes what a builder built (a single value). */
function built(records: LogRecord[]) {
  const builder = new ColumnsBuilder();
  for (const r of records) builder.add(r);
  const value = builder.build()!;
  assert.equal(value.rest.length, 0);
  return decodeColumnsBody(inflateRawSync(value.head.subarray(2)));
}

Deno.test("columns hold each entry's minute, level and exact field values", () => {
  const records = [
    recordAt(T0 + 5_000, { data: { title: "a", status: 502 } }),
    recordAt(T0 + 61_000, {
      level: "error",
      data: { title: "b", status: "502" },
      context: { service: "api", userId: null },
    }),
    recordAt(T0 + 3 * 60_000, {
      level: "warning",
      context: { service: "api" },
    }),
  ];
  const columns = built(records);
  assert.equal(columns.count, 3);
  assert.equal(columns.baseMs, T0);
  assert.ok(columns.timeExact);
  assert.deepEqual([...columns.minutes], [0, 1, 3]);
  assert.deepEqual(
    [...columns.levelCodes].map((c) => columns.levels[c]),
    ["info", "error", "warning"],
  );
  const value = (path: string, i: number) => {
    const field = columns.fields.get(path)!;
    return field.values[field.codes[i]!];
  };
  assert.deepEqual([0, 1, 2].map((i) => value("data.status", i)), [
    502,
    "502",
    undefined,
  ]);
  assert.deepEqual([0, 1, 2].map((i) => value("context.userId", i)), [
    undefined,
    null,
    undefined,
  ]);
  assert.deepEqual([0, 1, 2].map((i) => value("context.service", i)), [
    undefined,
    "api",
    "api",
  ]);
  assert.equal(value("device.os", 0), "Linux");
});

Deno.test("objects, arrays and texts that look like them keep their values", () => {
  const values = [{ a: 1 }, '{"a":1}', "\0x", ["\0x"], "\0s", true, 0];
  const columns = built(
    values.map((release, i) => recordAt(T0 + i, { context: { release } })),
  );
  const field = columns.fields.get("context.release")!;
  assert.deepEqual([...field.codes].map((c) => field.values[c]), values);
});

Deno.test("a field with too many distinct values is left out of a chunk's columns", () => {
  const records = Array.from(
    { length: MAX_COLUMN_VALUES + 1 },
    (_, i) =>
      recordAt(T0 + i, { context: { userId: `u${i}`, service: "api" } }),
  );
  const columns = built(records);
  assert.deepEqual(columns.omitted, ["context.userId"]);
  assert.equal(columns.fields.has("context.userId"), false);
  assert.equal(columns.fields.get("context.service")!.values.length, 2);
  const fewer = built(records.slice(0, MAX_COLUMN_VALUES));
  assert.deepEqual(fewer.omitted, []);
});

kvTest(
  "columns too large for one value are sliced and read back whole",
  async (kv) => {
    const projectId = await queryProject(kv);
    const records = Array.from(
      { length: 4000 },
      (_, i) =>
        recordAt(T0 + i, {
          context: { userId: noise(i, 12), service: noise(i + 9, 12) },
          device: { os: noise(i + 5, 12), browser: noise(i + 7, 12) },
        }),
    );
    const chunk = buildChunk(records.map(encodeRecordLine), { records });
    assert.ok(chunk.columns!.rest.length > 0, "sliced");
    assert.equal(chunk.summary.columns, 1 + chunk.columns!.rest.length);
    const op = kv.atomic();
    setChunk(op, projectId, chunk, { expireIn: HOUR });
    assert.ok((await op.commit()).ok);
    const { lastId } = chunk.summary;
    const value = (await kv.get(logColumnsKey(projectId, lastId))).value;
    const columns = await readColumns(kv, projectId, lastId, value);
    const field = columns.fields.get("context.userId")!;
    assert.deepEqual(
      [...field.codes].map((c) => field.values[c]),
      records.map((r) => r.context.userId),
    );
  },
);

kvTest(
  "columns are written with each chunk and deleted with it by the merger",
  async (kv) => {
    const projectId = await queryProject(kv);
    for (let b = 0; b < 20; b++) {
      await storeBatch(
        kv,
        projectId,
        Array.from(
          { length: 5 },
          (_, i) =>
            recordAt(T0 + b * 1000 + i, { context: { service: `s${i}` } }),
        ),
      );
    }
    const keys = async (name: string) =>
      (await Array.fromAsync(kv.list({ prefix: [name, projectId] })))
        .map((e) => String(e.key[2]));
    assert.equal((await keys("log_columns")).length, 20);
    const result = await mergeAt(kv, projectId, T0 + HOUR);
    assert.ok(result.merges > 0);
    const summaries = await keys("log_summaries");
    assert.ok(summaries.length < 20);
    assert.deepEqual(await keys("log_columns"), summaries);
    assert.deepEqual(
      await Array.fromAsync(kv.list({ prefix: ["log_column_slices"] })),
      [],
    );
  },
);

harnessTest(
  "the consumer's first write leaves columns to the merger, which writes them with the merged chunk",
  async (h) => {
    const project = await h.project([ORIGIN]);
    await postEntries(h, project.id, { origin: ORIGIN, count: 20 });
    await h.process();
    const columns = async () =>
      (await Array.fromAsync(
        h.kv.list({ prefix: logColumnsPrefix(project.id) }),
      ))
        .length;
    assert.equal(await columns(), 0, "no columns at the first write");
    assert.equal((await h.logs(project.id)).length, 20);
    h.clock.advance(60_000);
    await mergeAt(h.kv, project.id, h.clock.now());
    assert.ok(await columns() > 0, "the merged chunk has its columns");
    assert.equal((await h.logs(project.id)).length, 20);
  },
);

/**
 * Upgrading a database written by a version that stored pages: the merger
 * makes every page a chunk (all three forms earlier versions wrote), so no
 * entry is lost, and the histogram counts the entries of pages that had no
 * counters.
 */
import assert from "node:assert/strict";
import {
  batchPartKey,
  legacyPageKey,
  legacyPagePartKey,
  legacyPagePrefixes,
} from "../../../db/keys.ts";
import { encodeJson } from "../../../db/kv.ts";
import { encodeRecordLine } from "../../../db/lines.ts";
import {
  countStoredEntries,
  histogram,
  listLogs,
  mergeProject,
} from "../../../db/query/mod.ts";
import type { LogRecord, QueuedEntry } from "../../../domain/entry.ts";
import {
  HOUR,
  queryProjectTest,
  recordAt,
  sortedIds,
  T0,
} from "../../_helpers/query.ts";

const encoder = new TextEncoder();

queryProjectTest(
  "pages of earlier versions become chunks, every entry kept and counted",
  async (kv, projectId) => {
    // 1. A page as an object (the first versions), split in two parts, uncounted.
    const objectPage = [0, 200, 900].map((dt) =>
      recordAt(T0 + dt, { level: "error", data: { big: "x".repeat(200) } })
    );
    const bytes = encoder.encode(JSON.stringify(objectPage));
    const first = objectPage[0]!.id;
    await kv.set(legacyPageKey(projectId, first), {
      head: bytes.slice(0, 300),
      parts: 2,
      count: 3,
      last: objectPage[2]!.id,
    });
    await kv.set(legacyPagePartKey(projectId, first, 1), bytes.slice(300));
    // 2. A page of JSON lines behind a 4-byte header.
    const linesPage = [60_000, 60_500].map((dt) => recordAt(T0 + dt));
    await kv.set(
      legacyPageKey(projectId, linesPage[0]!.id),
      new Uint8Array([
        1,
        1,
        2,
        0,
        ...encoder.encode(linesPage.map(encodeRecordLine).join("\n")),
      ]),
    );
    // 3. A page that refers to its batch's bytes.
    const refRecords = [120_000, 120_100].map((dt) =>
      recordAt(T0 + dt, { auth: "appid", appid: "com.example.app" })
    );
    const entries: QueuedEntry[] = refRecords.map((r) => ({
      id: r.id,
      level: r.level,
      data: r.data,
      device: r.device,
      context: r.context,
      appid: "com.example.app",
      receivedAt: r.receivedAt,
      projectId,
    }));
    await kv.set(
      batchPartKey("b1", 0),
      encoder.encode(JSON.stringify(entries)),
    );
    await kv.set(
      legacyPageKey(projectId, refRecords[0]!.id),
      new Uint8Array([
        2,
        1,
        2,
        0,
        ...encodeJson({ batch: "b1", parts: 1, auth: "appid" }),
      ]),
    );
    const all: LogRecord[] = [...objectPage, ...linesPage, ...refRecords];

    await mergeProject(kv, projectId, { now: T0 + HOUR });
    const listed = await Array.fromAsync(listLogs(kv, projectId));
    assert.deepEqual(listed.map((r) => r.id), sortedIds(all));
    assert.deepEqual(
      listed.find((r) => r.id === refRecords[0]!.id)?.appid,
      "com.example.app",
    );
    assert.equal(await countStoredEntries(kv, projectId), all.length);
    for (const prefix of legacyPagePrefixes(projectId)) {
      assert.deepEqual(await Array.fromAsync(kv.list({ prefix })), []);
    }
    assert.equal((await kv.get(batchPartKey("b1", 0))).value, null);
    // The object page's entries had no counters: they are counted now.
    const h = await histogram(kv, projectId, { since: T0, until: T0 + HOUR });
    const errors = h.buckets.reduce((n, b) => n + (b.counts.error ?? 0), 0);
    assert.equal(errors, 3);
  },
);

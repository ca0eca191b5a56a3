/**
 * Error groups, written by the consumer beside the entries it stores: counts,
 * first and last seen, hourly counts, the cap per batch, and the query field
 * that lists one group's entries.
 *
 * @module
 */
import assert from "node:assert/strict";
import { RecordedAtomic } from "../../db/atomic.ts";
import {
  addErrorGroups,
  listGroups,
  MAX_GROUPS_PER_BATCH,
  MAX_GROUPS_READ,
  pruneErrorGroupHours,
  SPARK_HOURS,
} from "../../db/error_groups.ts";
import { errorGroupKey } from "../../db/keys.ts";
import { encodeJson } from "../../db/kv.ts";
import { deleteProject } from "../../db/deletion.ts";
import { allowValue } from "../../db/projects.ts";
import { replayRejected } from "../../queue/replay.ts";
import { listViews, saveView } from "../../db/views.ts";
import { parseQuery, queryLogs } from "../../db/query/mod.ts";
import type { LogRecord } from "../../domain/entry.ts";
import { fingerprintOf } from "../../domain/fingerprint.ts";
import { createId } from "../../domain/ids.ts";
import {
  harnessTest,
  kvTest,
  ORIGIN,
  postQueued,
  randomEntry,
} from "../_helpers/harness.ts";

const HOUR = 3_600_000;

function record(at: number, level: string, data: Record<string, unknown>) {
  return {
    id: createId(at),
    receivedAt: at,
    level,
    data,
    device: {},
    context: {},
    auth: "origin",
    origin: ORIGIN,
  } satisfies LogRecord;
}

harnessTest(
  "the consumer groups error and critical entries by fingerprint with counts and first and last seen",
  async (h) => {
    const project = await h.project();
    const start = h.clock.now();
    const send = async (level: string, data: Record<string, unknown>) => {
      await postQueued(
        h,
        randomEntry({ projectId: project.id, level, data }),
        { Origin: ORIGIN },
      );
    };
    await send("error", { title: "Order 12 failed" });
    await send("info", { title: "Order 13 failed" });
    await h.process();
    h.clock.advance(2 * HOUR);
    await send("critical", { title: "Order 14 failed" });
    await send("error", {
      message: "TypeError: x is undefined",
      stack: "TypeError: x is undefined\n    at pay (app.js:1:2)",
    });
    await h.process();
    const groups = await listGroups(h.kv, project.id, h.clock.now());
    assert.equal(groups.length, 2);
    const orders = groups.find((g) => g.title === "Order <n> failed")!;
    assert.equal(orders.count, 2, "the info entry is not grouped");
    assert.equal(orders.firstSeen, start);
    assert.equal(orders.lastSeen, start + 2 * HOUR);
    assert.equal(orders.level, "critical");
    assert.equal(orders.sampleTitle, "Order 14 failed");
    assert.equal(orders.topFrame, null);
    assert.equal(orders.isNew, true);
    assert.equal(orders.hourly.length, SPARK_HOURS);
    assert.equal(orders.hourly.at(-1), 1);
    assert.equal(orders.hourly.at(-3), 1);
    assert.equal(orders.hourly.reduce((a, b) => a + b), 2);
    const typeError = groups.find((g) => g.topFrame === "app.js:pay")!;
    assert.equal(typeError.count, 1);
    const logs = await h.logs(project.id);
    assert.equal(typeError.sampleId, logs.at(-1)!.id);
    // Processing the batches again stores nothing and counts nothing again.
    await h.process();
    const again = await listGroups(h.kv, project.id, h.clock.now());
    assert.deepEqual(again.map((g) => g.count), groups.map((g) => g.count));
  },
);

harnessTest(
  "a group first seen more than a day ago is not new, and old hours leave the sparkline",
  async (h) => {
    const project = await h.project();
    const t0 = h.clock.now();
    const op = h.kv.atomic();
    addErrorGroups(op, project.id, [record(t0, "error", { title: "Boom" })]);
    await op.commit();
    const later = t0 + 30 * HOUR;
    const [group] = await listGroups(h.kv, project.id, later);
    assert.equal(group!.isNew, false);
    assert.equal(group!.count, 1);
    assert.deepEqual(group!.hourly, new Array(SPARK_HOURS).fill(0));
    assert.equal(await pruneErrorGroupHours(h.kv, project.id, later), 1);
    const left = await Array.fromAsync(
      h.kv.list({ prefix: errorGroupKey("hours", project.id) }),
    );
    assert.equal(left.length, 0);
    assert.equal((await listGroups(h.kv, project.id, later))[0]!.count, 1);
  },
);

Deno.test("one batch adds to at most 20 groups, the largest, and says how many mutations it added", () => {
  const t0 = Date.UTC(2026, 0, 1);
  const records: LogRecord[] = [];
  for (let g = 0; g < 30; g++) {
    // Group g has 1 entry, except the last ten, which have 3.
    for (let n = 0; n < (g >= 20 ? 3 : 1); n++) {
      records.push(
        record(t0 + g * 10 + n, "error", { title: `Kind ${"x".repeat(g)}` }),
      );
    }
  }
  const op = new RecordedAtomic();
  const added = addErrorGroups(op, "p1", records);
  assert.equal(MAX_GROUPS_PER_BATCH, 20);
  assert.equal(added, 20 * 5, "4 per group and one hour each");
  assert.equal(op.mutations, added);
});

harnessTest(
  "a fingerprint query lists the entries of one group only",
  async (h) => {
    const project = await h.project();
    for (const title of ["Order 1 failed", "Order 2 failed", "Disk full"]) {
      await postQueued(
        h,
        randomEntry({ projectId: project.id, level: "error", data: { title } }),
        { Origin: ORIGIN },
      );
    }
    await h.process();
    const fp = fingerprintOf({ data: { title: "Order 3 failed" } }).fingerprint;
    const page = await queryLogs(h.kv, project.id, {
      filter: parseQuery(`level>=error fingerprint:${fp}`),
    });
    assert.deepEqual(
      page.records.map((r) => r.data.title).sort(),
      ["Order 1 failed", "Order 2 failed"],
    );
  },
);

harnessTest(
  "deleting a project deletes its error groups and saved views",
  async (h) => {
    const project = await h.project();
    const op = h.kv.atomic();
    addErrorGroups(op, project.id, [
      record(h.clock.now(), "error", { title: "A" }),
    ]);
    await op.commit();
    await saveView(h.kv, project.id, { name: "Errors", query: "?level=error" });
    assert.equal((await listGroups(h.kv, project.id, h.clock.now())).length, 1);
    await deleteProject(h.kv, project.id);
    assert.deepEqual(await listGroups(h.kv, project.id, h.clock.now()), []);
    assert.deepEqual(await listViews(h.kv, project.id), []);
    for (const part of ["count", "first", "last", "hours"] as const) {
      const left = await Array.fromAsync(
        h.kv.list({ prefix: errorGroupKey(part, project.id) }),
      );
      assert.equal(left.length, 0, part);
    }
  },
);

harnessTest("an error entry stored by a replay joins its group", async (h) => {
  const project = await h.project([]);
  await postQueued(
    h,
    randomEntry({
      projectId: project.id,
      level: "error",
      data: { title: "Checkout 7 failed" },
    }),
    { Origin: ORIGIN },
  );
  await h.process();
  assert.deepEqual(await listGroups(h.kv, project.id, h.clock.now()), []);
  await allowValue(h.kv, project.id, ORIGIN);
  const [result] = await replayRejected(h.kv, project.id, undefined, {
    now: h.clock.now,
  });
  assert.equal(result!.outcome, "stored");
  const [group] = await listGroups(h.kv, project.id, h.clock.now());
  assert.equal(group!.title, "Checkout <n> failed");
  assert.equal(group!.count, 1);
});

kvTest(
  "a listing of error groups reads at most MAX_GROUPS_READ of them, however many a sender made",
  async (kv) => {
    const projectId = "p";
    for (let i = 0; i < MAX_GROUPS_READ + 50; i += 250) {
      const op = kv.atomic();
      for (let j = i; j < i + 250; j++) {
        const fingerprint = `f${String(j).padStart(6, "0")}`;
        const key = (part: "record" | "count" | "first" | "last") =>
          errorGroupKey(part, projectId, fingerprint);
        op.set(
          key("record"),
          encodeJson({
            title: fingerprint,
            topFrame: "",
            sampleId: "x",
            level: "error",
            sampleTitle: "",
          }),
        );
        op.set(key("count"), new Deno.KvU64(1n));
        op.set(key("first"), new Deno.KvU64(BigInt(j)));
        op.set(key("last"), new Deno.KvU64(BigInt(j)));
      }
      assert.ok((await op.commit()).ok);
    }
    const groups = await listGroups(kv, projectId, 1_000_000);
    assert.equal(groups.length, MAX_GROUPS_READ);
    assert.equal(groups[0]!.lastSeen, MAX_GROUPS_READ - 1);
  },
);

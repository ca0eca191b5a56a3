/**
 * Error groups, written by the consumer beside the entries it stores: counts,
 * first and last seen, hourly counts, the cap per batch, the query field
 * that lists one group's entries, the keyed group ids, a public fingerprint
 * no sender can give another group's (and groups stored under the former
 * one), the bound per project, expiry and the listing by last seen.
 *
 * @module
 */
import assert from "node:assert/strict";
import { RecordedAtomic } from "../../db/atomic.ts";
import {
  addErrorGroups,
  groupKeyOf,
  MAX_GROUPS,
  MAX_GROUPS_PER_BATCH,
  prepareErrorGroups,
  RECOUNT_MS,
  SPARK_HOURS,
  sweepErrorGroups,
} from "../../db/error_groups.ts";
import {
  findGroup,
  groupCursor,
  GroupCursorError,
  listGroups,
} from "../../db/error_group_reads.ts";
import { readGroupDetail } from "../../db/error_group_detail.ts";
import { changeTriage, readTriage } from "../../db/error_group_triage.ts";
import {
  alertHistoryKey,
  alertRuleKey,
  alertWaitingKey,
  errorGroupCountKey,
  errorGroupIdKey,
  errorGroupKey,
  errorGroupReleaseKey,
  errorGroupSeenKey,
  fingerprintKeyKey,
  projectKey,
  releaseCountKey,
} from "../../db/keys.ts";
import { mergeProject } from "../../db/storage/merge.ts";
import { recordAlertAttempt } from "../../db/alerts.ts";
import { decodeJson, encodeJson } from "../../db/kv.ts";
import { acceptEntries } from "../../queue/accept.ts";
import { deleteProject } from "../../db/deletion.ts";
import { allowValue, setRetention } from "../../db/projects.ts";
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
  projectTest,
  randomEntry,
} from "../_helpers/harness.ts";

const HOUR = 3_600_000;
const DAY = 24 * HOUR;

/** Groups `records` as the consumer does, in a commit of their own. */
async function group(
  kv: Deno.Kv,
  projectId: string,
  records: LogRecord[],
  { now = records[0]?.receivedAt ?? 0, retentionMs = 30 * DAY } = {},
): Promise<void> {
  const op = kv.atomic();
  addErrorGroups(
    op,
    await prepareErrorGroups(kv, projectId, records, { now, retentionMs }),
  );
  assert.ok((await op.commit()).ok);
}

async function rows(kv: Deno.Kv, prefix: Deno.KvKey): Promise<number> {
  return (await Array.fromAsync(kv.list({ prefix }))).length;
}

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

projectTest(
  "the consumer groups error and critical entries by fingerprint with counts and first and last seen",
  async (h, project) => {
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

projectTest(
  "a group first seen more than a day ago is not new, and old hours leave the sparkline",
  async (h, project) => {
    const t0 = h.clock.now();
    await group(h.kv, project.id, [record(t0, "error", { title: "Boom" })]);
    const later = t0 + 30 * HOUR;
    const [found] = await listGroups(h.kv, project.id, later);
    assert.equal(found!.isNew, false);
    assert.equal(found!.count, 1);
    assert.deepEqual(found!.hourly, new Array(SPARK_HOURS).fill(0));
    await group(h.kv, project.id, [record(later, "error", { title: "Boom" })]);
    const [again] = await listGroups(h.kv, project.id, later);
    assert.equal(again!.count, 2);
    assert.equal(again!.lastSeen, later);
    assert.deepEqual(again!.hourly, [...new Array(SPARK_HOURS - 1).fill(0), 1]);
    assert.equal(await rows(h.kv, errorGroupSeenKey(project.id)), 1);
  },
);

kvTest(
  "one batch adds to at most 20 groups, the largest, and says how many mutations it added",
  async (kv) => {
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
    const plan = await prepareErrorGroups(kv, "p1", records, {
      now: t0,
      retentionMs: DAY,
    });
    const added = addErrorGroups(op, plan);
    assert.equal(MAX_GROUPS_PER_BATCH, 20);
    assert.equal(
      added,
      20 * 4,
      "a group, its count, its index row and its id by fingerprint each",
    );
    assert.equal(op.mutations, added);
    assert.equal(
      plan.groups.filter((g) => g.after.count === 3).length,
      10,
      "the ten largest are all kept",
    );
  },
);

projectTest(
  "a fingerprint query lists the entries of one group only",
  async (h, project) => {
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

projectTest(
  "deleting a project deletes its error groups, their key, saved views and alert rules with their history: no key names it after",
  async (h, project) => {
    await group(h.kv, project.id, [
      record(h.clock.now(), "error", { title: "A" }),
    ]);
    await saveView(h.kv, project.id, { name: "Errors", query: "?level=error" });
    // A rule with a delivery in its history and one waiting.
    await h.kv.set(alertRuleKey(project.id, "r1"), encodeJson({ id: "r1" }));
    await h.kv.set(alertWaitingKey(project.id, "r1", "d0"), encodeJson(0));
    await recordAlertAttempt(h.kv, project.id, "r1", "a1", {
      deliveryId: "d1",
      at: h.clock.now(),
      attempt: 1,
      count: 1,
      status: 200,
      outcome: "delivered",
    });
    assert.equal((await listGroups(h.kv, project.id, h.clock.now())).length, 1);
    assert.ok((await h.kv.get(fingerprintKeyKey(project.id))).value !== null);
    await deleteProject(h.kv, project.id);
    assert.deepEqual(await listGroups(h.kv, project.id, h.clock.now()), []);
    assert.deepEqual(await listViews(h.kv, project.id), []);
    // No key names the project any more.
    const left: string[] = [];
    for await (const entry of h.kv.list({ prefix: [] })) {
      if (entry.key.includes(project.id)) left.push(JSON.stringify(entry.key));
    }
    assert.deepEqual(left, []);
    // An attempt that ends after the deletion writes nothing.
    await recordAlertAttempt(h.kv, project.id, "r1", "a2", {
      deliveryId: "d2",
      at: h.clock.now(),
      attempt: 1,
      count: 1,
      status: 200,
      outcome: "delivered",
    });
    assert.equal(await rows(h.kv, alertHistoryKey(project.id, "r1")), 0);
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
  "a group is named by a keyed hash: the same error has other ids in other projects, and one id in its own",
  async (kv) => {
    const at = Date.UTC(2026, 0, 1);
    const boom = () => record(at, "error", { title: "Boom 1" });
    // A project deleted before its first error keeps no key.
    await groupKeyOf(kv, "gone");
    assert.equal((await kv.get(fingerprintKeyKey("gone"))).versionstamp, null);
    for (const id of ["a", "b"]) {
      await kv.set(projectKey(id), encodeJson({ id }));
    }
    const [keyA, keyA2] = await Promise.all([
      groupKeyOf(kv, "a"),
      groupKeyOf(kv, "a"),
    ]);
    assert.deepEqual(keyA, keyA2);
    assert.deepEqual((await kv.get(fingerprintKeyKey("a"))).value, keyA);
    await group(kv, "a", [boom()]);
    await group(kv, "a", [boom()]);
    await group(kv, "b", [boom()]);
    const [a] = await listGroups(kv, "a", at);
    const [b] = await listGroups(kv, "b", at);
    assert.equal(a!.count, 2);
    assert.equal(a!.fingerprint, b!.fingerprint, "the public fingerprint");
    assert.notEqual(a!.id, b!.id);
    assert.match(a!.id, /^[0-9a-f]{16}$/);
  },
);

kvTest(
  "a page of groups holds the most recently seen, and its cursor leads to the next page",
  async (kv) => {
    const at = Date.UTC(2026, 0, 1);
    for (let i = 0; i < 5; i++) {
      await group(kv, "p", [
        record(at + i, "error", { title: `Kind ${"x".repeat(i)}` }),
      ]);
    }
    const first = await listGroups(kv, "p", at, { limit: 2 });
    assert.deepEqual(first.map((g) => g.lastSeen), [at + 4, at + 3]);
    const second = await listGroups(kv, "p", at, {
      limit: 2,
      after: groupCursor(first.at(-1)!),
    });
    assert.deepEqual(second.map((g) => g.lastSeen), [at + 2, at + 1]);
    await assert.rejects(
      listGroups(kv, "p", at, { after: "12.nope" }),
      GroupCursorError,
    );
  },
);

/** Groups one error, "Old", of project "p" under a week's retention. */
async function groupOldError(
  kv: Deno.Kv,
): Promise<{ t0: number; retentionMs: number }> {
  const t0 = Date.UTC(2026, 0, 1);
  const retentionMs = 7 * DAY;
  await group(kv, "p", [record(t0, "error", { title: "Old" })], {
    retentionMs,
  });
  return { t0, retentionMs };
}

kvTest(
  "groups last seen before the retention are deleted when the project's groups are counted again",
  async (kv) => {
    const { t0, retentionMs } = await groupOldError(kv);
    const later = t0 + retentionMs + RECOUNT_MS + 1;
    await group(kv, "p", [record(later, "error", { title: "New" })], {
      retentionMs,
    });
    const groups = await listGroups(kv, "p", later);
    assert.deepEqual(groups.map((g) => g.title), ["New"]);
    assert.equal(await rows(kv, errorGroupKey("p")), 1);
    assert.equal(await rows(kv, errorGroupCountKey("p")), 1);
    assert.equal(await rows(kv, errorGroupSeenKey("p")), 1);
  },
);

kvTest(
  "10,000 groups a sender made leave a new error first, and the project keeps at most MAX_GROUPS groups",
  async (kv) => {
    const t0 = Date.UTC(2026, 0, 1);
    const made = MAX_GROUPS + 100;
    for (let i = 0; i < made; i += MAX_GROUPS_PER_BATCH) {
      const batch: LogRecord[] = [];
      for (let j = i; j < Math.min(made, i + MAX_GROUPS_PER_BATCH); j++) {
        // Distinct titles: letters, since numbers are set aside.
        const title = `Ground ${
          j.toString(26).replace(/\d/g, (d) => "qrstuvwxyz"[+d]!)
        }`;
        batch.push(record(t0 + j, "error", { title }));
      }
      await group(kv, "p", batch, { now: t0 + i });
    }
    assert.ok(await rows(kv, errorGroupKey("p")) <= MAX_GROUPS);
    assert.ok(await rows(kv, errorGroupSeenKey("p")) <= MAX_GROUPS);
    const real = t0 + made + 1_000;
    await group(kv, "p", [
      record(real, "critical", { title: "Payment provider unreachable" }),
    ]);
    const [first] = await listGroups(kv, "p", real, { limit: 50 });
    assert.equal(first!.title, "Payment provider unreachable");
    // The least recently seen went to make room: exactly the bound is left.
    assert.equal(await rows(kv, errorGroupKey("p")), MAX_GROUPS);
    assert.equal(await rows(kv, errorGroupCountKey("p")), MAX_GROUPS);
    assert.equal(await rows(kv, errorGroupSeenKey("p")), MAX_GROUPS);
  },
);

projectTest(
  "two result commits prepared from the same state both count: a group's count is exact",
  async (h, project) => {
    const t0 = h.clock.now();
    const retentionMs = project.retentionDays * DAY;
    const boom = (at: number) => record(at, "error", { title: `Boom ${at}` });
    await group(h.kv, project.id, [boom(t0)], { retentionMs });
    // Two consumers read the group at the same moment, then both commit.
    const a = [boom(t0 + 1), boom(t0 + 2)];
    const b = [boom(t0 + 3), boom(t0 + 4), boom(t0 + 5)];
    const now = t0 + 10;
    const planA = await prepareErrorGroups(h.kv, project.id, a, {
      now,
      retentionMs,
    });
    const planB = await prepareErrorGroups(h.kv, project.id, b, {
      now,
      retentionMs,
    });
    for (const [records, groups] of [[a, planA], [b, planB]] as const) {
      const op = h.kv.atomic();
      acceptEntries(op, project, [...records], { now, groups });
      assert.ok((await op.commit()).ok);
    }
    const [found] = await listGroups(h.kv, project.id, now);
    assert.equal(found!.count, 6, "1 + 2 + 3 entries");
    assert.equal((await h.logs(project.id)).length, 5, "the stored entries");
    // The index row holds empty bytes, not a value of KV's serializer.
    const [index] = await Array.fromAsync(
      h.kv.list({ prefix: errorGroupSeenKey(project.id) }),
    );
    assert.deepEqual(index!.value, new Uint8Array());
  },
);

kvTest(
  "listings skip groups last seen before the retention until the recount deletes them",
  async (kv) => {
    const { t0, retentionMs } = await groupOldError(kv);
    const later = t0 + retentionMs + 1;
    assert.equal((await listGroups(kv, "p", later)).length, 1);
    assert.deepEqual(await listGroups(kv, "p", later, { retentionMs }), []);
  },
);

projectTest(
  "a merge round deletes the error groups and releases of a project that stopped sending them, past its retention",
  async (h, project) => {
    await setRetention(h.kv, project.id, 1);
    for (const [release, title] of [["1.0.0", "Payment"], ["1.0.1", "Login"]]) {
      const entry = randomEntry({ projectId: project.id });
      entry.level = "error";
      entry.data = { title: `${title} failed` };
      entry.context = { release };
      assert.equal((await h.post(entry, { Origin: ORIGIN })).status, 200);
    }
    await h.process();
    const now = h.clock.now();
    assert.equal((await listGroups(h.kv, project.id, now)).length, 2);
    assert.ok(await rows(h.kv, releaseCountKey(project.id)) > 0);
    // Only info entries since; three days later a round runs.
    const later = now + 3 * DAY;
    await mergeProject(h.kv, project.id, { now: later });
    for (
      const prefix of [
        errorGroupKey(project.id),
        errorGroupCountKey(project.id),
        errorGroupSeenKey(project.id),
        errorGroupReleaseKey(project.id),
        releaseCountKey(project.id),
      ]
    ) {
      assert.equal(await rows(h.kv, prefix), 0, prefix.join("/"));
    }
  },
);

projectTest(
  "the release rows of a group that two batches wrote at once go with the group",
  async (h, project) => {
    const t0 = h.clock.now();
    const retentionMs = project.retentionDays * DAY;
    const boom = (at: number, release: string) => ({
      ...record(at, "error", { title: "Boom" }),
      context: { release },
    });
    await group(h.kv, project.id, [boom(t0, "1.0.0")], { retentionMs });
    // Two consumers read the group at once, each with a new release: the
    // last commit keeps its own list of releases only.
    const plans = [];
    for (const [i, release] of ["1.0.1", "1.0.2"].entries()) {
      plans.push(
        await prepareErrorGroups(h.kv, project.id, [boom(t0 + i, release)], {
          now: t0 + 10,
          retentionMs,
        }),
      );
    }
    for (const plan of plans) {
      const op = h.kv.atomic();
      addErrorGroups(op, plan);
      assert.ok((await op.commit()).ok);
    }
    assert.equal(await rows(h.kv, errorGroupReleaseKey(project.id)), 3);
    await sweepErrorGroups(h.kv, project.id, {
      now: t0 + retentionMs + DAY,
      retentionMs,
    });
    assert.equal(await rows(h.kv, errorGroupKey(project.id)), 0);
    assert.equal(await rows(h.kv, errorGroupReleaseKey(project.id)), 0);
  },
);

/** 64-bit FNV-1a of `text`'s UTF-16 units: the fingerprint before SHA-256. */
function fnv1a64(text: string): string {
  let h = 0xcbf29ce484222325n;
  for (let i = 0; i < text.length; i++) {
    h = ((h ^ BigInt(text.charCodeAt(i))) * 0x100000001b3n) & (2n ** 64n - 1n);
  }
  return h.toString(16).padStart(16, "0");
}

projectTest(
  "a sender's fingerprint made to collide with another group's under FNV-1a takes neither its fingerprint, nor its triage, nor its page",
  async (h, project) => {
    // Its text, "\u0001" and these characters, has the FNV-1a of the
    // victim's ("Checkout failed" and no frame): found by lattice
    // reduction in seconds.
    const crafted = "oprhlh{\u0fcfm\u03a0\u00aau\u018dR";
    assert.equal(fnv1a64(`\u0001${crafted}`), fnv1a64("Checkout failed\n"));
    const send = async (data: Record<string, unknown>) => {
      await postQueued(
        h,
        randomEntry({ projectId: project.id, level: "error", data }),
        { Origin: ORIGIN },
      );
      await h.process();
    };
    await send({ title: "Checkout failed", orderId: 1 });
    await send({ title: "Anything", fingerprint: crafted });
    const now = h.clock.now();
    const groups = await listGroups(h.kv, project.id, now);
    assert.equal(groups.length, 2);
    const victim = groups.find((g) => g.title === "Checkout failed")!;
    const other = groups.find((g) => g !== victim)!;
    assert.equal(
      (await findGroup(h.kv, project.id, victim.fingerprint, now))?.id,
      victim.id,
    );
    await changeTriage(h.kv, project.id, victim.fingerprint, {
      action: "resolve",
    }, { now, actor: "cli" });
    const triage = await readTriage(h.kv, project.id, groups, now);
    assert.equal(triage.get(victim.id)!.status, "resolved");
    assert.equal(triage.get(other.id)!.status, "unresolved");
    const page = await readGroupDetail(h.kv, project.id, victim.fingerprint, {
      now,
      clock: () => 0,
    });
    assert.equal(page.group?.id, victim.id);
    assert.deepEqual(page.latest?.data, {
      title: "Checkout failed",
      orderId: 1,
    });
    assert.notEqual(other.fingerprint, victim.fingerprint);
  },
);

kvTest(
  "a group stored under its former fingerprint keeps its id, count and triage, and takes its new fingerprint at its next entry",
  async (kv) => {
    const at = Date.UTC(2026, 0, 1);
    await kv.set(projectKey("p"), encodeJson({ id: "p" }));
    await group(kv, "p", [record(at, "error", { title: "Boom" })]);
    const [stored] = await listGroups(kv, "p", at);
    // As an earlier version stored it: under the FNV-1a of its text.
    const former = fnv1a64("Boom\n");
    const key = errorGroupKey("p", stored!.id);
    const value = decodeJson<Record<string, unknown>>(
      (await kv.get(key)).value,
    );
    await kv.atomic()
      .set(key, encodeJson({ ...value, fingerprint: former }))
      .delete(errorGroupIdKey("p", stored!.fingerprint))
      .set(errorGroupIdKey("p", former), stored!.id)
      .commit();
    await changeTriage(kv, "p", former, { action: "resolve" }, {
      now: at + 1,
      actor: "cli",
    });
    await group(kv, "p", [record(at + 2, "error", { title: "Boom" })]);
    const [moved] = await listGroups(kv, "p", at + 2);
    assert.equal(moved!.id, stored!.id);
    assert.equal(moved!.count, 2);
    assert.equal(moved!.fingerprint, stored!.fingerprint);
    assert.notEqual(moved!.fingerprint, former);
    assert.equal(await findGroup(kv, "p", former, at + 2), null);
    assert.equal(
      (await findGroup(kv, "p", moved!.fingerprint, at + 2))?.id,
      moved!.id,
    );
    assert.equal(
      await rows(kv, errorGroupIdKey("p")),
      1,
      "the former row went",
    );
    const triage = await readTriage(kv, "p", [moved!], at + 2);
    assert.equal(triage.get(moved!.id)!.status, "regressed");
  },
);

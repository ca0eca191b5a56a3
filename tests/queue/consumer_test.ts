/**
 * The consumer's decisions, seen from outside: which entries are stored under
 * their project and with which `auth`, which are dropped and for what reason,
 * the counters and the recent rejections they leave, and the expiry given to
 * stored entries. Entries go through the real endpoint (`h.post`), then
 * `h.process()` runs the consumer on every pending batch.
 *
 * @module
 */
import assert from "node:assert/strict";
import { ProjectCache } from "../../auth/projects.ts";
import { logChunkKey, statsPrefix } from "../../db/keys.ts";
import { addLevel, setRetention } from "../../db/projects.ts";
import type { QueuedEntry } from "../../domain/entry.ts";
import { Consumer } from "../../queue/consumer.ts";
import { RECENT_REJECTIONS, type Rejection } from "../../db/stats.ts";
import { createId } from "../../domain/ids.ts";
import {
  assertCounts,
  assertOnlyRejected,
  assertStoredOnce,
  globalRejected,
  type Harness,
  harnessTest,
  ORIGIN,
  pendingBatches,
  postEntries,
  postQueued,
  projectTest,
  randomEntry,
  recentRejections,
  signEntry,
  withHarness,
} from "../_helpers/harness.ts";
import { atomicView } from "../_helpers/hold.ts";

const APP_ID = "com.example.app.ios";

/**
 * Processes the queue, asserts that the project stored nothing and counted
 * only the `rejected` ones, and returns its recent rejections.
 */
async function processRejected(
  h: Harness,
  projectId: string,
  rejected: Parameters<typeof assertOnlyRejected>[2],
): Promise<Rejection[]> {
  await h.process();
  await assertOnlyRejected(h, projectId, rejected);
  return await recentRejections(h.kv, projectId);
}

/** Queues an entry of `level` sent from `origin`. */
async function postLevel(
  h: Harness,
  projectId: string,
  level: string,
  origin = ORIGIN,
): Promise<void> {
  await postQueued(h, randomEntry({ projectId, level }), { Origin: origin });
}

projectTest(
  "an entry from a browser whose Origin is allowed is stored with auth origin",
  async (h, project) => {
    const body = randomEntry({ projectId: project.id });
    await postQueued(h, body, { Origin: ORIGIN });
    const log = await assertStoredOnce(h, project.id, "origin");
    assert.equal(log.origin, ORIGIN);
    assert.deepEqual(log.data, body.data);
    assert.deepEqual(log.device, body.device);
    assert.deepEqual(log.context, body.context);
    assert.equal(log.receivedAt, h.clock.now());
  },
);

projectTest(
  "an entry from a mobile app whose appid is allowed is stored with auth appid",
  async (h, project) => {
    await postQueued(h, randomEntry({ projectId: project.id, appid: APP_ID }));
    const log = await assertStoredOnce(h, project.id, "appid");
    assert.equal(log.appid, APP_ID);
    assert.equal(log.origin, undefined);
  },
);

projectTest(
  "an entry signed by a server client is stored with auth signature",
  async (h, project) => {
    await postEntries(h, project.id, { secret: project.secret });
    await assertStoredOnce(h, project.id, "signature");
  },
);

projectTest(
  "an entry with a bad Origin but an allowed appid is accepted via appid",
  async (h, project) => {
    await postQueued(h, randomEntry({ projectId: project.id, appid: APP_ID }), {
      Origin: "https://evil.example.net",
    });
    const log = await assertStoredOnce(h, project.id, "appid");
    assert.equal(log.origin, "https://evil.example.net");
  },
);

projectTest(
  "an entry with a bad Origin and an unknown appid but a valid signature is accepted via signature",
  async (h, project) => {
    const body = randomEntry({
      projectId: project.id,
      appid: "com.example.other",
    });
    await postQueued(h, body, {
      Origin: "https://evil.example.net",
      ...signEntry(project.secret, body, h.clock.now()),
    });
    await assertStoredOnce(h, project.id, "signature");
  },
);

projectTest(
  "an entry with an allowed Origin, an allowed appid and a signature is recorded as authorized by origin, the first method",
  async (h, project) => {
    const body = randomEntry({ projectId: project.id, appid: APP_ID });
    await postQueued(h, body, {
      Origin: ORIGIN,
      ...signEntry(project.secret, body, h.clock.now()),
    });
    await h.process();
    const logs = await h.logs(project.id);
    assert.equal(logs.length, 1);
    assert.equal(logs[0]!.auth, "origin");
    assert.equal(logs[0]!.appid, APP_ID);
  },
);

harnessTest(
  "an entry for a project that does not exist is counted globally as unknown_project, never under its project id",
  async (h) => {
    const attackerId = "attacker-chosen-id";
    await postEntries(h, attackerId, { origin: ORIGIN });
    await postQueued(h, randomEntry({ projectId: attackerId, appid: APP_ID }));
    await h.process();
    assert.deepEqual(await globalRejected(h.kv), { unknown_project: 2 });
    assert.deepEqual(await h.logs(attackerId), []);
    assert.deepEqual(await recentRejections(h.kv, attackerId), []);
    const underAttacker = await Array.fromAsync(
      h.kv.list({ prefix: statsPrefix(attackerId) }),
    );
    assert.deepEqual(underAttacker, []);
    assert.deepEqual(await pendingBatches(h.kv), []);
  },
);

projectTest(
  "an entry from an Origin that is not in the allow-list is dropped as bad_origin",
  async (h, project) => {
    // Listed origins match exactly: another port or scheme is another origin.
    for (
      const origin of [
        "https://evil.example.net",
        "https://app.example.com:8443",
        "http://app.example.com",
      ]
    ) {
      await postEntries(h, project.id, { origin });
    }
    const recent = await processRejected(h, project.id, { bad_origin: 3 });
    assert.deepEqual(recent.map((r) => [r.reason, r.origin, r.level]), [
      ["bad_origin", "https://evil.example.net", "info"],
      ["bad_origin", "https://app.example.com:8443", "info"],
      ["bad_origin", "http://app.example.com", "info"],
    ]);
    assert.equal(recent[0]!.at, h.clock.now());
  },
);

projectTest(
  "an entry whose appid is not in the allow-list is dropped as unknown_appid",
  async (h, project) => {
    await postQueued(
      h,
      randomEntry({ projectId: project.id, appid: "com.example.app.android" }),
    );
    const recent = await processRejected(h, project.id, { unknown_appid: 1 });
    assert.equal(recent.length, 1);
    assert.equal(recent[0]!.reason, "unknown_appid");
    assert.equal(recent[0]!.appid, "com.example.app.android");
  },
);

projectTest(
  "an entry with no Origin, no appid and no signature is dropped as no_credentials",
  async (h, project) => {
    await postEntries(h, project.id);
    const recent = await processRejected(h, project.id, { no_credentials: 1 });
    assert.deepEqual(recent.map((r) => r.reason), ["no_credentials"]);
  },
);

Deno.test("an entry that no method authorizes is dropped for the last credential it presented", async (t) => {
  await withHarness(async (h) => {
    const project = await h.project();
    const evil = { Origin: "https://evil.example.net" };
    const other = "com.example.other";
    /** Processes what is pending and returns the newest rejection's reason. */
    const lastReason = async () => {
      await h.process();
      return (await recentRejections(h.kv, project.id)).at(-1)?.reason;
    };
    await t.step(
      "a bad Origin and an unknown appid give unknown_appid",
      async () => {
        await postQueued(
          h,
          randomEntry({ projectId: project.id, appid: other }),
          evil,
        );
        assert.equal(await lastReason(), "unknown_appid");
      },
    );
    await t.step(
      "a bad Origin, an unknown appid and a bad signature give bad_signature",
      async () => {
        const body = randomEntry({ projectId: project.id, appid: other });
        await postQueued(h, body, {
          ...evil,
          ...signEntry("not-the-secret", body, h.clock.now()),
        });
        assert.equal(await lastReason(), "bad_signature");
      },
    );
    await t.step(
      "a bad Origin and a stale signature give stale_timestamp",
      async () => {
        const body = randomEntry({ projectId: project.id });
        await postQueued(h, body, {
          ...evil,
          ...signEntry(project.secret, body, h.clock.now() - 3_600_000),
        });
        assert.equal(await lastReason(), "stale_timestamp");
      },
    );
    await assertOnlyRejected(h, project.id, {
      unknown_appid: 1,
      bad_signature: 1,
      stale_timestamp: 1,
    });
  });
});

projectTest(
  "an entry with a custom level the project does not declare is dropped as unknown_level",
  async (h, project) => {
    await postLevel(h, project.id, "audit");
    const recent = await processRejected(h, project.id, { unknown_level: 1 });
    assert.equal(recent[0]!.reason, "unknown_level");
    assert.equal(recent[0]!.level, "audit");
  },
);

projectTest(
  "an entry with a custom level declared with addLevel is stored",
  async (h, project) => {
    await addLevel(h.kv, project.id, "audit");
    await postLevel(h, project.id, "audit");
    await postLevel(h, project.id, "trace");
    await h.process();
    const logs = await h.logs(project.id);
    assert.deepEqual(logs.map((l) => l.level), ["audit"]);
    await assertCounts(h, project.id, 1, { unknown_level: 1 });
  },
);

projectTest(
  "an unauthorized entry with an undeclared level is dropped for its credentials, not its level",
  async (h, project) => {
    await postLevel(h, project.id, "audit", "https://evil.example.net");
    await h.process();
    await assertCounts(h, project.id, 0, { bad_origin: 1 });
  },
);

harnessTest(
  "the counters add up accepted entries and rejections by reason across batches and projects",
  async (h) => {
    const a = await h.project();
    const b = await h.project();
    await postEntries(h, a.id, { origin: ORIGIN, count: 3 });
    await postEntries(h, a.id);
    await postQueued(h, randomEntry({ projectId: b.id, appid: APP_ID }));
    await postEntries(h, b.id, { origin: "https://evil.example.net" });
    await h.process();
    // A second round of batches adds to the same counters.
    await postEntries(h, a.id, { origin: ORIGIN });
    await postEntries(h, b.id, { origin: "https://evil.example.net" });
    await h.process();
    await assertCounts(h, a.id, 4, { no_credentials: 1 });
    await assertCounts(h, b.id, 1, { bad_origin: 2 });
    assert.equal((await h.logs(a.id)).length, 4);
    assert.equal((await h.logs(b.id)).length, 1);
    assert.deepEqual(await globalRejected(h.kv), {});
  },
);

projectTest(
  "stored entries of a project are listed in the order they were received",
  async (h, project) => {
    const titles: string[] = [];
    for (let i = 0; i < 5; i++) {
      const body = randomEntry({ projectId: project.id });
      titles.push((body.data as { title: string }).title);
      await postQueued(h, body, { Origin: ORIGIN });
      h.clock.advance(1);
    }
    await h.process();
    const logs = await h.logs(project.id);
    assert.deepEqual(logs.map((l) => l.data.title), titles);
    assert.deepEqual(
      logs.map((l) => l.receivedAt),
      [...logs.map((l) => l.receivedAt)].sort((x, y) => x - y),
    );
  },
);

projectTest(
  "the recent rejections of a project are bounded to 100 and keep the newest",
  async (h, project) => {
    const start = h.clock.now();
    const total = RECENT_REJECTIONS + 5;
    for (let i = 0; i < total; i++) {
      await postEntries(h, project.id, { origin: "https://evil.example.net" });
      h.clock.advance(1);
    }
    await h.process();
    const recent = await recentRejections(h.kv, project.id);
    assert.equal(recent.length, RECENT_REJECTIONS);
    assert.deepEqual(
      recent.map((r) => r.at),
      Array.from({ length: RECENT_REJECTIONS }, (_, i) => start + 5 + i),
    );
    await assertCounts(h, project.id, 0, { bad_origin: total });
  },
);

projectTest(
  "a single batch with more than 100 rejections keeps only its newest 100",
  async (h, project) => {
    // Two earlier rejections, so the ring does not start at slot 0.
    await postEntries(h, project.id, { count: 2 });
    await h.process();
    const entries: QueuedEntry[] = Array.from({ length: 150 }, (_, i) => ({
      id: createId(h.clock.now() + i),
      receivedAt: h.clock.now() + i,
      level: "info",
      projectId: project.id,
      data: { n: i },
    }));
    await Promise.all(entries.map((e) => h.pipeline.producer.submit(e)));
    const batches = await pendingBatches(h.kv);
    assert.ok(
      batches.some((b) => b.header.count > RECENT_REJECTIONS),
      "expected one batch holding more than 100 entries",
    );
    await h.process();
    const recent = await recentRejections(h.kv, project.id);
    assert.deepEqual(
      recent.map((r) => r.entryId),
      entries.slice(-RECENT_REJECTIONS).map((e) => e.id),
    );
    await assertCounts(h, project.id, 0, { no_credentials: 152 });
  },
  // Without lingering the first commit goes alone, the rest as one batch.
  { pipeline: { lingerMs: 0 } },
);

/**
 * A view of `kv` whose atomic operations report the `expireIn` of every `set`,
 * so that the expiry given to a stored entry can be read.
 */
function recordExpiries(
  kv: Deno.Kv,
): { kv: Deno.Kv; expiries: Map<string, number | undefined> } {
  const expiries = new Map<string, number | undefined>();
  const view = atomicView(kv, (op) => {
    const set = op.set.bind(op);
    op.set = (key, value, options) => {
      expiries.set(JSON.stringify(key), options?.expireIn);
      return set(key, value, options);
    };
    return op;
  });
  return { kv: view, expiries };
}

Deno.test("a stored entry expires after the project's retention, counted from receipt", async (t) => {
  await withHarness(async (h) => {
    const project = await h.project();
    const { kv, expiries } = recordExpiries(h.kv);
    const consumer = new Consumer({
      kv,
      now: h.clock.now,
      maxSkewMs: h.config.signatureMaxSkewMs,
      projects: new ProjectCache(h.kv, { ttlMs: 0, now: h.clock.now }),
    });
    const processAll = async () => {
      for (const { id } of await pendingBatches(h.kv)) {
        assert.equal(await consumer.process(id), "processed");
      }
    };
    const day = 86_400_000;
    // A batch is stored as a chunk at once, expiring with the retention
    // from its first entry.
    const chunkExpiry = (id: string) =>
      expiries.get(JSON.stringify(logChunkKey(project.id, id)));

    await t.step("by default after 30 days", async () => {
      assert.equal(project.retentionDays, 30);
      await postEntries(h, project.id, { origin: ORIGIN });
      await processAll();
      const [log] = await h.logs(project.id);
      assert.ok(log);
      assert.equal(chunkExpiry(log.id), 30 * day);
    });

    await t.step(
      "after the days set with setRetention, less the time spent waiting",
      async () => {
        const updated = await setRetention(h.kv, project.id, 7);
        assert.equal(updated.retentionDays, 7);
        await postEntries(h, project.id, { origin: ORIGIN });
        h.clock.advance(day);
        await processAll();
        const logs = await h.logs(project.id);
        assert.equal(logs.length, 2);
        assert.equal(chunkExpiry(logs[1]!.id), 6 * day);
      },
    );
  });
});

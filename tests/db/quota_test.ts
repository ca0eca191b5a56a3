/**
 * Quotas and spike protection as the consumer applies them: what is
 * stored, what is counted under `over_quota` and `sampled`, the day's
 * usage, and a new error group stored whatever the quota.
 *
 * @module
 */
import assert from "node:assert/strict";
import { evaluateGroupRule } from "../../alerts/group_rules.ts";
import { addAlertRule } from "../../alerts/rules.ts";
import { initialAlertState } from "../../db/alerts.ts";
import { listGroups } from "../../db/error_group_reads.ts";
import { admitEntries, setQuota, setSpikeProtection } from "../../db/quota.ts";
import { readUsage } from "../../db/usage.ts";
import { DAY_MS, toLogRecord } from "../../domain/entry.ts";
import { deleteProject } from "../../db/deletion.ts";
import {
  pendingBatchKey,
  projectKey,
  quotaGrantKey,
  quotaStateKey,
} from "../../db/keys.ts";
import { createProject } from "../../db/projects.ts";
import { createId } from "../../domain/ids.ts";
import { mergeProject } from "../../db/storage/merge.ts";
import { metricsHandler, RequestMetrics } from "../../server/metrics.ts";
import {
  type Harness,
  harnessTest,
  kvTest,
  ORIGIN,
  pendingBatchIds,
  postEntries,
  postQueued,
  projectTest,
  randomEntry,
  stats,
} from "../_helpers/harness.ts";
import { projectUnderQuota } from "../_helpers/quota.ts";

const MINUTE_MS = 60_000;

/**
 * Sends `count` entries from {@linkcode ORIGIN}, processes them and returns
 * how many entries the project holds.
 */
async function sendProcessed(
  h: Harness,
  projectId: string,
  count = 1,
): Promise<number> {
  await postEntries(h, projectId, { origin: ORIGIN, count });
  await h.process();
  return (await h.logs(projectId)).length;
}

harnessTest(
  "a per-day quota stores that many entries a day and counts the rest as over_quota",
  async (h) => {
    const project = await projectUnderQuota(h, { perDay: 5 }, 8);
    await h.process();
    assert.equal((await h.logs(project.id)).length, 5);
    assert.deepEqual(await stats(h.kv, project.id), {
      accepted: 5,
      rejected: { over_quota: 3 },
    });
    const [today] = await readUsage(h.kv, project.id, { now: h.clock.now() });
    assert.equal(today!.accepted, 8);
    assert.equal(today!.stored, 5);
    assert.equal(today!.over_quota, 3);
    assert.ok(today!.bytes > 0);

    // The next day the quota starts again.
    h.clock.advance(DAY_MS);
    assert.equal(await sendProcessed(h, project.id), 6);
  },
);

harnessTest(
  "a per-minute quota stores that many entries a minute",
  async (h) => {
    const project = await projectUnderQuota(
      h,
      { perMinute: 2, perDay: 100 },
      0,
    );
    for (const minute of [0, 1]) {
      h.clock.set(Date.UTC(2026, 0, 1) + minute * MINUTE_MS);
      await sendProcessed(h, project.id, 3);
    }
    assert.equal((await h.logs(project.id)).length, 4);
    assert.equal((await stats(h.kv, project.id)).rejected.over_quota, 2);
  },
);

harnessTest(
  "over the quota a new error group's first entry is stored, and its group counts every entry",
  async (h) => {
    const project = await projectUnderQuota(h, { perDay: 1 }, 1);
    await h.process();
    const error = () =>
      randomEntry({
        projectId: project.id,
        level: "error",
        data: { title: "TypeError: x is undefined", message: "boom" },
      });
    for (let i = 0; i < 3; i++) {
      await postQueued(h, error(), { Origin: ORIGIN });
    }
    await h.process();
    const stored = await h.logs(project.id);
    assert.deepEqual(stored.map((r) => r.level), ["info", "error"]);
    const groups = await listGroups(h.kv, project.id, h.clock.now());
    assert.equal(groups.length, 1);
    assert.equal(groups[0]!.count, 3);
    assert.equal((await stats(h.kv, project.id)).rejected.over_quota, 2);
  },
);

harnessTest(
  "over the quota a new error group's first entry is stored when one batch brings several, and the new rule fires for it",
  async (h) => {
    const project = await projectUnderQuota(h, { perDay: 1 }, 1);
    await h.process();
    const rule = await addAlertRule(h.kv, {
      projectId: project.id,
      query: "",
      on: "new",
      webhook: "https://hooks.example.com/errors",
    }, { allowPrivate: true, now: h.clock.now });
    // Three entries in one commit: one batch.
    await Promise.all([1, 2, 3].map(() =>
      postQueued(
        h,
        randomEntry({
          projectId: project.id,
          level: "error",
          data: { title: "TypeError: y is undefined" },
        }),
        { Origin: ORIGIN },
      )
    ));
    assert.equal((await pendingBatchIds(h.kv)).length, 1);
    await h.process();
    const stored = await h.logs(project.id);
    assert.deepEqual(stored.map((r) => r.level), ["info", "error"]);
    const [group] = await listGroups(h.kv, project.id, h.clock.now());
    assert.equal(group!.count, 3);
    assert.equal(stored[1]!.id, group!.firstId);
    assert.notEqual(group!.sampleId, group!.firstId, "three entries grouped");
    assert.equal((await stats(h.kv, project.id)).rejected.over_quota, 2);
    // Past the read API's settling time (entries younger than 1 s wait).
    h.clock.advance(1_500);
    const { events } = await evaluateGroupRule(
      h.kv,
      rule,
      initialAlertState(rule),
      h.clock.now(),
    );
    assert.deepEqual(events.map((e) => e.record.id), [group!.firstId]);
  },
);

harnessTest(
  "--off removes the quota: every entry is stored again",
  async (h) => {
    const project = await projectUnderQuota(h, { perDay: 1 }, 0);
    await setQuota(h.kv, project.id, null);
    assert.equal(await sendProcessed(h, project.id, 3), 3);
  },
);

projectTest(
  "in a spike 1 in k info and warning entries is stored, errors all, until the rate falls back",
  async (h, project) => {
    await setSpikeProtection(h.kv, project.id, { multiple: 2, keep: 4 });
    const send = async (n: number, level: string) => {
      for (let i = 0; i < n; i++) {
        await postQueued(h, randomEntry({ projectId: project.id, level }), {
          Origin: ORIGIN,
        });
      }
      await h.process();
    };
    // A quiet minute: 10 entries, far under 2 × 600 an hour.
    await send(10, "info");
    assert.equal((await h.logs(project.id)).length, 10);
    // A spike: past 20 entries in a minute (1,200 an hour, 2 × 600), one
    // request each, 1 in 4 of the next 20 is stored.
    h.clock.advance(MINUTE_MS);
    await send(40, "info");
    await send(8, "error");
    const stored = await h.logs(project.id);
    const spiked = stored.slice(10);
    assert.equal(spiked.filter((r) => r.level === "info").length, 20 + 5);
    assert.equal(spiked.filter((r) => r.level === "error").length, 8);
    const { rejected } = await stats(h.kv, project.id);
    assert.equal(rejected.sampled, 15);
    // Two quiet minutes later the rate has fallen back: all stored again.
    h.clock.advance(3 * MINUTE_MS);
    await send(5, "info");
    assert.equal((await h.logs(project.id)).length, stored.length + 5);
    const [today] = await readUsage(h.kv, project.id, { now: h.clock.now() });
    assert.equal(today!.sampled, 15);
    assert.equal(today!.accepted, 63);
  },
);

projectTest(
  "quota and spike settings refuse values out of bounds with a clear error",
  async (h, project) => {
    await assert.rejects(
      () => setQuota(h.kv, project.id, { perDay: 0 }),
      /Cannot set the per-day quota to "0"/,
    );
    await assert.rejects(
      () => setSpikeProtection(h.kv, project.id, { multiple: 1, keep: 10 }),
      /Cannot set the spike multiple to "1"/,
    );
    await assert.rejects(
      () => setSpikeProtection(h.kv, project.id, { multiple: 3, keep: 1.5 }),
      /Cannot keep 1 in "1.5"/,
    );
  },
);

harnessTest(
  "/metrics gives today's usage by project and the share of its quota used",
  async (h) => {
    const project = await projectUnderQuota(h, { perDay: 4 }, 5);
    await h.process();
    const handler = metricsHandler({
      kv: h.kv,
      requests: new RequestMetrics(),
      sweptAt: h.clock.now,
      token: "metrics-token",
      now: h.clock.now,
    });
    const res = await handler(
      new Request("http://127.0.0.1:9464/metrics", {
        headers: { Authorization: "Bearer metrics-token" },
      }),
    );
    const lines = (await res.text()).split("\n");
    const p = `project="${project.id}"`;
    for (
      const line of [
        `logs_usage_entries_today{${p},kind="accepted"} 5`,
        `logs_usage_entries_today{${p},kind="stored"} 4`,
        `logs_usage_entries_today{${p},kind="over_quota"} 1`,
        `logs_quota_used_ratio{${p}} 1`,
        `logs_entries_rejected_total{${p},reason="over_quota"} 1`,
      ]
    ) assert.ok(lines.includes(line), `expected ${line}`);
    assert.ok(lines.some((l) => l.startsWith(`logs_usage_bytes_today{${p}} `)));
  },
);

projectTest(
  "usage is kept 90 days by the merger and deleted with the project",
  async (h, project) => {
    await setQuota(h.kv, project.id, { perDay: 100 });
    await sendProcessed(h, project.id);
    const usage = () => readUsage(h.kv, project.id, { now: h.clock.now() });
    await mergeProject(h.kv, project.id, { now: h.clock.now() + 89 * DAY_MS });
    assert.equal((await usage()).length, 1);
    await mergeProject(h.kv, project.id, { now: h.clock.now() + 90 * DAY_MS });
    assert.deepEqual(await usage(), []);

    await sendProcessed(h, project.id);
    assert.equal((await usage()).length, 1);
    await deleteProject(h.kv, project.id);
    assert.deepEqual(await usage(), []);
    assert.equal((await h.kv.get(quotaStateKey(project.id))).value, null);
  },
);

kvTest(
  "a quota grants nothing on a project record changed since the batch was judged: the result commit will fail its check",
  async (kv) => {
    const project = await createProject(kv, { name: "judged" });
    const judged = await kv.get(projectKey(project.id));
    const changed = await setQuota(kv, project.id, { perDay: 10 });
    const records = [toLogRecord({
      id: createId(Date.UTC(2026, 0, 1)),
      projectId: project.id,
      level: "info",
      receivedAt: Date.UTC(2026, 0, 1),
      data: {},
    }, "origin")];
    const pending = pendingBatchKey("b1");
    const guard = {
      key: pending,
      versionstamp: (await kv.set(pending, 0)).versionstamp,
    };
    const options = {
      batches: [{ id: "b1", guard }],
      records,
      free: new Set<string>(),
      now: Date.UTC(2026, 0, 1),
    };
    const stale = await admitEntries(kv, {
      ...options,
      project: changed,
      versionstamp: judged.versionstamp,
    });
    assert.deepEqual(stale, { stored: [], overQuota: 0, sampled: 0 });
    assert.equal((await kv.get(quotaGrantKey("b1", project.id))).value, null);
    const fresh = await admitEntries(kv, {
      ...options,
      project: changed,
      versionstamp: (await kv.get(projectKey(project.id))).versionstamp,
    });
    assert.equal(fresh.stored.length, 1);
    assert.notEqual(
      (await kv.get(quotaGrantKey("b1", project.id))).value,
      null,
    );
  },
);

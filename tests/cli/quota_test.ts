/**
 * `deno task project quota`, `deno task project spike` and `deno task
 * usage`: setting and removing the bounds, refusing bad values with a
 * clear message, the audit log, and the usage of a project over its quota.
 *
 * @module
 */
import assert from "node:assert/strict";
import { listAudit } from "../../db/audit.ts";
import {
  assertRefused,
  cli,
  create,
  json,
  jsonLines,
  kvTest,
} from "../_helpers/cli.ts";
import { harnessTest, postQueued, randomEntry } from "../_helpers/harness.ts";
import { projectUnderQuota } from "../_helpers/quota.ts";

kvTest(
  "project quota sets, shows and removes a project's bounds, each in the audit log",
  async (kv) => {
    const { projectId } = await create(kv);
    const none = json(await cli(kv, ["project", "quota", projectId, "--json"]));
    assert.deepEqual(none, { projectId, quota: null });
    const set = json(
      await cli(kv, [
        "project",
        "quota",
        projectId,
        "--per-day",
        "1000",
        "--per-minute",
        "50",
        "--json",
      ]),
    );
    assert.deepEqual(set.quota, { perDay: 1000, perMinute: 50 });
    const text = await cli(kv, ["project", "quota", projectId]);
    assert.match(
      text.stdout,
      /stores at most 1000 entries a day and 50 entries a minute/,
    );
    const off = json(
      await cli(kv, ["project", "quota", projectId, "--off", "--json"]),
    );
    assert.equal(off.quota, null);
    const actions = (await listAudit(kv, projectId, 10)).map((e) => e.action);
    assert.deepEqual(actions, [
      "settings.quota",
      "settings.quota",
      "project.create",
    ]);
  },
);

kvTest(
  "project quota changes the bounds given and keeps the other; off removes one",
  async (kv) => {
    const { projectId } = await create(kv);
    const quota = async (...args: string[]) =>
      json(await cli(kv, ["project", "quota", projectId, ...args, "--json"]))
        .quota;
    assert.deepEqual(await quota("--per-day", "1000"), { perDay: 1000 });
    assert.deepEqual(await quota("--per-minute", "10"), {
      perDay: 1000,
      perMinute: 10,
    });
    assert.deepEqual(await quota("--per-day", "off"), { perMinute: 10 });
    assert.equal(await quota("--per-minute", "off"), null);
  },
);

kvTest("project quota and spike refuse bad values in one line", async (kv) => {
  const { projectId } = await create(kv);
  assertRefused(
    await cli(kv, ["project", "quota", projectId, "--per-day", "0"]),
    /Cannot set the per-day quota to "0"/,
  );
  assertRefused(
    await cli(kv, ["project", "quota", projectId, "--per-day", "ten"]),
    /Cannot read --per-day "ten": expected a whole number/,
  );
  assertRefused(
    await cli(kv, ["project", "quota", projectId, "--off", "--per-day", "5"]),
    /Cannot use --off with --per-day/,
  );
  assertRefused(
    await cli(kv, ["project", "spike", projectId, "--multiple", "3"]),
    /give both --multiple and --keep/,
  );
  assertRefused(
    await cli(kv, [
      "project",
      "spike",
      projectId,
      "--multiple",
      "3",
      "--keep",
      "1",
    ]),
    /Cannot keep 1 in "1"/,
  );
});

kvTest("project spike turns sampling on and off", async (kv) => {
  const { projectId } = await create(kv);
  const on = json(
    await cli(kv, [
      "project",
      "spike",
      projectId,
      "--multiple",
      "5",
      "--keep",
      "10",
      "--json",
    ]),
  );
  assert.deepEqual(on.spike, { multiple: 5, keep: 10 });
  const off = json(
    await cli(kv, ["project", "spike", projectId, "--off", "--json"]),
  );
  assert.equal(off.spike, null);
});

harnessTest(
  "usage shows a day's entries accepted, stored, dropped by reason, bytes and the quota used",
  async (h) => {
    const project = await projectUnderQuota(h, { perDay: 4 }, 6);
    await postQueued(h, randomEntry({ projectId: project.id }), {
      Origin: "https://evil.example.com",
    });
    await h.process();
    const rows = jsonLines(
      await cli(h.kv, ["usage", project.id, "--json"], { now: h.clock.now }),
    );
    assert.equal(rows.length, 1);
    const { bytes, ...row } = rows[0]!;
    assert.ok((bytes as number) > 100);
    assert.deepEqual(row, {
      project: project.id,
      name: "test",
      day: "2026-01-01",
      accepted: 6,
      stored: 4,
      dropped: { over_quota: 2, sampled: 0, rejected: 1 },
      quotaPerDay: 4,
      quotaUsed: 1,
    });
    const text = await cli(h.kv, ["usage"], { now: h.clock.now });
    assert.match(text.stdout, /2026-01-01 +6 +4 +2 +0 +1 +\d+ +100% of 4/);
    assertRefused(
      await cli(h.kv, ["usage", "--days", "0"]),
      /Cannot read --days "0"/,
    );
  },
);

/**
 * Replays of kept rejected entries (`deno task rejected replay`,
 * `replayRejected`): an entry that passes on the fixed settings is stored
 * once, counted accepted and replayed, under its project only while it
 * exists; signatures still authorize one entry.
 *
 * @module
 */
import assert from "node:assert/strict";
import {
  logChunksPrefix,
  quotaGrantsPrefix,
  quotaStateKey,
  rejectedEntriesPrefix,
  statsPrefix,
} from "../../db/keys.ts";
import { decodeJson } from "../../db/kv.ts";
import { deleteProject } from "../../db/deletion.ts";
import {
  allowValue,
  ProjectNotFoundError,
  setRetention,
  updateProject,
} from "../../db/projects.ts";
import { addRetentionRule } from "../../db/retention_rules.ts";
import { DAY_MS } from "../../domain/entry.ts";
import { listRejected } from "../../db/rejected.ts";
import { readStats } from "../../db/stats.ts";
import { type QuotaState, setQuota } from "../../db/quota.ts";
import { readUsage } from "../../db/usage.ts";
import { replayRejected } from "../../queue/replay.ts";
import { cli, rejected } from "../_helpers/cli.ts";
import {
  harnessTest,
  ORIGIN,
  postEntries,
  postQueued,
  randomEntry,
  replayWith,
  signedEntry,
} from "../_helpers/harness.ts";
import { holdCommits, within } from "../_helpers/hold.ts";

const OTHER = "https://shop.example.net";

harnessTest(
  "replay stores a bad_origin entry once the origin is allowed, counting it accepted and replayed",
  async (h) => {
    const project = await h.project([ORIGIN]);
    const body = randomEntry({ projectId: project.id });
    await postQueued(h, body, { Origin: OTHER });
    await h.process();
    const [kept] = await listRejected(h.kv, project.id);

    const early = await rejected(h, ["replay", project.id, "--json"]);
    assert.equal(early.code, 0, early.stderr);
    assert.deepEqual(JSON.parse(early.stdout).results, [
      { entryId: kept!.entryId, outcome: "rejected", reason: "bad_origin" },
    ]);
    assert.equal((await listRejected(h.kv, project.id)).length, 1);

    await allowValue(h.kv, project.id, OTHER);
    const run = await rejected(h, ["replay", project.id]);
    assert.equal(run.code, 0, run.stderr);
    assert.match(run.stdout, /: 1 stored, 0 not\n/);
    assert.match(
      run.stdout,
      new RegExp(`${kept!.entryId}  stored \\(auth origin\\)`),
    );
    const logs = await h.logs(project.id);
    assert.equal(logs.length, 1);
    assert.equal(logs[0]!.id, kept!.entryId);
    assert.equal(logs[0]!.auth, "origin");
    assert.deepEqual(logs[0]!.data, body.data);
    assert.equal(logs[0]!.receivedAt, kept!.at);
    const counters = await readStats(h.kv, project.id);
    assert.equal(counters.accepted, 1);
    assert.equal(counters.replayed, 1);
    assert.deepEqual(counters.rejected, { bad_origin: 1 });
    assert.deepEqual(await listRejected(h.kv, project.id), []);
    const stats = await cli(h.kv, ["stats", project.id, "--json"]);
    assert.equal(JSON.parse(stats.stdout).acceptedOnReplay, 1);
    assert.match(
      (await cli(h.kv, ["stats", project.id])).stdout,
      /of which replayed +1\n/,
    );

    // At most once: nothing is left to replay.
    const again = await rejected(h, ["replay", project.id, "--json"]);
    assert.deepEqual(JSON.parse(again.stdout).results, []);
    const named = await rejected(h, [
      "replay",
      project.id,
      "--entry",
      kept!.entryId,
    ]);
    assert.equal(named.code, 1);
    assert.equal((await readStats(h.kv, project.id)).accepted, 1);
    assert.equal((await h.logs(project.id)).length, 1);
  },
);

harnessTest("two replays at the same moment store an entry once", async (h) => {
  const project = await h.project([ORIGIN]);
  await postEntries(h, project.id, { origin: OTHER, count: 3 });
  await h.process();
  await allowValue(h.kv, project.id, OTHER);
  const [a, b] = await Promise.all([
    replayRejected(h.kv, project.id, undefined, replayWith(h)),
    replayRejected(h.kv, project.id, undefined, replayWith(h)),
  ]);
  const stored = [...a!, ...b!].filter((r) => r.outcome === "stored");
  assert.equal(stored.length, 3);
  assert.equal((await h.logs(project.id)).length, 3);
  const counters = await readStats(h.kv, project.id);
  assert.equal(counters.accepted, 3);
  assert.equal(counters.replayed, 3);
});

harnessTest(
  "replay of a signed entry verifies it on the fixed secret, within the signature skew only",
  async (h) => {
    const project = await h.project([]);
    const secret = "the-secret-the-client-was-given";
    const send = async () => {
      await postEntries(h, project.id, { secret });
    };
    await send();
    h.clock.advance(1000);
    await send();
    await h.process();
    const [newer, older] = await listRejected(h.kv, project.id);
    assert.equal(older!.reason, "bad_signature");
    await updateProject(h.kv, project.id, (p) => ({ ...p, secret }));
    h.clock.advance(h.config.signatureMaxSkewMs - 500);
    const results = await replayRejected(
      h.kv,
      project.id,
      undefined,
      replayWith(h),
    );
    assert.deepEqual(results, [
      {
        entryId: older!.entryId,
        outcome: "skipped",
        why: "its signature is older than the signature skew",
      },
      { entryId: newer!.entryId, outcome: "stored", auth: "signature" },
    ]);
    assert.deepEqual(
      (await h.logs(project.id)).map((l) => l.id),
      [newer!.entryId],
    );
  },
);

harnessTest("replay never stores a replayed signature", async (h) => {
  const { project, body, headers } = await signedEntry(h);
  await postQueued(h, body, headers);
  await postQueued(h, body, headers);
  await h.process();
  const [kept] = await listRejected(h.kv, project.id);
  assert.equal(kept!.reason, "replayed");
  const [result] = await replayRejected(
    h.kv,
    project.id,
    undefined,
    replayWith(h),
  );
  assert.equal(result!.outcome, "skipped");
  assert.equal((await h.logs(project.id)).length, 1);
});

harnessTest(
  "replay stores nothing under a project deleted meanwhile",
  async (h) => {
    const project = await h.project([ORIGIN]);
    await postEntries(h, project.id, { origin: OTHER });
    await h.process();
    await allowValue(h.kv, project.id, OTHER);
    const held = holdCommits(h.kv);
    const gate = held.hold();
    const replay = replayRejected(
      held.kv,
      project.id,
      undefined,
      replayWith(h),
    );
    await within(gate.reached);
    await deleteProject(h.kv, project.id);
    gate.release();
    await assert.rejects(within(replay), ProjectNotFoundError);
    for (
      const prefix of [
        logChunksPrefix(project.id),
        statsPrefix(project.id),
        rejectedEntriesPrefix(project.id),
      ]
    ) {
      assert.deepEqual(await Array.fromAsync(h.kv.list({ prefix })), []);
    }
    const run = await rejected(h, ["replay", project.id]);
    assert.equal(run.code, 1);
  },
);

harnessTest(
  "a replay is stored under the project's quota and counted in its usage, as the consumer stores a batch",
  async (h) => {
    const project = await h.project([ORIGIN]);
    await setQuota(h.kv, project.id, { perDay: 2 });
    // One kept for its origin, then the day's quota filled.
    await postQueued(h, randomEntry({ projectId: project.id }), {
      Origin: OTHER,
    });
    await h.process();
    for (let i = 0; i < 2; i++) {
      await postQueued(h, randomEntry({ projectId: project.id }), {
        Origin: ORIGIN,
      });
    }
    await h.process();
    assert.equal((await h.logs(project.id)).length, 2);
    await allowValue(h.kv, project.id, OTHER);
    const [result] = await replayRejected(h.kv, project.id, undefined, {
      now: h.clock.now,
    });
    assert.equal(result!.outcome, "rejected");
    assert.equal((result as { reason: string }).reason, "over_quota");
    assert.equal((await h.logs(project.id)).length, 2);
    const [day] = await readUsage(h.kv, project.id, { now: h.clock.now() });
    assert.equal(day!.accepted, 3);
    assert.equal(day!.stored, 2);
    assert.equal(day!.over_quota, 1);
  },
);

harnessTest(
  "a replay late to an entry another replay stored meanwhile makes no quota grant: the day counts the entry once",
  async (h) => {
    const project = await h.project([ORIGIN]);
    await setQuota(h.kv, project.id, { perDay: 10 });
    await postQueued(h, randomEntry({ projectId: project.id }), {
      Origin: OTHER,
    });
    await h.process();
    await allowValue(h.kv, project.id, OTHER);
    const [kept] = await listRejected(h.kv, project.id);
    const held = holdCommits(h.kv);
    const gate = held.hold();
    const late = replayRejected(held.kv, project.id, undefined, replayWith(h));
    // The late replay read the entry and the quota and is about to grant.
    await within(gate.reached);
    const [first] = await replayRejected(
      h.kv,
      project.id,
      undefined,
      replayWith(h),
    );
    assert.equal(first!.outcome, "stored");
    gate.release();
    assert.deepEqual(await within(late), [
      { entryId: kept!.entryId, outcome: "missing" },
    ]);
    assert.equal((await h.logs(project.id)).length, 1);
    const state = await h.kv.get<Uint8Array>(quotaStateKey(project.id));
    assert.equal(decodeJson<QuotaState>(state.value)!.dayStored, 1);
    const grants = h.kv.list({
      prefix: quotaGrantsPrefix(`replay-${kept!.entryId}`),
    });
    for await (const grant of grants) assert.fail(`left: ${grant.key}`);
  },
);

harnessTest(
  "replay keeps an entry its level's retention rule still keeps, past the project's retention",
  async (h) => {
    const project = await h.project([ORIGIN]);
    await setRetention(h.kv, project.id, 1);
    await addRetentionRule(h.kv, project.id, "level>=error", 90);
    for (const level of ["error", "info"]) {
      await postQueued(h, randomEntry({ projectId: project.id, level }), {
        Origin: OTHER,
      });
    }
    await h.process();
    h.clock.advance(2 * DAY_MS);
    await allowValue(h.kv, project.id, OTHER);
    const results = await replayRejected(h.kv, project.id, undefined, {
      now: h.clock.now,
    });
    assert.deepEqual(results.map((r) => r.outcome).sort(), [
      "skipped",
      "stored",
    ]);
    const logs = await h.logs(project.id);
    assert.deepEqual(logs.map((l) => l.level), ["error"]);
  },
);

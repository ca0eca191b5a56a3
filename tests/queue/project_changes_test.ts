/**
 * Project changes seen by processing: a change made by an operator applies to
 * the next entry even while the consumer holds the record in its cache, and a
 * deleted project keeps nothing in KV, however its deletion interleaves with
 * the processing of entries that keep arriving. The interleavings are made
 * by hand: a KV whose commits can be held until released (tests/_helpers/hold.ts).
 *
 * @module
 */
import assert from "node:assert/strict";
import { ProjectCache } from "../../auth/projects.ts";
import { runCli } from "../../cli/main.ts";
import {
  batchProgressKey,
  logChunksPrefix,
  logSummariesPrefix,
  projectKey,
  rejectedEntriesPrefix,
  rejectionsPrefix,
  seenSignaturesPrefix,
  statsPrefix,
} from "../../db/keys.ts";
import { deleteProject } from "../../db/deletion.ts";
import {
  addLevel,
  allowValue,
  disallowValue,
  getProject,
  rotateSecret,
} from "../../db/projects.ts";
import { Consumer } from "../../queue/consumer.ts";
import {
  assertCounts,
  globalRejected,
  type Harness,
  ORIGIN,
  pendingBatches,
  postEntries,
  postQueued,
  randomEntry,
  withHarness,
} from "../_helpers/harness.ts";
import { holdCommits, within } from "../_helpers/hold.ts";

const NEW_ORIGIN = "https://new.example.com";
/** A cache time like the default, so that every record below is cached. */
const CACHE_MS = 2000;

/** Runs `fn` on a harness whose consumer caches project records. */
async function withCache(fn: (h: Harness) => Promise<void>): Promise<void> {
  await withHarness(async (h) => {
    await fn(h);
    // Without lingering: the first commit goes alone (oneBatchFor).
  }, { config: { projectCacheMs: CACHE_MS }, pipeline: { lingerMs: 0 } });
}

/** Every key left under a project's id, in every prefix that holds one. */
async function keysUnder(kv: Deno.Kv, projectId: string): Promise<string[]> {
  const keys: string[] = [];
  const record = await kv.get(projectKey(projectId));
  if (record.versionstamp !== null) keys.push(record.key.join("/"));
  for (
    const prefix of [
      logChunksPrefix(projectId),
      logSummariesPrefix(projectId),
      statsPrefix(projectId),
      rejectionsPrefix(projectId),
      rejectedEntriesPrefix(projectId),
      seenSignaturesPrefix(projectId),
    ]
  ) {
    for await (const entry of kv.list({ prefix })) {
      keys.push(entry.key.join("/"));
    }
  }
  return keys;
}

/**
 * Asserts that nothing is left under the deleted project, that `unknown`
 * entries were counted as naming no project, and that no batch waits.
 */
async function assertGoneWithoutTrace(
  h: Harness,
  projectId: string,
  unknown: number,
): Promise<void> {
  assert.deepEqual(await keysUnder(h.kv, projectId), []);
  assert.deepEqual(await globalRejected(h.kv), { unknown_project: unknown });
  assert.deepEqual(await pendingBatches(h.kv), []);
}

/** A consumer of another process, on `kv`, caching records like the server. */
function consumerOn(h: Harness, kv: Deno.Kv): Consumer {
  return new Consumer({
    kv,
    now: h.clock.now,
    maxSkewMs: h.config.signatureMaxSkewMs,
    projects: new ProjectCache(kv, { ttlMs: CACHE_MS, now: h.clock.now }),
  });
}

// -------------------------------------------------------- settings changes

/** Sends one entry (with `fields`) from `origin`, and processes it. */
async function sendFrom(
  h: Harness,
  projectId: string,
  origin: string,
  fields: Record<string, unknown> = {},
): Promise<void> {
  await postQueued(h, randomEntry({ projectId, ...fields }), {
    Origin: origin,
  });
  await h.process();
}

Deno.test("an allowed origin applies to the next entry while the project record is cached", async () => {
  await withCache(async (h) => {
    const project = await h.project([ORIGIN]);
    // The record is now cached, without the new origin.
    await sendFrom(h, project.id, NEW_ORIGIN);
    await allowValue(h.kv, project.id, NEW_ORIGIN);
    for (const delay of [0, 500, 500, 500]) {
      h.clock.advance(delay);
      await sendFrom(h, project.id, NEW_ORIGIN);
    }
    await assertCounts(h, project.id, 4, { bad_origin: 1 });
    const logs = await h.logs(project.id);
    assert.deepEqual(logs.map((l) => l.origin), Array(4).fill(NEW_ORIGIN));
  });
});

Deno.test("an entry signed with the new secret right after rotate-secret is stored", async (t) => {
  for (const graceMs of [0, 86_400_000]) {
    await t.step(`with a grace of ${graceMs} ms`, async () => {
      await withCache(async (h) => {
        const project = await h.project([]);
        await postEntries(h, project.id, { secret: project.secret });
        await h.process();
        const rotated = await rotateSecret(h.kv, project.id, {
          graceMs,
          now: h.clock.now,
        });
        await postEntries(h, project.id, { secret: rotated.secret });
        await h.process();
        await assertCounts(h, project.id, 2, {});
        const logs = await h.logs(project.id);
        assert.deepEqual(logs.map((l) => l.auth), ["signature", "signature"]);
      });
    });
  }
});

Deno.test("a removed origin and an added level apply to the next entry while the record is cached", async () => {
  await withCache(async (h) => {
    const project = await h.project([ORIGIN]);
    await sendFrom(h, project.id, ORIGIN);
    await disallowValue(h.kv, project.id, ORIGIN);
    await sendFrom(h, project.id, ORIGIN);
    await allowValue(h.kv, project.id, NEW_ORIGIN);
    await addLevel(h.kv, project.id, "audit");
    await sendFrom(h, project.id, NEW_ORIGIN, { level: "audit" });
    await assertCounts(h, project.id, 2, { bad_origin: 1 });
    const logs = await h.logs(project.id);
    assert.deepEqual(logs.map((l) => [l.level, l.origin]), [
      ["info", ORIGIN],
      ["audit", NEW_ORIGIN],
    ]);
  });
});

// ---------------------------------------------------------------- deletion

Deno.test("entries processed after their project was deleted store nothing under it, although its record was cached", async () => {
  await withCache(async (h) => {
    const project = await h.project([ORIGIN]);
    const send = () => postEntries(h, project.id, { origin: ORIGIN });
    await send();
    await h.process();
    assert.equal((await h.logs(project.id)).length, 1);
    await deleteProject(h.kv, project.id);
    for (let i = 0; i < 3; i++) await send();
    await h.process();
    await assertGoneWithoutTrace(h, project.id, 3);
  });
});

Deno.test("a result commit in flight while its project is deleted stores nothing under it", async () => {
  await withCache(async (h) => {
    const project = await h.project([ORIGIN]);
    await postEntries(h, project.id, { origin: ORIGIN, count: 5 });
    await postEntries(h, project.id, { origin: "https://evil.example.net" });
    await h.pipeline.producer.flush();
    const held = holdCommits(h.kv);
    const consumer = consumerOn(h, held.kv);
    const batches = await pendingBatches(h.kv);
    assert.equal(batches.length, 6);
    // The first batch warms the cache; the second is held at its commit.
    assert.equal(await consumer.process(batches[0]!.id), "processed");
    const gate = held.hold();
    const processing = consumer.process(batches[1]!.id);
    await within(gate.reached);
    assert.equal(await deleteProject(h.kv, project.id), 1);
    gate.release();
    assert.equal(await within(processing), "processed");
    for (const batch of batches.slice(2)) {
      assert.equal(await consumer.process(batch.id), "processed");
    }
    await assertGoneWithoutTrace(h, project.id, 5);
  });
});

Deno.test("a signature claim in flight while its project is deleted leaves no remembered signature", async () => {
  await withCache(async (h) => {
    const project = await h.project([ORIGIN]);
    await postEntries(h, project.id, { origin: ORIGIN });
    await postEntries(h, project.id, { secret: project.secret });
    await h.pipeline.producer.flush();
    const held = holdCommits(h.kv);
    const consumer = consumerOn(h, held.kv);
    const [warm, signed] = await pendingBatches(h.kv);
    assert.equal(await consumer.process(warm!.id), "processed");
    // The signed entry's first commit is its claim.
    const gate = held.hold();
    const processing = consumer.process(signed!.id);
    await within(gate.reached);
    await deleteProject(h.kv, project.id);
    gate.release();
    assert.equal(await within(processing), "processed");
    assert.deepEqual(await keysUnder(h.kv, project.id), []);
    assert.deepEqual(await globalRejected(h.kv), { unknown_project: 1 });
  });
});

Deno.test("project delete --yes while entries keep arriving leaves nothing of the project", async () => {
  await withCache(async (h) => {
    const project = await h.project([ORIGIN]);
    let sent = 0;
    let stop = false;
    const sender = (async () => {
      while (!stop) {
        await postEntries(h, project.id, { origin: ORIGIN });
        sent++;
        await h.process();
        h.clock.advance(10);
      }
    })();
    while (sent < 20) await new Promise((r) => setTimeout(r, 1));
    let out = "";
    const code = await runCli({
      kv: h.kv,
      args: ["project", "delete", project.id, "--yes", "--json"],
      stdout: (text) => (out += text),
      stderr: () => {},
      now: h.clock.now,
      isTerminal: false,
    });
    assert.equal(code, 0);
    const deleted = JSON.parse(out).logs as number;
    const atDeletion = sent;
    while (sent < atDeletion + 20) await new Promise((r) => setTimeout(r, 1));
    stop = true;
    await within(sender);
    await h.process();
    assert.equal(await getProject(h.kv, project.id), null);
    assert.deepEqual(await keysUnder(h.kv, project.id), []);
    // Every entry sent is accounted for: deleted with the project, or
    // rejected as naming no project.
    const unknown = (await globalRejected(h.kv)).unknown_project ?? 0;
    assert.ok(unknown >= 20, `${unknown} rejected as unknown_project`);
    assert.equal(deleted + unknown, sent);
  });
});

// ------------------------------------------------ many projects in a batch

/**
 * Posts one allowed entry for each project, all in one group commit, and
 * returns the id of their batch.
 */
async function oneBatchFor(h: Harness, ids: string[]): Promise<string> {
  // While the commit of a first entry is in flight, the others gather.
  const lead = await h.project([ORIGIN]);
  const first = postEntries(h, lead.id, { origin: ORIGIN });
  await Promise.all(
    ids.map((projectId) => postEntries(h, projectId, { origin: ORIGIN })),
  );
  await first;
  const batches = await pendingBatches(h.kv);
  assert.deepEqual(batches.map((b) => b.header.count), [1, ids.length]);
  assert.equal(await consumerOn(h, h.kv).process(batches[0]!.id), "processed");
  return batches[1]!.id;
}

/**
 * Starts processing `batchId` in another process, and waits until it has made
 * its first commit and is held at its second (`second` lets it go on).
 */
async function heldAtSecondCommit(h: Harness, batchId: string) {
  const held = holdCommits(h.kv);
  const gate = held.hold();
  const processing = consumerOn(h, held.kv).process(batchId);
  await within(gate.reached);
  const second = held.hold();
  gate.release();
  await within(second.reached);
  return { processing, second };
}

Deno.test("a batch spanning more projects than one commit can check stores each entry once, under projects that exist", async () => {
  await withCache(async (h) => {
    const projects = [];
    for (let i = 0; i < 20; i++) projects.push(await h.project([ORIGIN]));
    const ids = projects.map((p) => p.id);
    const batchId = await oneBatchFor(h, [...ids, "no-such-project"]);
    // Deleted between two rounds: after the first commit, before the second.
    const { processing: first, second } = await heldAtSecondCommit(h, batchId);
    await deleteProject(h.kv, ids.at(-1)!);
    second.release();
    assert.equal(await within(first), "processed");
    for (const id of ids.slice(0, -1)) {
      await assertCounts(h, id, 1, {});
      assert.equal((await h.logs(id)).length, 1);
    }
    await assertGoneWithoutTrace(h, ids.at(-1)!, 2);
    assert.equal((await h.kv.get(batchProgressKey(batchId))).value, null);
  });
});

Deno.test("a batch committed in rounds and interrupted is taken up where it stopped, by another process", async () => {
  await withCache(async (h) => {
    const ids = [];
    for (let i = 0; i < 20; i++) ids.push((await h.project([ORIGIN])).id);
    const batchId = await oneBatchFor(h, ids);
    // While the first process waits on its second commit, another one
    // processes the batch from the start and the first then loses.
    const { processing: interrupted, second } = await heldAtSecondCommit(
      h,
      batchId,
    );
    assert.equal(await consumerOn(h, h.kv).process(batchId), "processed");
    second.release();
    assert.equal(await within(interrupted), "conflict");
    for (const id of ids) {
      await assertCounts(h, id, 1, {});
    }
    assert.deepEqual(await pendingBatches(h.kv), []);
  });
});

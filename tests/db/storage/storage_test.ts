/**
 * Storage in the steady state (docs/storage.md): entries are stored in final
 * form by the commit that accepts them, the merger keeps chunks few while a
 * producer keeps writing, retention and deletion go on under traffic, and
 * intake waits for storage when the merge backlog passes its bound.
 */
import assert from "node:assert/strict";
import { logMergesKey, projectKey } from "../../../db/keys.ts";
import { deleteProject } from "../../../db/deletion.ts";
import { setRetention } from "../../../db/projects.ts";
import { readBacklog } from "../../../db/backlog.ts";
import {
  listLogs,
  listSummaries,
  parseQuery,
  queryLogs,
} from "../../../db/query/mod.ts";
import { mergeProject } from "../../../db/storage/merge.ts";
import { FINAL_TIER } from "../../../db/storage/chunk.ts";
import { MERGE_FANIN } from "../../../db/storage/tiers.ts";
import { idTime, timeBound } from "../../../domain/ids.ts";
import type { LogRecord } from "../../../domain/entry.ts";
import {
  harnessTest,
  ORIGIN,
  postEntries,
  randomEntry,
} from "../../_helpers/harness.ts";
import {
  DAY,
  HOUR,
  queryProjectTest,
  recordAt,
  sortedIds,
  storeBatch,
  T0,
} from "../../_helpers/query.ts";

harnessTest(
  "an accepted entry is compressed and searchable once the commit that accepts it is made",
  async (h) => {
    const project = await h.project();
    for (const word of ["alpha", "okapi", "gamma"]) {
      const entry = randomEntry({ projectId: project.id });
      entry.data = { title: "Sighting", message: `an ${word} was seen` };
      assert.equal((await h.post(entry, { Origin: ORIGIN })).status, 200);
    }
    await h.process();
    const summaries = await listSummaries(h.kv, project.id);
    assert.equal(summaries.reduce((n, s) => n + s.count, 0), 3);
    assert.ok(summaries.every((s) => s.tier === 0));
    // Stored deflated, with a summary, and no merge ran.
    assert.ok(summaries.every((s) => s.bytes > 0 && s.bytes < s.raw));
    assert.equal((await h.kv.get(logMergesKey(project.id))).value, null);
    const found = await queryLogs(h.kv, project.id, {
      filter: parseQuery("okapi"),
    });
    assert.deepEqual(
      found.records.map((r) => r.data.message),
      ["an okapi was seen"],
    );
    // A fresh chunk's Bloom filters answer "maybe": its lines are read.
    const none = await queryLogs(h.kv, project.id, {
      filter: parseQuery("zebra"),
    });
    assert.deepEqual(none.records, []);
    assert.equal(none.stats.chunksRead, summaries.length);
    // Once merged, the chunk's tokens rule the word out without a read.
    const merged = await mergeProject(h.kv, project.id, {
      now: h.clock.now() + HOUR,
    });
    assert.equal(merged.sources, summaries.length);
    const after = await queryLogs(h.kv, project.id, {
      filter: parseQuery("zebra"),
    });
    assert.deepEqual(after.records, []);
    assert.equal(after.stats.chunksRead, 0, "the Bloom filter ruled it out");
    const okapi = await queryLogs(h.kv, project.id, {
      filter: parseQuery("okapi"),
    });
    assert.deepEqual(
      okapi.records.map((r) => r.data.message),
      ["an okapi was seen"],
    );
  },
);

queryProjectTest(
  "the merger keeps chunks few while a producer never stops, and every entry stays exact",
  async (kv, projectId) => {
    const all: LogRecord[] = [];
    let rewritten = 0;
    let maxOpen = 0;
    // 50 entries a second in batches of 5 for 4 minutes, a merge round every
    // second: the merger runs between batches, as it does under traffic.
    for (let step = 0; step < 2400; step++) {
      const at = T0 + step * 100;
      const batch = Array.from(
        { length: 5 },
        (_, i) =>
          recordAt(at + i * 20, { data: { title: "Tick", n: step * 5 + i } }),
      );
      all.push(...batch);
      await storeBatch(kv, projectId, batch);
      if (step % 10 === 9) {
        const done = await mergeProject(kv, projectId, { now: at + 100 });
        rewritten += done.entries;
        maxOpen = Math.max(maxOpen, done.backlog.chunks);
      }
    }
    const listed = await Array.fromAsync(listLogs(kv, projectId));
    assert.deepEqual(listed.map((r) => r.id), sortedIds(all));
    const summaries = await listSummaries(kv, projectId);
    assert.equal(summaries.reduce((n, s) => n + s.count, 0), all.length);
    // 2,400 batches became few chunks; what is still open stays bounded.
    assert.ok(summaries.length < 60, `${summaries.length} chunks`);
    assert.ok(maxOpen <= 4 * MERGE_FANIN, `${maxOpen} open chunks`);
    // Tiers keep rewriting logarithmic: each entry about 2-3 times.
    assert.ok(
      rewritten <= 4 * all.length,
      `${rewritten} rewrites of ${all.length} entries`,
    );
    assert.ok(summaries.some((s) => s.tier === FINAL_TIER));
  },
);

queryProjectTest(
  "retention ends expired chunks while a producer keeps writing, and nothing else",
  async (kv, projectId) => {
    await setRetention(kv, projectId, 1);
    const all: LogRecord[] = [];
    let now = T0;
    let expired = 0;
    // Three days of traffic, 20 entries every 5 minutes, a round each hour.
    for (let step = 0; step < 3 * 24 * 12; step++) {
      now = T0 + step * 300_000;
      const batch = Array.from(
        { length: 20 },
        (_, i) => recordAt(now + i * 1000),
      );
      all.push(...batch);
      await storeBatch(kv, projectId, batch);
      if (step % 12 === 11) {
        expired += (await mergeProject(kv, projectId, { now })).expired;
      }
    }
    assert.ok(expired > 0);
    const horizon = timeBound(now - DAY);
    const summaries = await listSummaries(kv, projectId);
    assert.ok(summaries.every((s) => s.lastId >= horizon));
    const kept = new Set(
      (await Array.fromAsync(listLogs(kv, projectId))).map((r) => r.id),
    );
    // Every entry within the retention is kept; older ones go at the latest
    // with the chunk's newest entry.
    const young = all.filter((r) => r.receivedAt >= now - DAY + HOUR);
    assert.ok(young.every((r) => kept.has(r.id)));
    const old = all.filter((r) => r.receivedAt < now - DAY - HOUR);
    assert.ok(old.every((r) => !kept.has(r.id)));
  },
);

queryProjectTest(
  "a shorter retention ends stored entries past it at the next round; a longer one keeps what is stored",
  async (kv, projectId) => {
    const old = Array.from({ length: 20 }, (_, i) => recordAt(T0 + i * 1000));
    await storeBatch(kv, projectId, old);
    const now = T0 + 3 * DAY;
    // Within the default 30 days: kept by a round.
    await mergeProject(kv, projectId, { now });
    assert.equal((await Array.fromAsync(listLogs(kv, projectId))).length, 20);
    // Shortened to 2 days: the entries of three days ago go at the next round.
    await setRetention(kv, projectId, 2);
    assert.ok((await mergeProject(kv, projectId, { now })).expired > 0);
    assert.deepEqual(await Array.fromAsync(listLogs(kv, projectId)), []);
    // Lengthened again: a new entry is kept, nothing comes back.
    await setRetention(kv, projectId, 30);
    await storeBatch(kv, projectId, [recordAt(now)]);
    await mergeProject(kv, projectId, { now: now + DAY });
    assert.equal((await Array.fromAsync(listLogs(kv, projectId))).length, 1);
  },
);

harnessTest(
  "deleting a project under traffic leaves nothing under it, and merges write nothing after",
  async (h) => {
    const project = await h.project();
    for (let i = 0; i < 20; i++) {
      await postEntries(h, project.id, { origin: ORIGIN });
      await h.process();
    }
    assert.equal((await listSummaries(h.kv, project.id)).length, 20);
    // Entries keep coming while the project is deleted.
    const posting = Array.from(
      { length: 10 },
      () => h.post(randomEntry({ projectId: project.id }), { Origin: ORIGIN }),
    );
    assert.equal(await deleteProject(h.kv, project.id), 20);
    await Promise.all(posting);
    await h.process();
    const merged = await mergeProject(h.kv, project.id, {
      now: h.clock.now() + HOUR,
    });
    assert.equal(merged.merges, 0);
    const left = await Array.fromAsync(h.kv.list({ prefix: [] }));
    assert.deepEqual(
      left.filter((e) => e.key.includes(project.id)).map((e) => e.key),
      [],
    );
  },
);

harnessTest(
  "the endpoint answers 503 while the merge backlog is past its bound, and 200 once merged",
  async (h) => {
    h.pipeline.start();
    const merger = h.pipeline.merger!;
    // The merger's first round runs at start: let it end before entries
    // come, so that only the rounds below merge (the next is an hour away).
    await merger.round({ maxMerges: 0 });
    const project = await h.project();
    const post = () =>
      h.post(randomEntry({ projectId: project.id }), { Origin: ORIGIN });
    for (let i = 0; i < MERGE_FANIN + 4; i++) {
      assert.equal((await post()).status, 200);
      await h.process();
    }
    // A round that merges nothing sees them all open: past the bound of 10.
    const seen = await merger.round({ maxMerges: 0 });
    assert.equal(seen.backlog.chunks, MERGE_FANIN + 4);
    const refused = await post();
    assert.equal(refused.status, 503);
    assert.equal(refused.headers.get("retry-after"), "1");
    const body = await refused.json();
    assert.equal(body.error.code, "unavailable");
    assert.match(body.error.message, /catching up with a backlog/);
    const backlog = await readBacklog(h.kv, project.id, h.clock.now());
    assert.equal(backlog.unmerged.entries, MERGE_FANIN + 4);
    assert.equal(backlog.unmerged.oldestAgeMs, 0);
    // The merger catches up; intake resumes.
    const done = await merger.round();
    assert.ok(done.merges > 0);
    assert.ok(done.backlog.chunks <= 5);
    // Merged chunks are open but no longer fresh: no entry waits in tier 0.
    assert.equal(done.backlog.fresh, 0);
    assert.equal(done.backlog.oldestFresh, null);
    assert.equal((await post()).status, 200);
  },
  {
    config: { maxMergeBacklog: 10 },
    pipeline: { mergeIntervalMs: 3_600_000, sweepIntervalMs: 3_600_000 },
  },
);

harnessTest(
  "the backlog shows entries not yet stored and not yet merged, with the age of the oldest",
  async (h) => {
    const project = await h.project();
    await postEntries(h, project.id, { origin: ORIGIN });
    await h.pipeline.producer.flush();
    h.clock.advance(1500);
    const queued = await readBacklog(h.kv, project.id, h.clock.now());
    assert.deepEqual(queued.queued, {
      units: 1,
      entries: 1,
      oldestAgeMs: 1500,
    });
    await h.process();
    h.clock.advance(500);
    const stored = await readBacklog(h.kv, project.id, h.clock.now());
    assert.deepEqual(stored.queued, {
      units: 0,
      entries: 0,
      oldestAgeMs: null,
    });
    assert.deepEqual(stored.unmerged, {
      units: 1,
      entries: 1,
      oldestAgeMs: 2000,
    });
    assert.equal(
      idTime((await h.logs(project.id))[0]!.id),
      h.clock.now() - 2000,
    );
  },
);

queryProjectTest(
  "a merge round whose project is deleted after it began writes nothing",
  async (kv, projectId) => {
    for (let i = 0; i < 20; i++) {
      await storeBatch(kv, projectId, [recordAt(T0 + i * 1000)]);
    }
    // The record goes right after the round read it: only its check can stop
    // the merges, since nothing moves the merge marker.
    let read = false;
    const deleting = new Proxy(kv, {
      get(target, name) {
        if (name === "getMany" && !read) {
          read = true;
          return async (keys: Deno.KvKey[]) => {
            const entries = await target.getMany(keys);
            await target.delete(projectKey(projectId));
            return entries;
          };
        }
        const value = Reflect.get(target, name);
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
    const round = await mergeProject(deleting, projectId, { now: T0 + HOUR });
    assert.ok(read);
    assert.equal(round.merges, 0);
    assert.equal((await listSummaries(kv, projectId)).length, 20);
  },
);

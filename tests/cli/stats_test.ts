/**
 * `deno task stats`: a project's counters and its ring of recent
 * rejections, for humans and as JSON, run in-process against an in-memory
 * KV.
 *
 * @module
 */
import assert from "node:assert/strict";
import { rejectionKey } from "../../db/keys.ts";
import { encodeJson } from "../../db/kv.ts";
import type { Rejection } from "../../db/stats.ts";
import {
  harnessTest,
  ORIGIN,
  postEntries,
  randomEntry,
} from "../_helpers/harness.ts";
import { cli, create, json, kvTest, threeKindsTest } from "../_helpers/cli.ts";

threeKindsTest(
  "stats --json counts accepted and rejected entries and lists recent rejections newest first",
  async (h, project) => {
    const { projectId } = project;
    h.clock.advance(1000);
    await postEntries(h, projectId, { origin: "https://evil.example.com" });
    h.clock.advance(1000);
    await h.post(randomEntry({ projectId, appid: "com.evil.app" }));
    h.clock.advance(1000);
    await postEntries(h, projectId, { origin: "https://evil.example.com" });
    h.clock.advance(1000);
    await postEntries(h, projectId);
    await h.process();

    const out = json(await cli(h.kv, ["stats", projectId, "--json"]));
    assert.deepEqual(Object.keys(out), [
      "accepted",
      "acceptedOnReplay",
      "rejected",
      "recent",
      "backlog",
    ]);
    assert.equal(out.accepted, 3);
    const backlog = out.backlog as Record<string, Record<string, unknown>>;
    assert.deepEqual(backlog.queued, {
      batches: 0,
      entries: 0,
      oldestAgeSeconds: null,
    });
    assert.equal(backlog.unmerged!.entries, 3);
    assert.deepEqual(out.rejected, {
      bad_origin: 2,
      no_credentials: 1,
      unknown_appid: 1,
    });
    const recent = out.recent as Record<string, unknown>[];
    assert.deepEqual(
      recent.map((r) => [r.reason, r.at, r.origin ?? r.appid ?? null]),
      [
        ["no_credentials", "2026-01-01T00:00:06.000Z", null],
        ["bad_origin", "2026-01-01T00:00:05.000Z", "https://evil.example.com"],
        ["unknown_appid", "2026-01-01T00:00:04.000Z", "com.evil.app"],
        ["bad_origin", "2026-01-01T00:00:03.000Z", "https://evil.example.com"],
      ],
    );
    assert.match(String(recent[0]!.entryId), /^[0-9a-f]{28}$/);
    assert.equal(recent[0]!.level, "info");
  },
);

kvTest(
  "stats sorts the ring of recent rejections by time, whatever their slots",
  async (kv) => {
    const { projectId } = await create(kv);
    // After the ring wraps, slot 0 holds the newest rejection.
    const at = (s: number) => Date.UTC(2026, 0, 1, 0, 0, s);
    const slots: [number, Rejection][] = [
      [0, { entryId: "c", at: at(30), reason: "bad_origin", level: "info" }],
      [1, { entryId: "a", at: at(10), reason: "replayed", level: "info" }],
      [2, { entryId: "b", at: at(20), reason: "bad_signature", level: "info" }],
    ];
    for (const [slot, r] of slots) {
      await kv.set(rejectionKey(projectId, slot), encodeJson(r));
    }
    const out = json(await cli(kv, ["stats", projectId, "--json"]));
    assert.deepEqual(
      (out.recent as { entryId: string }[]).map((r) => r.entryId),
      ["c", "b", "a"],
    );
    assert.deepEqual(out.rejected, {});
    assert.equal(out.accepted, 0);
  },
);

harnessTest(
  "stats shows the counters and the reason of each recent rejection for humans",
  async (h) => {
    const { projectId } = await create(h.kv, "https://app.example.com");
    await postEntries(h, projectId, { origin: ORIGIN });
    h.clock.advance(1000);
    await postEntries(h, projectId, { origin: "https://evil.example.com" });
    await h.process();
    const run = await cli(h.kv, ["stats", projectId]);
    assert.equal(run.code, 0, run.stderr);
    assert.match(run.stdout, /^Accepted +1$/m);
    assert.match(run.stdout, /^Rejected +1$/m);
    assert.match(run.stdout, /^ {2}bad_origin +1$/m);
    assert.match(
      run.stdout,
      /^TIME +REASON +LEVEL +ORIGIN \/ APP ID +ENTRY\n2026-01-01 00:00:01Z +bad_origin +info +https:\/\/evil\.example\.com +[0-9a-f]{28}$/m,
    );
  },
);

harnessTest(
  "stats --global counts the rejections of entries naming no project",
  async (h) => {
    await h.post(randomEntry({ projectId: "no-such-project" }));
    await h.process();
    const out = json(await cli(h.kv, ["stats", "--global", "--json"]));
    assert.deepEqual(out, { rejected: { unknown_project: 1 } });
  },
);

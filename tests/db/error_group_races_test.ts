/**
 * Error groups written by result commits that race with each other or with
 * a deletion made between a commit's read and the commit: what is stored
 * after each interleaving, made by hand (a commit prepared, another step,
 * then the commit).
 *
 * @module
 */
import assert from "node:assert/strict";
import { RecordedAtomic } from "../../db/atomic.ts";
import {
  addErrorGroups,
  prepareErrorGroups,
  sweepErrorGroups,
} from "../../db/error_groups.ts";
import { findGroup, listGroups } from "../../db/error_group_reads.ts";
import { changeTriage, readTriage } from "../../db/error_group_triage.ts";
import { listReleases } from "../../db/releases.ts";
import { projectKey } from "../../db/keys.ts";
import { encodeJson } from "../../db/kv.ts";
import type { LogRecord } from "../../domain/entry.ts";
import { createId } from "../../domain/ids.ts";
import { kvTest, ORIGIN } from "../_helpers/harness.ts";
import { kvWith } from "../_helpers/kv_with.ts";

const DAY = 24 * 3_600_000;
const RETENTION_MS = 30 * DAY;
const T0 = Date.UTC(2026, 0, 5);

function entry(at: number, release?: string): LogRecord {
  return {
    id: createId(at),
    receivedAt: at,
    level: "error",
    data: { title: "TypeError: cart is undefined" },
    device: {},
    context: release === undefined ? {} : { release },
    auth: "origin",
    origin: ORIGIN,
  };
}

/** A result commit of `records`' groups, read now and committed later. */
async function prepare(kv: Deno.Kv, records: LogRecord[]) {
  await kv.set(projectKey("p1"), encodeJson({ id: "p1" }));
  const op = new RecordedAtomic();
  addErrorGroups(
    op,
    await prepareErrorGroups(kv, "p1", records, {
      now: records[0]!.receivedAt,
      retentionMs: RETENTION_MS,
    }),
  );
  return { commit: () => op.commit(kv) };
}

kvTest(
  "a group another process deletes between a commit's read and the commit comes back with its id row, and is triaged by its fingerprint",
  async (kv) => {
    assert.ok((await (await prepare(kv, [entry(T0)])).commit()).ok);
    const later = T0 + RETENTION_MS + DAY;
    const racing = await prepare(kv, [entry(later)]);
    // Another process (its own handle, its own count of the groups) sweeps
    // the group, last seen past the retention, before the commit.
    await sweepErrorGroups(kvWith(kv, {}), "p1", {
      now: later,
      retentionMs: RETENTION_MS,
    });
    assert.deepEqual(await listGroups(kv, "p1", later), []);
    assert.ok((await racing.commit()).ok);
    const [group] = await listGroups(kv, "p1", later);
    assert.equal(group!.count, 1, "the entries counted since it came back");
    const found = await findGroup(kv, "p1", group!.fingerprint, later);
    assert.equal(found?.id, group!.id);
    await changeTriage(kv, "p1", group!.fingerprint, { action: "resolve" }, {
      now: later + 1,
      actor: "cli",
    });
    const triage = await readTriage(kv, "p1", [group!], later + 2);
    assert.equal(triage.get(group!.id)!.status, "resolved");
  },
);

/** Each release's new groups, by name. */
async function newGroups(kv: Deno.Kv): Promise<Record<string, number>> {
  const releases = await listReleases(kv, "p1");
  return Object.fromEntries(releases.map((r) => [r.name, r.newGroups]));
}

kvTest(
  "two commits that both read a new group as absent count it once in its release's new groups",
  async (kv) => {
    const first = await prepare(kv, [entry(T0, "1.0.0")]);
    const second = await prepare(kv, [entry(T0 + 1, "1.0.0")]);
    assert.ok((await first.commit()).ok);
    assert.ok((await second.commit()).ok);
    const groups = await listGroups(kv, "p1", T0 + 1);
    assert.equal(groups.length, 1);
    assert.equal(groups[0]!.count, 2);
    assert.deepEqual(await newGroups(kv), { "1.0.0": 1 });
  },
);

kvTest(
  "a new group two commits made with first entries of two releases counts in the release its record names, and no longer once it is deleted",
  async (kv) => {
    const first = await prepare(kv, [entry(T0, "1.0.0")]);
    const second = await prepare(kv, [entry(T0 + 1, "1.0.1")]);
    assert.ok((await first.commit()).ok);
    assert.ok((await second.commit()).ok);
    const [group] = await listGroups(kv, "p1", T0 + 1);
    assert.equal(group!.firstRelease, "1.0.1", "the last commit's");
    assert.deepEqual(await newGroups(kv), { "1.0.0": 0, "1.0.1": 1 });
    const later = T0 + RETENTION_MS + DAY;
    await sweepErrorGroups(kv, "p1", { now: later, retentionMs: RETENTION_MS });
    assert.deepEqual(await newGroups(kv), { "1.0.0": 0, "1.0.1": 0 });
  },
);

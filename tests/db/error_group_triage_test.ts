/**
 * Triage of error groups: every transition of a group's status, derived
 * from the exact counts the consumer keeps (resolved, in a release, also
 * one not seen yet; ignored forever, until a date, until N more entries;
 * regressed, but never by an older release, also once the release resolved
 * in has no counters left or the group dropped a release's count), and the
 * releases kept beside.
 *
 * @module
 */
import assert from "node:assert/strict";
import { RecordedAtomic } from "../../db/atomic.ts";
import { addErrorGroups, prepareErrorGroups } from "../../db/error_groups.ts";
import { findGroup } from "../../db/error_group_reads.ts";
import {
  changeTriage,
  GroupNotFoundError,
  readTriage,
  type TriageChange,
} from "../../db/error_group_triage.ts";
import {
  compareReleases,
  listReleases,
  type Release,
} from "../../db/releases.ts";
import { projectKey, releaseCountKey } from "../../db/keys.ts";
import { encodeJson } from "../../db/kv.ts";
import { addUser } from "../../db/users.ts";
import { InvalidValueError } from "../../db/validation.ts";
import type { LogRecord } from "../../domain/entry.ts";
import { fingerprintOf } from "../../domain/fingerprint.ts";
import { createId } from "../../domain/ids.ts";
import { kvTest, ORIGIN } from "../_helpers/harness.ts";

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const T0 = Date.UTC(2026, 0, 5);
const TITLE = "TypeError: cart is undefined";

function entry(at: number, release?: string, title = TITLE): LogRecord {
  return {
    id: createId(at),
    receivedAt: at,
    level: "error",
    data: { title },
    device: {},
    context: release === undefined ? {} : { release },
    auth: "origin",
    origin: ORIGIN,
  };
}

/** Stores `records`' groups and releases as the consumer's commit does. */
async function ingest(kv: Deno.Kv, records: LogRecord[]): Promise<void> {
  const now = records[0]!.receivedAt;
  await kv.set(projectKey("p1"), encodeJson({ id: "p1" }));
  const op = kv.atomic();
  addErrorGroups(
    op,
    await prepareErrorGroups(kv, "p1", records, { now, retentionMs: 30 * DAY }),
  );
  assert.ok((await op.commit()).ok);
}

const FP = fingerprintOf({ data: { title: TITLE } }).fingerprint;

async function statusAt(kv: Deno.Kv, now: number): Promise<string> {
  const group = await findGroup(kv, "p1", FP, now);
  assert.ok(group, "the group exists");
  return (await readTriage(kv, "p1", [group], now)).get(group.id)!.status;
}

function change(kv: Deno.Kv, c: TriageChange, now: number) {
  return changeTriage(kv, "p1", FP, c, { now, actor: "cli" });
}

kvTest("a new group is unresolved", async (kv) => {
  await ingest(kv, [entry(T0, "1.0.0")]);
  assert.equal(await statusAt(kv, T0), "unresolved");
});

kvTest(
  "resolved without a release: regressed by any new entry",
  async (kv) => {
    await ingest(kv, [entry(T0)]);
    await change(kv, { action: "resolve" }, T0 + 1000);
    assert.equal(await statusAt(kv, T0 + 2000), "resolved");
    await ingest(kv, [entry(T0 + 3000)]);
    assert.equal(await statusAt(kv, T0 + 4000), "regressed");
    await change(kv, { action: "reopen" }, T0 + 5000);
    assert.equal(await statusAt(kv, T0 + 6000), "unresolved");
  },
);

kvTest(
  "resolved in a release: an older or the same release does not reopen it, a later one does",
  async (kv) => {
    await ingest(kv, [entry(T0, "1.2.0"), entry(T0 + 1, "1.3.0")]);
    await change(kv, { action: "resolve", inRelease: "1.3.0" }, T0 + 1000);
    await ingest(kv, [entry(T0 + 2000, "1.2.0")]);
    assert.equal(await statusAt(kv, T0 + 2500), "resolved", "older release");
    await ingest(kv, [entry(T0 + 3000, "1.3.0"), entry(T0 + 3001)]);
    assert.equal(
      await statusAt(kv, T0 + 3500),
      "resolved",
      "the same release, and none",
    );
    await ingest(kv, [entry(T0 + 4000, "1.10.0")]);
    assert.equal(await statusAt(kv, T0 + 4500), "regressed", "1.10.0 > 1.3.0");
  },
);

kvTest(
  "resolved in a release not seen yet: the current release does not reopen it, the next does",
  async (kv) => {
    await ingest(kv, [entry(T0, "abc123")]);
    const done = await change(
      kv,
      { action: "resolve", inRelease: "def456" },
      T0 + 1000,
    );
    assert.equal(done.triage.inRelease, "def456");
    await ingest(kv, [entry(T0 + 2000, "abc123")]);
    assert.equal(await statusAt(kv, T0 + 2500), "resolved");
    // def456 is first seen now; the fix holds there.
    await ingest(kv, [entry(T0 + 3000, "def456")]);
    assert.equal(await statusAt(kv, T0 + 3500), "resolved");
    // A build first seen after def456 comes after it.
    await ingest(kv, [entry(T0 + 4000, "fed789")]);
    assert.equal(await statusAt(kv, T0 + 4500), "regressed");
  },
);

/** The names of the project's releases, the latest first. */
async function releaseNames(kv: Deno.Kv): Promise<string[]> {
  return (await listReleases(kv, "p1")).map((r) => r.name);
}

kvTest(
  "resolved in a build whose counters went past the retention: a build first seen 40 days on regresses it",
  async (kv) => {
    await ingest(kv, [entry(T0, "abc123")]);
    await ingest(kv, [{ ...entry(T0 + HOUR, "d4e5f6"), level: "info" }]);
    await change(kv, { action: "resolve", inRelease: "d4e5f6" }, T0 + 2 * HOUR);
    // Entries without a release keep the group, and do not reopen it.
    await ingest(kv, [entry(T0 + 25 * DAY)]);
    assert.equal(await statusAt(kv, T0 + 25 * DAY), "resolved");
    await ingest(kv, [entry(T0 + 40 * DAY, "g7h8i9")]);
    assert.deepEqual(await releaseNames(kv), ["g7h8i9"], "d4e5f6 is swept");
    assert.equal(await statusAt(kv, T0 + 40 * DAY), "regressed");
  },
);

kvTest(
  "resolved in a build not seen yet: its first seen, once it is, orders the builds after its counters are gone",
  async (kv) => {
    await ingest(kv, [entry(T0, "abc123")]);
    await change(kv, { action: "resolve", inRelease: "def456" }, T0 + 1000);
    // A build deployed before the fix still has the error.
    await ingest(kv, [entry(T0 + HOUR, "bcd234")]);
    await ingest(kv, [{ ...entry(T0 + 2 * HOUR, "def456"), level: "info" }]);
    await ingest(kv, [entry(T0 + 20 * DAY, "bcd234")]);
    assert.equal(await statusAt(kv, T0 + 20 * DAY), "resolved");
    await ingest(kv, [entry(T0 + 40 * DAY, "bcd234")]);
    assert.deepEqual(await releaseNames(kv), ["bcd234"], "def456 is swept");
    assert.equal(
      await statusAt(kv, T0 + 40 * DAY),
      "resolved",
      "bcd234 was first seen before def456",
    );
    await ingest(kv, [entry(T0 + 40 * DAY + 1000, "fed789")]);
    assert.equal(await statusAt(kv, T0 + 40 * DAY + 2000), "regressed");
  },
);

kvTest(
  "a later release whose count the group dropped past its 50 releases regresses it at its first entry since",
  async (kv) => {
    const at = (i: number) => T0 + i * 1000;
    await ingest(kv, [1, 2, 3].map((i) => entry(at(i), "3.1.0")));
    await change(kv, { action: "resolve", inRelease: "3.0.0" }, at(10));
    // Fifty older releases push 3.1.0 out of the group's counts.
    for (let b = 0; b < 5; b++) {
      await ingest(
        kv,
        Array.from({ length: 10 }, (_, i) => entry(at(20 + b), `2.${b}.${i}`)),
      );
    }
    assert.equal(await statusAt(kv, at(30)), "resolved", "older releases");
    await ingest(kv, [entry(at(40), "3.1.0")]);
    assert.equal(await statusAt(kv, at(41)), "regressed");
  },
);

kvTest("ignored until N more entries, then unresolved", async (kv) => {
  await ingest(kv, [entry(T0)]);
  await change(kv, { action: "ignore", untilCount: 3 }, T0 + 1000);
  await ingest(kv, [entry(T0 + 2000), entry(T0 + 2001)]);
  assert.equal(await statusAt(kv, T0 + 2500), "ignored", "2 of 3");
  await ingest(kv, [entry(T0 + 3000)]);
  assert.equal(await statusAt(kv, T0 + 3500), "unresolved", "3 of 3");
});

kvTest(
  "ignored until a date, then unresolved; ignored forever stays",
  async (kv) => {
    await ingest(kv, [entry(T0)]);
    await change(kv, { action: "ignore", untilMs: T0 + DAY }, T0 + 1000);
    await ingest(kv, [entry(T0 + 2000)]);
    assert.equal(await statusAt(kv, T0 + DAY - 1), "ignored");
    assert.equal(await statusAt(kv, T0 + DAY), "unresolved");
    await change(kv, { action: "ignore" }, T0 + DAY + 1);
    await ingest(kv, [entry(T0 + DAY + 2), entry(T0 + DAY + 3)]);
    assert.equal(await statusAt(kv, T0 + 30 * DAY), "ignored");
  },
);

kvTest("a group is assigned to an account, and only to one", async (kv) => {
  await ingest(kv, [entry(T0)]);
  await addUser(kv, {
    email: "ana@example.com",
    password: "correct horse",
    role: "admin",
    projects: [],
  });
  await assert.rejects(
    change(kv, { action: "assign", email: "nobody@example.com" }, T0),
    InvalidValueError,
  );
  await change(kv, { action: "resolve" }, T0 + 1);
  const done = await change(
    kv,
    { action: "assign", email: "Ana@example.com" },
    T0 + 2,
  );
  assert.equal(done.triage.assignee, "ana@example.com");
  assert.equal(done.triage.state, "resolved", "assigning keeps the state");
  const group = (await findGroup(kv, "p1", FP, T0))!;
  assert.equal(
    (await readTriage(kv, "p1", [group], T0)).get(group.id)!.assignee,
    "ana@example.com",
  );
  await assert.rejects(
    changeTriage(kv, "p1", "0000000000000000", { action: "reopen" }, {
      now: T0,
      actor: "cli",
    }),
    GroupNotFoundError,
  );
});

kvTest(
  "releases: first seen, entries, errors and new groups, in semver order",
  async (kv) => {
    const info: LogRecord = { ...entry(T0 + 5, "1.10.0"), level: "info" };
    await ingest(kv, [
      entry(T0, "1.9.2"),
      entry(T0 + 1, "1.10.0", "Other error"),
      info,
    ]);
    await ingest(kv, [entry(T0 + 10, "1.10.0")]);
    const releases = await listReleases(kv, "p1");
    assert.deepEqual(
      releases.map((r) => [r.name, r.entries, r.errors, r.newGroups]),
      [["1.10.0", 3, 2, 1], ["1.9.2", 1, 1, 1]],
    );
    assert.equal(releases[0]!.firstSeen, T0 + 1);
    assert.equal(releases[0]!.lastSeen, T0 + 10);
    const seen = new Map([["b", 1], ["a", 2]]);
    assert.ok(compareReleases("a", "b", seen) > 0, "first seen, not names");
    assert.ok(compareReleases("2.0.0-rc.1", "2.0.0", seen) < 0);
  },
);

kvTest(
  "a release's count of errors is written only once it is not 0, its new groups are counted from the groups, and both read as 0 before",
  async (kv) => {
    const fields = async () => {
      const keys = [];
      for await (const row of kv.list({ prefix: releaseCountKey("p1") })) {
        keys.push(row.key.at(-1));
      }
      return keys.sort();
    };
    await ingest(kv, [{ ...entry(T0, "2.0.0"), level: "info" }]);
    assert.deepEqual(await fields(), ["entries", "first", "last"]);
    const counts = (r: Release) => [r.name, r.entries, r.errors, r.newGroups];
    assert.deepEqual((await listReleases(kv, "p1")).map(counts), [
      ["2.0.0", 1, 0, 0],
    ]);
    await ingest(kv, [entry(T0 + 1, "2.0.0")]);
    assert.deepEqual(await fields(), ["entries", "errors", "first", "last"]);
    assert.deepEqual((await listReleases(kv, "p1")).map(counts), [
      ["2.0.0", 2, 1, 1],
    ]);
  },
);

/** Prepares a result commit of `records` without committing it. */
async function prepare(kv: Deno.Kv, records: LogRecord[]) {
  const op = new RecordedAtomic();
  addErrorGroups(
    op,
    await prepareErrorGroups(kv, "p1", records, {
      now: records[0]!.receivedAt,
      retentionMs: 30 * DAY,
    }),
  );
  return { commit: () => op.commit(kv) };
}

kvTest(
  "commits prepared before a resolve and committed after it count after it, each by its release, however they interleave",
  async (kv) => {
    await ingest(kv, [entry(T0, "1.2.0")]);
    const older = await prepare(kv, [entry(T0 + 10, "1.2.0")]);
    const later = await prepare(kv, [entry(T0 + 11, "1.4.0")]);
    await change(kv, { action: "resolve", inRelease: "1.3.0" }, T0 + 20);
    assert.ok((await older.commit()).ok);
    assert.equal(await statusAt(kv, T0 + 30), "resolved", "1.2.0 is older");
    assert.ok((await later.commit()).ok);
    assert.equal(await statusAt(kv, T0 + 40), "regressed", "1.4.0 is later");
    const group = (await findGroup(kv, "p1", FP, T0))!;
    assert.equal(group.count, 3, "every entry counted once");
    const [release] = (await listReleases(kv, "p1")).filter((r) =>
      r.name === "1.2.0"
    );
    assert.equal(release!.entries, 2, "both commits counted in the release");
  },
);

kvTest(
  "ignore until N counts entries of commits prepared before it",
  async (kv) => {
    await ingest(kv, [entry(T0)]);
    const racing = await prepare(kv, [entry(T0 + 1), entry(T0 + 2)]);
    await change(kv, { action: "ignore", untilCount: 2 }, T0 + 10);
    assert.equal(await statusAt(kv, T0 + 11), "ignored");
    assert.ok((await racing.commit()).ok);
    assert.equal(await statusAt(kv, T0 + 12), "unresolved");
  },
);

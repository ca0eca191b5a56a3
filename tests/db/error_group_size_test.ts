/**
 * What error groups write stays storable whatever senders send: a group's
 * record within `MAX_GROUP_RECORD_BYTES` (db/error_group_size.ts), however
 * long and strange its titles, frames and releases, and the groups and
 * releases of one result commit within their share of KV's bounds
 * (db/group_budget.ts), however many projects the commit holds.
 *
 * @module
 */
import assert from "node:assert/strict";
import {
  addErrorGroups,
  groupKeyOf,
  MAX_GROUP_RECORD_BYTES,
  MAX_GROUP_RELEASES,
  prepareErrorGroups,
  type StoredGroup,
} from "../../db/error_groups.ts";
import { listGroups } from "../../db/error_group_reads.ts";
import {
  deadLettersPrefix,
  errorGroupKey,
  errorGroupReleaseKey,
} from "../../db/keys.ts";
import { decodeJson, encodeJson } from "../../db/kv.ts";
import type { LogRecord, QueuedEntry } from "../../domain/entry.ts";
import { fingerprintOf, groupIdOf } from "../../domain/fingerprint.ts";
import { createId } from "../../domain/ids.ts";
import {
  type Harness,
  ORIGIN,
  pendingBatches,
  postQueued,
  projectTest,
} from "../_helpers/harness.ts";

const DAY = 86_400_000;

/**
 * Control characters that JSON writes as 6 bytes each (`\u0001`) and that
 * trimming leaves: every C0 one but `\b\t\n\v\f\r`.
 */
const CONTROLS = [
  ...Array.from({ length: 7 }, (_, i) => 1 + i),
  ...Array.from({ length: 18 }, (_, i) => 14 + i),
].map((code) => String.fromCharCode(code));

/** The `n`th distinct name of 200 control characters. */
function controlName(n: number): string {
  let name = "";
  for (let i = 0, rest = n; i < 200; i++, rest = Math.floor(rest / 25)) {
    name += CONTROLS[rest % 25];
  }
  return name;
}

/** The `n`th distinct release name of 200 characters of 3 UTF-8 bytes each. */
function wideName(n: number): string {
  return String.fromCharCode(0x4e00 + n) + "漢".repeat(199);
}

/** The stored record of a project's only group, and its size. */
async function onlyGroup(
  kv: Deno.Kv,
  projectId: string,
): Promise<{ id: string; group: StoredGroup; bytes: number }> {
  const rows = await Array.fromAsync(
    kv.list<Uint8Array>({ prefix: errorGroupKey(projectId) }),
  );
  assert.equal(rows.length, 1);
  const value = rows[0]!.value;
  return {
    id: String(rows[0]!.key.at(-1)),
    group: decodeJson<StoredGroup>(value)!,
    bytes: value.length,
  };
}

async function assertNothingLeft(h: Harness): Promise<void> {
  assert.deepEqual(await pendingBatches(h.kv), [], "no batch is pending");
  const dead = await Array.fromAsync(
    h.kv.list({ prefix: deadLettersPrefix() }),
  );
  assert.equal(dead.length, 0, "no batch is a dead letter");
}

projectTest(
  "a group whose entries each bring a new release of 200 control characters stays storable, and so does every batch with its entries",
  async (h, project) => {
    const other = await h.project();
    // Control characters in the title too: JSON writes each as 6 bytes.
    const title = `Checkout failed ${"\u0002".repeat(284)}`;
    const entry = (n: number) => ({
      level: "error",
      projectId: project.id,
      data: { title },
      context: { release: controlName(n) },
    });
    for (let n = 0; n < 50; n++) {
      await postQueued(h, entry(n), { Origin: ORIGIN });
      await h.process();
    }
    // One more entry of the group and one of another project, in one batch.
    await Promise.all([
      postQueued(h, entry(50), { Origin: ORIGIN }),
      postQueued(h, {
        level: "info",
        projectId: other.id,
        data: { title: "Signed in" },
      }, { Origin: ORIGIN }),
    ]);
    await h.pipeline.producer.flush();
    const batches = await pendingBatches(h.kv);
    assert.deepEqual(batches.map((b) => b.header.count), [2]);
    await h.process();
    await assertNothingLeft(h);
    const logs = await h.logs(project.id);
    assert.equal(logs.length, 51);
    assert.equal(logs.at(-1)!.context.release, controlName(50), "as sent");
    const [stored] = await h.logs(other.id);
    assert.equal(stored?.data.title, "Signed in");
    const [group] = await listGroups(h.kv, project.id, h.clock.now());
    assert.equal(group?.count, 51);
    const { bytes } = await onlyGroup(h.kv, project.id);
    assert.ok(bytes <= MAX_GROUP_RECORD_BYTES, `${bytes} bytes`);
  },
);

/** Groups `records` as the consumer does, in a commit of their own. */
async function group(
  kv: Deno.Kv,
  projectId: string,
  records: LogRecord[],
  now: number,
): Promise<void> {
  const op = kv.atomic();
  addErrorGroups(
    op,
    await prepareErrorGroups(kv, projectId, records, {
      now,
      retentionMs: 30 * DAY,
    }),
  );
  assert.ok((await op.commit()).ok);
}

projectTest(
  "a group's record stays within its bound when every field is the largest its entries or an earlier record can give",
  async (h, project) => {
    const t0 = h.clock.now();
    const data = {
      // Cut to 200 characters by the fingerprint, each 6 bytes in JSON.
      title: "\u0001".repeat(1_000),
      stack: [{
        function: "\u0003".repeat(300),
        file: "\ud800".repeat(300),
        line: 1,
        column: 2,
      }],
    };
    const record = (n: number, at: number): LogRecord => ({
      id: createId(at),
      receivedAt: at,
      level: "critical",
      data,
      device: {},
      context: { release: wideName(n) },
      auth: "origin",
      origin: ORIGIN,
    });
    // A record written before the bound, as large as a value could be,
    // with counts as long as a number's digits go.
    const key = await groupKeyOf(h.kv, project.id);
    const id = groupIdOf(key, fingerprintOf(record(0, t0)));
    const big = Number.MAX_SAFE_INTEGER;
    const prior: StoredGroup = {
      ...fingerprintOf(record(0, t0)),
      sampleId: createId(t0 - 1),
      level: "critical",
      sampleTitle: "\u0004".repeat(1_000),
      count: big,
      firstSeen: t0 - 1,
      lastSeen: t0 - 1,
      hour: t0 - t0 % 3_600_000,
      hours: new Array(24).fill(big),
      day: t0 - t0 % DAY,
      days: new Array(8).fill(big),
      firstId: createId(t0 - 1),
      firstRelease: wideName(999),
      lastRelease: controlName(1),
      releases: Array.from({ length: 40 }, (_, i) => controlName(i)),
    };
    const priorValue = encodeJson(prior);
    assert.ok(priorValue.length > 50_000 && priorValue.length <= 65_536);
    await h.kv.set(errorGroupKey(project.id, id), priorValue);
    let largest = 0;
    // 7 batches of 10 new releases each, the most a batch counts.
    for (let b = 0; b < 7; b++) {
      const at = t0 + b * 1_000;
      const records = Array.from(
        { length: 10 },
        (_, i) => record(b * 10 + i, at + i),
      );
      await group(h.kv, project.id, records, at);
      const found = await onlyGroup(h.kv, project.id);
      assert.equal(found.id, id);
      largest = Math.max(largest, found.bytes);
      // Every count per release is of a release the list keeps, to drop it.
      const rows = await Array.fromAsync(
        h.kv.list({ prefix: errorGroupReleaseKey(project.id, id) }),
      );
      for (const row of rows) {
        assert.ok(found.group.releases!.includes(String(row.key.at(-1))));
      }
      assert.ok(found.group.releases!.length <= MAX_GROUP_RELEASES);
    }
    const { group: last } = await onlyGroup(h.kv, project.id);
    assert.equal(last.title, "\u0001".repeat(100), "600 bytes of JSON");
    assert.equal(last.sampleTitle, "\u0001".repeat(150), "900 bytes");
    assert.equal(last.topFrame!.length, 100, "600 bytes");
    assert.equal(last.firstRelease, wideName(999));
    assert.equal(last.lastRelease, wideName(69));
    const list = last.releases!;
    assert.ok(list.includes(wideName(60)), "the last batch's are kept");
    assert.ok(new TextEncoder().encode(JSON.stringify(list)).length <= 6_144);
    assert.ok(
      largest <= MAX_GROUP_RECORD_BYTES,
      `${largest} bytes > ${MAX_GROUP_RECORD_BYTES}`,
    );
  },
);

projectTest(
  "a batch of 9 projects, each with 20 new groups and 10 releases, is stored in one commit, every project keeping groups",
  async (h, first) => {
    const projects = [first];
    for (let i = 1; i < 9; i++) projects.push(await h.project());
    const now = h.clock.now();
    let n = 0;
    const entry = (
      projectId: string,
      level: string,
      data: Record<string, unknown>,
      context?: Record<string, unknown>,
    ): QueuedEntry => ({
      id: createId(now + ++n),
      receivedAt: now + n,
      level,
      projectId,
      origin: ORIGIN,
      data,
      ...(context ? { context } : {}),
    });
    // Without lingering the first commit goes alone, the second takes the
    // next 32 waiting, and the rest make one batch.
    const entries = Array.from(
      { length: 33 },
      (_, i) => entry(first.id, "info", { title: `Step ${i}` }),
    );
    for (const p of projects) {
      for (let g = 0; g < 22; g++) {
        const kind = String.fromCharCode(97 + g); // no number: one group each
        entries.push(
          entry(p.id, "error", { title: `Failure of kind ${kind}` }, {
            release: `2026.1.${g % 10}`,
          }),
        );
      }
    }
    await Promise.all(entries.map((e) => h.pipeline.producer.submit(e)));
    const batches = await pendingBatches(h.kv);
    assert.equal(batches.at(-1)!.header.count, 9 * 22);
    await h.process();
    await assertNothingLeft(h);
    for (const p of projects) {
      assert.equal(
        (await h.logs(p.id)).filter((r) => r.level === "error").length,
        22,
      );
      const groups = await listGroups(h.kv, p.id, now + n);
      assert.ok(groups.length >= 2, `${groups.length} groups`);
    }
  },
  { pipeline: { lingerMs: 0 } },
);

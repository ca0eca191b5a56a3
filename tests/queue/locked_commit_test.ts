/**
 * Commits refused as locked (docs/design.md#group-commit): another process
 * opening the database file can make SQLite refuse a commit with "database
 * is locked", and such a commit wrote nothing. The group commit, a result
 * riding it and a result committed alone are each sent again after a short
 * wait, up to 5 times; past that, or on any other error, the commit fails as
 * before. The waits are injected: nothing here sleeps.
 *
 * @module
 */
import assert from "node:assert/strict";
import { RecordedAtomic } from "../../db/atomic.ts";
import { LOCKED_RETRY_DELAYS_MS } from "../../db/kv.ts";
import type { SpaceGuard } from "../../db/space.ts";
import { CommitFailedError, GroupCommitter } from "../../queue/producer.ts";
import {
  assertCounts,
  EVENT_TIMEOUT_MS,
  type Harness,
  harness,
  pendingBatches,
  randomEntry,
  withTimeout,
} from "../_helpers/harness.ts";
import { atomicView } from "../_helpers/hold.ts";

const ORIGIN = { Origin: "https://app.example.com" };

/** The error Deno KV throws when SQLite refuses a commit as locked. */
function locked(): TypeError {
  return new TypeError("database is locked");
}

/** A view of a KV whose chosen commits are refused, as another process would. */
interface RefusingKv {
  kv: Deno.Kv;
  /** Commits attempted among those chosen, refused ones included. */
  attempts: number;
  /** Commits refused so far. */
  refused: number;
  /**
   * Refuses the next commits of operations `which` picks, one per error, by
   * throwing it without writing anything. `which` is given what the
   * operation touched, as `"set:<prefix>"` and `"delete:<prefix>"`.
   */
  refuse(errors: Error[], which: (touched: Set<string>) => boolean): void;
}

function refusingKv(kv: Deno.Kv): RefusingKv {
  let errors: Error[] = [];
  let which: (touched: Set<string>) => boolean = () => false;
  const refusing: RefusingKv = {
    kv: atomicView(kv, (op) => {
      const touched = new Set<string>();
      const set = op.set.bind(op);
      const del = op.delete.bind(op);
      const commit = op.commit.bind(op);
      op.set = (key, value, options) => {
        touched.add(`set:${String(key[0])}`);
        set(key, value, options);
        return op;
      };
      op.delete = (key) => {
        touched.add(`delete:${String(key[0])}`);
        del(key);
        return op;
      };
      op.commit = () => {
        if (!which(touched)) return commit();
        refusing.attempts++;
        const error = errors.shift();
        if (!error) return commit();
        refusing.refused++;
        return Promise.reject(error);
      };
      return op;
    }),
    attempts: 0,
    refused: 0,
    refuse(next, pick) {
      errors = next;
      which = pick;
    },
  };
  return refusing;
}

/** A sleep that records each wait asked for and returns at once. */
function recordingSleep(waits: number[]): (ms: number) => Promise<void> {
  return (ms) => {
    waits.push(ms);
    return Promise.resolve();
  };
}

/** A space guard that stays open and records what it is told. */
function listeningGuard(failures: unknown[]): SpaceGuard {
  return {
    open: () => true,
    failed: (error: unknown) => failures.push(error),
    start: () => {},
    stop: () => Promise.resolve(),
  } as unknown as SpaceGuard;
}

interface Setup {
  h: Harness;
  refusing: RefusingKv;
  /** The waits asked for, in milliseconds. */
  waits: number[];
  /** The errors the write gate was told of. */
  failures: unknown[];
  projectId: string;
}

/** A harness on a refusing KV with injected waits and a listening gate. */
async function withRefusingHarness(
  fn: (setup: Setup) => Promise<void>,
): Promise<void> {
  const kv = await Deno.openKv(":memory:");
  const refusing = refusingKv(kv);
  const waits: number[] = [];
  const failures: unknown[] = [];
  const h = await harness({
    kv: refusing.kv,
    pipeline: {
      sleep: recordingSleep(waits),
      space: listeningGuard(failures),
    },
  });
  try {
    const project = await h.project();
    await fn({ h, refusing, waits, failures, projectId: project.id });
    await h.close();
  } catch (error) {
    await h.close({ checkErrors: false });
    throw error;
  } finally {
    kv.close();
  }
}

const writesBatch = (touched: Set<string>) =>
  touched.has("set:pending_batches");
const deletesBatch = (touched: Set<string>) =>
  touched.has("delete:pending_batches");

Deno.test("a group commit refused twice as locked is sent again: every POST answers 200 and each entry is stored once", async () => {
  await withRefusingHarness(
    async ({ h, refusing, waits, failures, projectId }) => {
      refusing.refuse([locked(), locked()], writesBatch);
      const answers = await withTimeout(
        Promise.all(
          [1, 2, 3].map(() => h.post(randomEntry({ projectId }), ORIGIN)),
        ),
        EVENT_TIMEOUT_MS,
        "the answers",
      );
      assert.deepEqual(answers.map((res) => res.status), [200, 200, 200]);
      assert.equal(refusing.refused, 2);
      assert.deepEqual(waits, [5, 10]);
      // Every batch was written once, and the gate heard of no failure.
      const pending = await pendingBatches(h.kv);
      assert.equal(pending.reduce((n, p) => n + p.header.count, 0), 3);
      assert.deepEqual(failures, []);
      await h.process();
      const stored = await h.logs(projectId);
      assert.equal(stored.length, 3);
      assert.equal(new Set(stored.map((log) => log.id)).size, 3);
      await assertCounts(h, projectId, 3, {});
      assert.deepEqual(await pendingBatches(h.kv), []);
    },
  );
});

Deno.test("a consumer's result refused twice as locked is sent again: the batch is processed at its first attempt", async () => {
  await withRefusingHarness(
    async ({ h, refusing, waits, failures, projectId }) => {
      const res = await h.post(randomEntry({ projectId }), ORIGIN);
      assert.equal(res.status, 200);
      assert.equal((await pendingBatches(h.kv)).length, 1);
      refusing.refuse([locked(), locked()], deletesBatch);
      await h.process(); // throws if the result's commit failed
      assert.equal(refusing.refused, 2);
      assert.equal(refusing.attempts, 3);
      assert.deepEqual(waits, [5, 10]);
      assert.deepEqual(failures, []);
      assert.deepEqual(await pendingBatches(h.kv), []);
      assert.equal((await h.logs(projectId)).length, 1);
      await assertCounts(h, projectId, 1, {});
    },
  );
});

Deno.test("a result commit refused twice as locked is sent again", async () => {
  const kv = await Deno.openKv(":memory:");
  const refusing = refusingKv(kv);
  const waits: number[] = [];
  try {
    const large = new RecordedAtomic();
    for (let i = 0; i < 8; i++) {
      large.set(["result", "large", i], new Uint8Array(60_000));
    }
    refusing.refuse([locked(), locked()], (t) => t.has("set:result"));
    const carried = await withTimeout(
      large.commit(refusing.kv, { sleep: recordingSleep(waits) }),
      EVENT_TIMEOUT_MS,
      "the result",
    );
    assert.ok(carried.ok);
    assert.equal(refusing.attempts, 3);
    assert.deepEqual(waits, [5, 10]);
    assert.equal(
      (await kv.get(["result", "large", 7])).versionstamp,
      carried.versionstamp,
    );
  } finally {
    kv.close();
  }
});

Deno.test("a group commit still refused as locked after 5 more attempts answers 503, stores nothing, and the gate hears one failure", async () => {
  await withRefusingHarness(
    async ({ h, refusing, waits, failures, projectId }) => {
      const refusals = LOCKED_RETRY_DELAYS_MS.length + 1;
      refusing.refuse(Array.from({ length: refusals }, locked), writesBatch);
      const res = await h.post(randomEntry({ projectId }), ORIGIN);
      assert.equal(res.status, 503);
      assert.equal(res.headers.get("Retry-After"), "1");
      assert.equal(refusing.attempts, refusals);
      assert.deepEqual(waits, [5, 10, 20, 40, 80]);
      assert.equal(failures.length, 1);
      assert.match(String(failures[0]), /database is locked/);
      assert.deepEqual(await pendingBatches(h.kv), []);
    },
  );
});

Deno.test("an error other than locked is not sent again: only the locked refusal before it is", async () => {
  await withRefusingHarness(
    async ({ h, refusing, waits, failures, projectId }) => {
      const full = new TypeError("database or disk is full");
      refusing.refuse([locked(), full], writesBatch);
      const res = await h.post(randomEntry({ projectId }), ORIGIN);
      assert.equal(res.status, 503);
      assert.equal(refusing.attempts, 2);
      assert.deepEqual(waits, [5]);
      assert.deepEqual(failures, [full]);
      assert.deepEqual(await pendingBatches(h.kv), []);
    },
  );
});

Deno.test("the producer rejects a commit refused past its attempts with CommitFailedError, the refusal as its cause", async () => {
  const kv = await Deno.openKv(":memory:");
  const refusing = refusingKv(kv);
  const producer = new GroupCommitter({
    kv: refusing.kv,
    maxPending: 10,
    sleep: () => Promise.resolve(),
  });
  try {
    const refusals = LOCKED_RETRY_DELAYS_MS.length + 1;
    refusing.refuse(Array.from({ length: refusals }, locked), writesBatch);
    const error = await withTimeout(
      producer.submit({
        id: "0000000000000000000001",
        receivedAt: Date.UTC(2026, 0, 1),
        level: "info",
        projectId: "p1",
        data: {},
      }).then(() => null, (e: unknown) => e),
      EVENT_TIMEOUT_MS,
      "the refusal",
    );
    assert.ok(error instanceof CommitFailedError);
    assert.match(String(error.cause), /database is locked/);
    assert.equal(refusing.attempts, refusals);
  } finally {
    await producer.flush();
    kv.close();
  }
});

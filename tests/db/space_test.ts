/**
 * The disk space guard (docs/design.md#full-disk) with the free space and
 * the clock driven by hand: when the gate closes, when the reserve is
 * released and written back, and what the pipeline does while it is closed.
 */
import assert from "node:assert/strict";
import { KvOpenError, openKv } from "../../db/open.ts";
import { isDiskFullError } from "../../db/disk.ts";
import {
  FAR_FROM_FLOOR_BYTES,
  openSpaceGuard,
  RESUME_MARGIN_BYTES,
  ROOMY_BYTES,
  ROOMY_TICK_MS,
  SETTLE_MS,
  SpaceGuard,
} from "../../db/space.ts";
import { WritesHeldError } from "../../queue/producer.ts";
import {
  type FakeClock,
  fakeClock,
  harness,
  ORIGIN,
  pendingBatches,
  randomEntry,
  withHarness,
} from "../_helpers/harness.ts";
import { atomicView } from "../_helpers/hold.ts";

const MiB = 1024 * 1024;
const RESERVE = 64 * 1024;
const MIN_FREE = MiB;

interface Disk {
  dir: string;
  path: string;
  free: number;
  /** Times the guard read the free space. */
  reads: number;
  clock: FakeClock;
  log: string[];
  guard(): SpaceGuard;
}

async function withDisk(fn: (disk: Disk) => Promise<void>): Promise<void> {
  const dir = await Deno.makeTempDir();
  const disk: Disk = {
    dir,
    path: `${dir}/kv.sqlite`,
    // Near the floor: the write path reads the free space every 10 ms.
    free: 8 * MiB,
    reads: 0,
    clock: fakeClock(),
    log: [],
    guard: () =>
      new SpaceGuard({
        path: disk.path,
        reserveBytes: RESERVE,
        minFreeBytes: MIN_FREE,
        freeSpace: () => {
          disk.reads++;
          return disk.free;
        },
        now: disk.clock.now,
        log: (line) => disk.log.push(line),
      }),
  };
  try {
    await fn(disk);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

async function reserveSize(guard: SpaceGuard): Promise<number | null> {
  try {
    return (await Deno.stat(guard.reservePath)).size;
  } catch {
    return null;
  }
}

Deno.test("the reserve file is written beside the database at start-up, and start-up stops with one line naming KV_PATH when the disk has no room for it", async () => {
  await withDisk(async (disk) => {
    const guard = disk.guard();
    await guard.prepare();
    assert.equal(guard.reservePath, `${disk.path}-reserve`);
    assert.equal(await reserveSize(guard), RESERVE);
    assert.equal(guard.open(), true);

    await Deno.remove(guard.reservePath);
    disk.free = RESERVE + MIN_FREE - 1;
    const error = await disk.guard().prepare().then(() => null, (e) => e);
    assert.ok(error instanceof KvOpenError);
    assert.match(
      error.message,
      new RegExp(`^Cannot open KV_PATH "${disk.path}": no space left`),
    );
    assert.doesNotMatch(error.message, /\n/);
    assert.equal(await reserveSize(guard), null);
  });
});

Deno.test("no guard is made for a database that is no file here", async () => {
  assert.equal(await openSpaceGuard(":memory:"), null);
  assert.equal(await openSpaceGuard(undefined), null);
  assert.equal(await openSpaceGuard("https://kv.example.com/db"), null);
});

Deno.test("far above the floor the write path leaves the free space to the timer's look every 100 ms, which still closes the gate at once", async () => {
  await withDisk(async (disk) => {
    disk.free = MIN_FREE + FAR_FROM_FLOOR_BYTES + MiB;
    const guard = disk.guard();
    await guard.prepare();
    assert.equal(guard.open(), true);
    const reads = disk.reads;
    for (let t = 0; t < 9; t++) {
      disk.clock.advance(10);
      assert.equal(guard.open(), true);
    }
    assert.equal(disk.reads, reads, "no read within the 100 ms");
    disk.clock.advance(10);
    assert.equal(guard.open(), true);
    assert.equal(disk.reads, reads + 1);

    // Within FAR_FROM_FLOOR_BYTES of the floor: every 10 ms again.
    disk.free = MIN_FREE + FAR_FROM_FLOOR_BYTES;
    disk.clock.advance(1);
    assert.equal(await guard.check(), true, "the timer reads at every look");
    disk.free = MIN_FREE - 1;
    disk.clock.advance(10);
    assert.equal(guard.open(), false);

    // Filled at once from far above: the timer's look closes the gate.
    await withDisk(async (other) => {
      other.free = MIN_FREE + FAR_FROM_FLOOR_BYTES + MiB;
      const far = other.guard();
      await far.prepare();
      assert.equal(far.open(), true);
      other.free = 0;
      other.clock.advance(10);
      assert.equal(far.open(), true, "not read on the write path yet");
      assert.equal(await far.check(), false);
      assert.equal(far.open(), false);
    });
  });
});

Deno.test("the timer and the write path read the free space every second while the disk is roomy, the timer every 100 ms within ROOMY_BYTES of the floor or while the gate is closed", async () => {
  await withDisk(async (disk) => {
    disk.free = MIN_FREE + ROOMY_BYTES + MiB;
    const guard = disk.guard();
    await guard.prepare();
    assert.equal(await guard.check(), true);
    assert.equal(guard.nextLookMs, ROOMY_TICK_MS);

    disk.free = MIN_FREE + ROOMY_BYTES;
    disk.clock.advance(ROOMY_TICK_MS);
    assert.equal(await guard.check(), true);
    assert.equal(guard.nextLookMs, 100, "within ROOMY_BYTES of the floor");

    // Read on the write path too: the next look follows the last read,
    // and while roomy the write path reads once a second.
    disk.free = MIN_FREE + ROOMY_BYTES + MiB;
    disk.clock.advance(100);
    assert.equal(guard.open(), true);
    assert.equal(guard.nextLookMs, ROOMY_TICK_MS);
    const reads = disk.reads;
    disk.clock.advance(ROOMY_TICK_MS - 1);
    assert.equal(guard.open(), true);
    assert.equal(disk.reads, reads, "no read within the second");
    disk.clock.advance(1);
    assert.equal(guard.open(), true);
    assert.equal(disk.reads, reads + 1);

    // Filled at once from a roomy disk: one look closes the gate, and the
    // looks that wait for space come every 100 ms.
    disk.free = 0;
    disk.clock.advance(ROOMY_TICK_MS);
    assert.equal(await guard.check(), false);
    assert.equal(guard.nextLookMs, 100);
  });
});

Deno.test("the gate closes under the floor, the reserve is released once the free space stops falling, and the gate opens once the reserve is written back", async () => {
  await withDisk(async (disk) => {
    const guard = disk.guard();
    await guard.prepare();
    assert.equal(guard.open(), true);
    disk.free = MIN_FREE - 1;
    assert.equal(guard.open(), true, "free space is read at most every 10 ms");
    disk.clock.advance(10);
    assert.equal(guard.open(), false);
    assert.match(disk.log[0]!, /^Cannot write KV_PATH ".*": its disk is full/);

    // Something still fills the disk: the reserve would be eaten too.
    for (let t = 0; t < 5; t++) {
      disk.free -= 1000;
      disk.clock.advance(100);
      assert.equal(await guard.check(), false);
      assert.equal(await reserveSize(guard), RESERVE, "held while filling");
    }
    // It stopped.
    disk.clock.advance(SETTLE_MS - 1);
    await guard.check();
    assert.equal(await reserveSize(guard), RESERVE);
    disk.clock.advance(1);
    await guard.check();
    assert.equal(await reserveSize(guard), null, "released once settled");
    assert.equal(guard.reserved, false);
    disk.free += RESERVE;

    // Room for the floor, not yet for the reserve and the margin as well.
    disk.free = RESERVE + MIN_FREE + RESUME_MARGIN_BYTES - 1;
    disk.clock.advance(100);
    assert.equal(await guard.check(), false);
    assert.equal(await reserveSize(guard), null);

    disk.free += 1;
    disk.clock.advance(100);
    assert.equal(await guard.check(), true);
    assert.equal(await reserveSize(guard), RESERVE, "written back first");
    assert.equal(guard.open(), true);
    assert.match(disk.log.at(-1)!, /has space again/);
  });
});

Deno.test("space back before the reserve was released opens the gate without writing it", async () => {
  await withDisk(async (disk) => {
    const guard = disk.guard();
    await guard.prepare();
    disk.free = 0;
    assert.equal(await guard.check(), false);
    disk.free = MIN_FREE + RESUME_MARGIN_BYTES;
    disk.clock.advance(50);
    assert.equal(await guard.check(), true);
    assert.equal(guard.reserved, true);
  });
});

Deno.test("a write failing for space closes the gate; another failure does not", async () => {
  await withDisk(async (disk) => {
    const guard = disk.guard();
    await guard.prepare();
    guard.failed(new Error("Database is unavailable"));
    assert.equal(guard.open(), true);
    guard.failed(
      new Error("Cannot commit", {
        cause: new TypeError("database or disk is full"),
      }),
    );
    assert.equal(guard.open(), false);
  });
  assert.ok(
    isDiskFullError(new Error("No space left on device (os error 28)")),
  );
  assert.ok(isDiskFullError(new Error("Disk quota exceeded (os error 122)")));
  assert.ok(!isDiskFullError(new Error("unable to open database file")));
});

Deno.test("a reserve that cannot be written back keeps the gate closed and is tried again a second later", async () => {
  await withDisk(async (disk) => {
    const guard = disk.guard();
    await guard.prepare();
    disk.free = MIN_FREE;
    guard.failed(new Error("database or disk is full"));
    disk.clock.advance(SETTLE_MS);
    assert.equal(await guard.check(), false);
    assert.equal(guard.reserved, false);
    // Space back, but writing the reserve fails (as under a quota that
    // statfs does not show).
    await Deno.mkdir(guard.reservePath);
    disk.free = 8 * MiB;
    assert.equal(await guard.check(), false);
    disk.clock.advance(999);
    assert.equal(await guard.check(), false);
    disk.clock.advance(1);
    assert.equal(await guard.check(), true);
    assert.equal(await reserveSize(guard), RESERVE);
  });
});

Deno.test("while the disk is full POST answers 503 at once and nothing is committed; once space is back it answers 200", async () => {
  await withDisk(async (disk) => {
    const guard = disk.guard();
    await guard.prepare();
    await withHarness(async (h) => {
      const project = await h.project();
      const body = () => randomEntry({ projectId: project.id });
      assert.equal((await h.post(body(), { Origin: ORIGIN })).status, 200);
      disk.free = 0;
      disk.clock.advance(10);
      const res = await h.post(body(), { Origin: ORIGIN });
      assert.equal(res.status, 503);
      assert.equal((await res.json()).error.code, "unavailable");
      assert.equal(res.headers.get("retry-after"), "1");
      await assert.rejects(
        h.pipeline.producer.submit({
          id: "x",
          projectId: project.id,
          level: "info",
          receivedAt: disk.clock.now(),
          data: {},
        }),
        WritesHeldError,
      );
      assert.equal((await pendingBatches(h.kv)).length, 1);

      disk.free = 8 * MiB;
      disk.clock.advance(100);
      assert.equal(await guard.check(), true);
      assert.equal((await h.post(body(), { Origin: ORIGIN })).status, 200);
      assert.equal((await pendingBatches(h.kv)).length, 2);
    }, { clock: disk.clock, pipeline: { space: guard } });
  });
});

/** A KV whose next `n` commits fail as on a full disk. */
function fullDiskKv(real: Deno.Kv) {
  const state = { failNext: 0 };
  const kv = atomicView(real, (op) => {
    const commit = op.commit.bind(op);
    op.commit = () => {
      if (state.failNext > 0) {
        state.failNext--;
        return Promise.reject(new TypeError("database or disk is full"));
      }
      return commit();
    };
    return op;
  });
  return { kv, state };
}

Deno.test("a batch whose processing fails for space stays pending with no attempt counted, waits while the disk is full, and is stored once when space is back", async () => {
  await withDisk(async (disk) => {
    const guard = disk.guard();
    await guard.prepare();
    const real = await Deno.openKv(":memory:");
    const { kv, state } = fullDiskKv(real);
    const h = await harness({
      kv,
      clock: disk.clock,
      pipeline: { space: guard },
    });
    try {
      const project = await h.project();
      const res = await h.post(randomEntry({ projectId: project.id }), {
        Origin: ORIGIN,
      });
      assert.equal(res.status, 200);
      const ids = (await pendingBatches(kv)).map((b) => b.id);
      assert.equal(ids.length, 1);
      const worker = h.pipeline.worker;

      state.failNext = 1; // the result commit; a failure record would pass
      worker.push(ids);
      await worker.idle();
      assert.equal(guard.open(), false, "the failure closed the gate");
      const pending = await pendingBatches(kv);
      assert.deepEqual(pending.map((b) => b.header.attempts), [0]);

      worker.push(ids); // while closed: left alone
      await worker.idle();
      assert.equal((await pendingBatches(kv)).length, 1);
      assert.equal((await h.logs(project.id)).length, 0);

      disk.clock.advance(100);
      assert.equal(await guard.check(), true);
      worker.push(ids);
      await worker.idle();
      assert.deepEqual(await pendingBatches(kv), []);
      assert.equal((await h.logs(project.id)).length, 1);
    } finally {
      await h.close();
      real.close();
    }
  });
});

Deno.test("a database that cannot be opened is named by KV_PATH in one line", async (t) => {
  await withDisk(async (disk) => {
    await t.step("a directory where the file should be", async () => {
      await Deno.mkdir(disk.path);
      const error = await openKv(disk.path).then(() => null, (e) => e);
      assert.ok(error instanceof KvOpenError);
      assert.match(
        error.message,
        new RegExp(`^Cannot open KV_PATH "${disk.path}": `),
      );
      assert.doesNotMatch(error.message, /\n/);
    });
    await t.step("a folder that is a file", async () => {
      const file = `${disk.dir}/plain`;
      await Deno.writeTextFile(file, "");
      const error = await openKv(`${file}/kv.sqlite`).then(
        () => null,
        (e) => e,
      );
      assert.ok(error instanceof KvOpenError);
      assert.match(
        error.message,
        new RegExp(`^Cannot open KV_PATH "${file}/kv.sqlite": `),
      );
    });
  });
});

/**
 * A live tail whose client does not read is bounded: past
 * `TAIL_QUEUE_BYTES` queued it reads no more entries, after
 * `TAIL_STALL_MS` so it is cut and its queue dropped, and it gives its slot
 * back only when nothing it queued is held any longer (cancelled, read to
 * its end, or cut), not when it merely ends at `maxMs` with bytes unread.
 * Driven through `tailStream` with fake reads and a fake clock: the reads
 * always have 200 more entries of 8 KB rows, as a project replaying its
 * history would.
 *
 * @module
 */
import assert from "node:assert/strict";
import type { LogRecord } from "../../domain/entry.ts";
import { timeBound } from "../../domain/ids.ts";
import type { Reads } from "../../dashboard/source.ts";
import {
  TAIL_QUEUE_BYTES,
  TAIL_STALL_MS,
  tailStream,
} from "../../dashboard/routes/tail.ts";

/** The fake clock's start. */
const T0 = Date.UTC(2026, 0, 1);
/** Bytes of one rendered row. */
const ROW_BYTES = 8192;

/** A tail over reads that never run out, with what it did counted. */
function endlessTail(maxMs = 60_000) {
  let now = T0;
  let next = 0;
  const seen = { polls: 0, reads: 0, rows: 0, closed: 0 };
  const reads = {
    tailLogs: () => {
      seen.reads++;
      const records = Array.from({ length: 200 }, () => {
        const id = timeBound(T0 - 60_000) + (next++).toString(16)
          .padStart(16, "0");
        return { id } as LogRecord;
      });
      return Promise.resolve({ records, lastId: records.at(-1)!.id });
    },
  } as unknown as Reads;
  const res = tailStream({
    reads,
    projectId: "p",
    filter: {},
    after: "0".repeat(28),
    now: () => now,
    timing: { intervalMs: 1, maxMs, heartbeatMs: 60_000 },
    row: () => {
      seen.rows++;
      return "x".repeat(ROW_BYTES);
    },
    alive: () => {
      seen.polls++;
      return Promise.resolve(true);
    },
    onClose: () => seen.closed++,
  });
  return {
    res,
    seen,
    advance(ms: number) {
      now += ms;
    },
  };
}

/** Resolves once `test` holds; fails after 5 s. */
async function until(test: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + 5000;
  while (!test()) {
    if (Date.now() > deadline) throw new Error(`Not within 5 s: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/** Bytes of a body read to its end. */
async function drain(res: Response): Promise<number> {
  let bytes = 0;
  for await (const chunk of res.body!) bytes += chunk.byteLength;
  return bytes;
}

Deno.test("a live tail whose body is never read stops reading at about 1 MiB queued, and is cut after the stall bound", async () => {
  const tail = endlessTail();
  await until(() => tail.seen.polls >= 30, "30 polls");
  const full = Math.ceil(TAIL_QUEUE_BYTES / ROW_BYTES);
  assert.equal(tail.seen.reads, 1, "one read, then the queue is full");
  assert.ok(
    tail.seen.rows >= full && tail.seen.rows <= full + 1,
    `${tail.seen.rows} rows rendered`,
  );
  assert.equal(tail.seen.closed, 0, "the slot is held while the queue is");

  tail.advance(TAIL_STALL_MS - 1);
  const polls = tail.seen.polls;
  await until(() => tail.seen.polls >= polls + 3, "3 more polls");
  assert.equal(tail.seen.closed, 0, "not cut before the bound");
  tail.advance(1);
  await until(() => tail.seen.closed > 0, "the stream cut");
  assert.equal(tail.seen.closed, 1);
  assert.equal(tail.seen.reads, 1);
  await assert.rejects(drain(tail.res), /Live tail cut/);
});

Deno.test("a live tail whose client reads again goes on reading entries", async () => {
  const tail = endlessTail();
  await until(() => tail.seen.polls >= 5, "5 polls");
  assert.equal(tail.seen.reads, 1);
  const reader = tail.res.body!.getReader();
  let bytes = 0;
  while (bytes < 2 * TAIL_QUEUE_BYTES) {
    bytes += (await reader.read()).value!.length;
  }
  assert.ok(tail.seen.reads >= 2, "reading made room for more");
  await reader.cancel();
  assert.equal(tail.seen.closed, 1, "cancelling gives the slot back");
});

/** A live tail ended at its `maxMs` (5 s) with 1 MiB queued, unread. */
async function endedUnread() {
  const tail = endlessTail(5000);
  await until(() => tail.seen.reads >= 1 && tail.seen.polls >= 3, "a read");
  tail.advance(5000);
  const polls = tail.seen.polls;
  await until(() => tail.seen.polls >= polls + 1, "the poll that ends it");
  await new Promise((resolve) => setTimeout(resolve, 20));
  assert.equal(tail.seen.closed, 0, "ended, but 1 MiB still queued");
  return tail;
}

Deno.test("a live tail ended at maxMs with bytes unread holds its slot until its body is cancelled", async () => {
  const tail = await endedUnread();
  await tail.res.body!.cancel();
  assert.equal(tail.seen.closed, 1, "cancelled: the slot is back");
  const after = tail.seen.polls;
  await new Promise((resolve) => setTimeout(resolve, 20));
  assert.equal(tail.seen.polls, after, "no poll after the cancel");
});

Deno.test("a live tail ended at maxMs with bytes unread holds its slot until they are read", async () => {
  const tail = await endedUnread();
  const bytes = await drain(tail.res);
  assert.ok(bytes >= TAIL_QUEUE_BYTES, `${bytes} bytes read`);
  assert.equal(tail.seen.closed, 1, "read to its end: the slot is back");
  assert.equal(tail.seen.reads, 1, "no read once ended");
});

Deno.test("a live tail ended at maxMs whose client never reads is cut after the stall bound", async () => {
  const tail = endlessTail(5000);
  await until(() => tail.seen.reads >= 1 && tail.seen.polls >= 3, "a read");
  tail.advance(5000);
  await new Promise((resolve) => setTimeout(resolve, 20));
  assert.equal(tail.seen.closed, 0, "ended, queue held");
  tail.advance(TAIL_STALL_MS);
  await until(() => tail.seen.closed > 0, "the stream cut");
  await assert.rejects(drain(tail.res), /Live tail cut/);
});

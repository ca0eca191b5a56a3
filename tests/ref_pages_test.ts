/**
 * Pages by reference (docs/design.md#pages-by-reference): a batch whose
 * entries all go to one page keeps its bytes, and the page refers to them;
 * the compactor and a project's deletion delete those bytes with the page.
 * Everything else is stored as before, and the batch's bytes go at once.
 */
import * as assert from "node:assert/strict";
import { logKey, logsPrefix, pendingBatchKey } from "../db/keys.ts";
import { encodeJson } from "../db/kv.ts";
import {
  canReferTo,
  encodeRecordLine,
  pageBatchRef,
  readPageText,
} from "../db/logs.ts";
import { deleteProject } from "../db/projects.ts";
import { compactProject } from "../db/query/compact.ts";
import { histogram, parseQuery, queryLogs } from "../db/query/mod.ts";
import { type QueuedEntry, toLogRecord } from "../domain/entry.ts";
import { createId } from "../domain/ids.ts";
import { encodeBatchHeader } from "../queue/batch.ts";
import {
  type Harness,
  pendingBatches,
  randomEntry,
  stats,
  withHarness,
} from "./_helpers.ts";

const ORIGIN = "https://app.example.com";
const HOUR = 3_600_000;

/** An entry as the route queues it (members in the stored line's order). */
function queued(
  h: Harness,
  projectId: string,
  origin = ORIGIN,
  data: Record<string, unknown> = { title: "checkout", message: "failed" },
): QueuedEntry {
  const receivedAt = h.clock.now();
  const entry = {
    id: createId(receivedAt),
    level: "info",
    data,
    device: {},
    context: {},
    origin,
  } as unknown as QueuedEntry;
  entry.receivedAt = receivedAt;
  entry.projectId = projectId;
  return entry;
}

/**
 * Commits `entries` as one batch (a first entry goes alone, the others wait
 * for the next commit together); returns the batch id of `entries`.
 */
async function commitTogether(
  h: Harness,
  entries: QueuedEntry[],
): Promise<string> {
  const producer = h.pipeline.producer;
  const alone = producer.submit(queued(h, entries[0]!.projectId));
  await Promise.all([alone, ...entries.map((e) => producer.submit(e))]);
  // The last batch committed, after the one of the entry sent alone.
  const batch = (await pendingBatches(h.kv)).at(-1);
  assert.equal(
    batch?.header.count,
    entries.length,
    "the entries share a batch",
  );
  return batch!.id;
}

/** Keys under `batch_parts/<batchId>/`. */
async function batchParts(kv: Deno.Kv, batchId: string): Promise<number> {
  let n = 0;
  for await (const _ of kv.list({ prefix: ["batch_parts", batchId] })) n++;
  return n;
}

/** The stored pages of a project: key id and value. */
async function pages(
  kv: Deno.Kv,
  projectId: string,
): Promise<{ id: string; value: Uint8Array }[]> {
  const out: { id: string; value: Uint8Array }[] = [];
  for await (
    const page of kv.list<Uint8Array>({ prefix: logsPrefix(projectId) })
  ) {
    out.push({ id: page.key.at(-1) as string, value: page.value });
  }
  return out;
}

Deno.test("a batch of one project's accepted entries is stored once: its page refers to the batch", async () => {
  await withHarness(async (h) => {
    const project = await h.project();
    const entries = [queued(h, project.id), queued(h, project.id)];
    const batchId = await commitTogether(h, entries);
    await h.process();
    assert.equal((await h.kv.get(pendingBatchKey(batchId))).value, null);
    assert.equal(await batchParts(h.kv, batchId), 1, "the batch's bytes stay");
    const stored = await pages(h.kv, project.id);
    const page = stored.find((p) => p.id === entries[0]!.id);
    assert.ok(page);
    assert.deepEqual(pageBatchRef(page.value), { batchId, parts: 1 });
    assert.ok(page.value.length < 200, `page of ${page.value.length} bytes`);
    // The same lines a page of its own would hold, byte for byte.
    assert.equal(
      await readPageText(h.kv, project.id, page.id, page.value),
      entries.map((e) => encodeRecordLine(toLogRecord(e, "origin")))
        .join("\n"),
    );
    const ids = new Set(entries.map((e) => e.id));
    const logs = (await h.logs(project.id)).filter((l) => ids.has(l.id));
    assert.deepEqual(
      logs.map((l) => [l.id, l.auth]),
      entries.map((e) => [e.id, "origin"]),
    );
    assert.equal((await stats(h.kv, project.id)).accepted, 3);
  });
});

Deno.test("the compactor moves a page by reference into a chunk and deletes the batch's bytes", async () => {
  await withHarness(async (h) => {
    const project = await h.project();
    // Over one part: the batch's bytes span several keys.
    const big = { title: "t", message: "x".repeat(70_000) };
    const batchId = await commitTogether(h, [
      queued(h, project.id, ORIGIN, big),
    ]);
    await h.process();
    assert.equal(await batchParts(h.kv, batchId), 2);
    const before = await h.logs(project.id);
    h.clock.advance(HOUR + 60_000);
    const done = await compactProject(h.kv, project.id, { now: h.clock.now() });
    assert.equal(done.entries, 2);
    assert.deepEqual(await pages(h.kv, project.id), []);
    assert.equal(await batchParts(h.kv, batchId), 0, "nothing left behind");
    assert.deepEqual(await h.logs(project.id), before);
  });
});

Deno.test("deleting a project deletes the batch bytes its pages refer to", async () => {
  await withHarness(async (h) => {
    const project = await h.project();
    const other = await h.project();
    const batchId = await commitTogether(h, [
      queued(h, project.id),
      queued(h, project.id),
    ]);
    const kept = await commitTogether(h, [queued(h, other.id)]);
    await h.process();
    assert.equal(await batchParts(h.kv, batchId), 1);
    assert.equal(await deleteProject(h.kv, project.id), 3);
    assert.equal(await batchParts(h.kv, batchId), 0);
    assert.equal(await batchParts(h.kv, kept), 1, "another project's stay");
    assert.equal((await h.logs(other.id)).length, 2);
  });
});

Deno.test("a batch that cannot make one page is copied into pages, and its bytes go at once", async (t) => {
  const cases: [string, (h: Harness, ids: string[]) => QueuedEntry[]][] = [
    ["one entry rejected", (h, [a]) => [
      queued(h, a!),
      queued(h, a!, "https://evil.example"),
    ]],
    ["two projects", (h, [a, b]) => [queued(h, a!), queued(h, b!)]],
  ];
  for (const [name, make] of cases) {
    await t.step(name, async () => {
      await withHarness(async (h) => {
        const ids = [(await h.project()).id, (await h.project()).id];
        const batchId = await commitTogether(h, make(h, ids));
        await h.process();
        assert.equal(await batchParts(h.kv, batchId), 0);
        for (const id of ids) {
          for (const page of await pages(h.kv, id)) {
            if (page.value.length > 0 && page.value[0] === 2) {
              assert.notEqual(pageBatchRef(page.value)?.batchId, batchId);
            }
          }
        }
        const stored = (await h.logs(ids[0]!)).length +
          (await h.logs(ids[1]!)).length;
        assert.equal(stored, name === "two projects" ? 3 : 2);
      });
    });
  }
});

Deno.test("a batch queued by an older version (bytes inside its header) is processed and copied", async () => {
  await withHarness(async (h) => {
    const project = await h.project();
    const entry = queued(h, project.id);
    const batchId = createId(h.clock.now());
    await h.kv.set(
      pendingBatchKey(batchId),
      encodeBatchHeader({
        createdAt: h.clock.now(),
        count: 1,
        head: encodeJson([entry]),
        parts: 1,
        attempts: 0,
      }),
    );
    await h.process();
    assert.equal((await h.kv.get(pendingBatchKey(batchId))).value, null);
    const [page] = await pages(h.kv, project.id);
    assert.ok(page);
    assert.equal(pageBatchRef(page.value), null);
    assert.deepEqual((await h.logs(project.id)).map((l) => l.id), [entry.id]);
    const own = await h.kv.get<Uint8Array>(logKey(project.id, entry.id));
    assert.equal(own.value?.[0], 1);
    assert.equal(await batchParts(h.kv, batchId), 0);
  });
});

Deno.test("a posted entry is stored by reference through the endpoint", async () => {
  await withHarness(async (h) => {
    const project = await h.project();
    const body = randomEntry({ projectId: project.id });
    const res = await h.post(body, { Origin: ORIGIN });
    assert.equal(res.status, 200);
    const [batch] = await pendingBatches(h.kv);
    await h.process();
    const [page] = await pages(h.kv, project.id);
    assert.ok(page);
    assert.equal(pageBatchRef(page.value)?.batchId, batch!.id);
    const [log] = await h.logs(project.id);
    assert.deepEqual(log?.data, body.data);
    assert.equal(
      await batchParts(h.kv, batch!.id),
      1,
    );
  });
});

/**
 * A view of `kv` that runs `before` (once) when a batch's bytes are first
 * read: a compaction committing between a reader's listing of a page by
 * reference and its reading of the batch.
 */
function compactingOnFirstRead(
  kv: Deno.Kv,
  before: () => Promise<unknown>,
): Deno.Kv {
  let done = false;
  return new Proxy(kv, {
    get(target, name) {
      if (name !== "get") {
        const value = Reflect.get(target, name, target);
        return typeof value === "function" ? value.bind(target) : value;
      }
      return async (key: Deno.KvKey) => {
        if (!done && key[0] === "batch_parts") {
          done = true;
          await before();
        }
        return target.get(key);
      };
    },
  });
}

Deno.test("a reader that meets a page by reference being compacted reads again, missing nothing", async (t) => {
  for (const what of ["query", "histogram", "another compactor"] as const) {
    await t.step(what, async () => {
      await withHarness(async (h) => {
        const project = await h.project();
        const entries = [queued(h, project.id), queued(h, project.id)];
        await commitTogether(h, entries);
        await h.process();
        h.clock.advance(HOUR + 60_000);
        const view = compactingOnFirstRead(
          h.kv,
          () => compactProject(h.kv, project.id, { now: h.clock.now() }),
        );
        if (what === "another compactor") {
          // The other one committed first: this one stops without error.
          const mine = await compactProject(view, project.id, {
            now: h.clock.now(),
          });
          assert.equal(mine.entries, 0);
          assert.equal((await h.logs(project.id)).length, 3);
        } else if (what === "query") {
          const page = await queryLogs(view, project.id, { order: "oldest" });
          assert.equal(page.records.length, 3);
        } else {
          const counted = await histogram(view, project.id, {
            since: h.clock.now() - 2 * HOUR,
            until: h.clock.now(),
            filter: parseQuery("checkout"),
          });
          const total = counted.buckets.reduce(
            (n, b) => n + Object.values(b.counts).reduce((a, c) => a + c, 0),
            0,
          );
          assert.equal(total, 3);
        }
        assert.deepEqual(await pages(h.kv, project.id), [], "compacted");
      });
    });
  }
});

Deno.test("only a batch that is one page's worth can be referred to", async (t) => {
  await withHarness(async (h) => {
    const run = (n: number, step = 1) =>
      Array.from({ length: n }, () => {
        const entry = queued(h, "p");
        h.clock.advance(step);
        return entry;
      });
    const cases: [string, QueuedEntry[], boolean][] = [
      ["one project, ids rising", run(3), true],
      ["200 entries", run(200), true],
      ["201 entries", run(201), false],
      ["spanning under 1 s", run(2, 999), true],
      ["spanning 1 s", run(2, 1000), false],
      ["two projects", [queued(h, "p"), queued(h, "q")], false],
      ["ids falling", run(2).reverse(), false],
      ["no entry", [], false],
    ];
    for (const [name, entries, expected] of cases) {
      await t.step(name, () => assert.equal(canReferTo(entries), expected));
    }
  });
});

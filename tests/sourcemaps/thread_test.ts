/**
 * The consumer's stacks resolved in the query thread (`resolveStacks`): an
 * error of a release with maps is stored resolved by the thread, not by the
 * server's thread, and only such entries cross; the rest keep their lines.
 *
 * @module
 */
import assert from "node:assert/strict";
import { deleteSourceMaps, readSourceMapIndex } from "../../db/sourcemaps.ts";
import { SourceMapResolver } from "../../db/symbolicate.ts";
import { localReads } from "../../db/query/reads.ts";
import { createQueryThread } from "../../db/query/thread.ts";
import { ThreadStalledError } from "../../db/own_thread.ts";
import type { LogRecord } from "../../domain/entry.ts";
import {
  buildBundle,
  thrownStack,
  uploadBundleMap,
} from "../_helpers/bundle.ts";
import { store } from "../_helpers/dashboard.ts";
import { type Harness, withHarness } from "../_helpers/harness.ts";
import { notedReads, recordAt, T0 } from "../_helpers/query.ts";

const bundle = await buildBundle();
const stack = await thrownStack(
  bundle,
  "https://shop.example.com/assets/app.min.js",
);

function upload(h: Harness, projectId: string, release = "1.0.0") {
  return uploadBundleMap(h.kv, projectId, bundle, h.clock.now(), release);
}

Deno.test("an error of a release with maps is stored resolved by the query thread, and the server's thread parses no map", async () => {
  const dir = await Deno.makeTempDir();
  const kvPath = `${dir}/kv.sqlite`;
  const kv = await Deno.openKv(kvPath);
  const calls: string[] = [];
  const crossed: number[] = [];
  const thread = createQueryThread({
    kvPath,
    local: notedReads(() => localReads(kv), calls),
  });
  try {
    await withHarness(async (h) => {
      const project = await h.project();
      await upload(h, project.id);
      const [resolved, plain] = await store(h, project.id, [
        {
          level: "error",
          data: { title: "Cart", stack },
          context: { release: "1.0.0" },
        },
        { level: "error", data: { title: "Cart", stack }, context: {} },
      ]);
      const top = resolved!.resolved!.frames[0]!;
      assert.deepEqual([top.resolved, top.function, top.file], [
        true,
        "checkout",
        "src/cart.js",
      ]);
      assert.equal(plain!.resolved, undefined);
      assert.deepEqual(crossed, [1], "one record crossed");
      assert.deepEqual(calls, [], "resolved in the thread");
    }, {
      kv,
      pipeline: {
        resolveStacks: (projectId, records) => {
          crossed.push(records.length);
          return thread.resolveStacks(projectId, records);
        },
      },
    });
  } finally {
    await thread.stop();
    try {
      kv.close();
    } catch { /* closed with the harness */ }
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("only records whose release has maps go to resolveStacks, and their lines are encoded again", async () => {
  await withHarness(async (h) => {
    const project = await h.project();
    await upload(h, project.id);
    const asked: LogRecord[][] = [];
    const resolver = new SourceMapResolver(h.kv, {
      resolveStacks: (projectId, records) => {
        asked.push(records);
        return new SourceMapResolver(h.kv).resolveMany(projectId, records);
      },
    });
    const mapped = recordAt(T0, {
      data: { stack },
      context: { release: "1.0.0" },
    });
    const others = [
      recordAt(T0 + 1, { data: { stack }, context: { release: "2.0.0" } }),
      recordAt(T0 + 2, { data: { stack } }),
      recordAt(T0 + 3, { context: { release: "1.0.0" } }),
    ];
    const lineOf = await resolver.resolveRecords(
      project.id,
      [mapped, ...others],
      () => "as sent",
    );
    assert.deepEqual(asked, [[mapped]]);
    assert.equal(mapped.resolved!.frames[0]!.function, "checkout");
    assert.match(lineOf(mapped), /"resolved"/);
    assert.deepEqual(others.map(lineOf), ["as sent", "as sent", "as sent"]);
    asked.length = 0;
    await resolver.resolveRecords(project.id, others, () => "as sent");
    assert.deepEqual(asked, [], "no crossing without a mapped release");
  });
});

Deno.test("stacks whose thread stalled are stored as sent, not failed with their batch", async () => {
  await withHarness(async (h) => {
    const project = await h.project();
    await upload(h, project.id);
    const resolver = new SourceMapResolver(h.kv, {
      resolveStacks: () =>
        Promise.reject(new ThreadStalledError("The query thread", 15_000)),
    });
    const mapped = recordAt(T0, {
      data: { stack },
      context: { release: "1.0.0" },
    });
    const lineOf = await resolver.resolveRecords(
      project.id,
      [mapped],
      () => "as sent",
    );
    assert.equal(lineOf(mapped), "as sent");
    assert.equal(mapped.resolved, undefined);
    const failing = new SourceMapResolver(h.kv, {
      resolveStacks: () =>
        Promise.reject(new Error("database or disk is full")),
    });
    await assert.rejects(
      failing.resolveRecords(project.id, [mapped], () => "as sent"),
      /disk is full/,
      "any other failure fails the batch, to be retried",
    );
  });
});

Deno.test("a release named as a property of every object has maps only once uploaded, and one named __proto__ keeps its count", async () => {
  await withHarness(async (h) => {
    const project = await h.project();
    const resolver = new SourceMapResolver(h.kv, { indexTtlMs: 0 });
    for (const release of ["constructor", "toString", "__proto__"]) {
      const record = recordAt(T0, { data: { stack }, context: { release } });
      assert.equal(await resolver.resolve(project.id, record), null, release);
    }
    await upload(h, project.id, "__proto__");
    const { index } = await readSourceMapIndex(h.kv, project.id);
    assert.deepEqual(Object.entries(index.releases), [["__proto__", 1]]);
    const record = recordAt(T0, {
      data: { stack },
      context: { release: "__proto__" },
    });
    const resolved = await resolver.resolve(project.id, record);
    assert.equal(resolved?.frames[0]?.function, "checkout");
    await deleteSourceMaps(h.kv, project.id, "__proto__");
    const after = await readSourceMapIndex(h.kv, project.id);
    assert.deepEqual(Object.entries(after.index.releases), []);
  });
});

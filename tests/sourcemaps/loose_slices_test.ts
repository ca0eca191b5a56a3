/**
 * A source map's slices never outlive it: an upload whose commit fails
 * deletes what it wrote, a replaced or deleted map takes its slices with
 * it, and slices an upload or a deletion cut short (a crash) are deleted by
 * a merge round once they are older than an upload takes.
 *
 * @module
 */
import assert from "node:assert/strict";
import {
  deleteSourceMaps,
  listSourceMaps,
  LOOSE_SLICES_MS,
  sweepLooseSlices,
  uploadSourceMap,
} from "../../db/sourcemaps.ts";
import { sourceMapLooseKey, sourceMapSliceKey } from "../../db/keys.ts";
import { encodeJson } from "../../db/kv.ts";
import { mergeProject } from "../../db/storage/merge.ts";
import { projectTest } from "../_helpers/harness.ts";

/** A valid map of about 2 MB: 34 slices. */
const BIG = new TextEncoder().encode(JSON.stringify({
  version: 3,
  sources: ["a.js"],
  names: [],
  mappings: "A".repeat(2_000_000),
}));

/** `kv` whose `n`th atomic commit from now throws, as a full disk does. */
function failingAt(kv: Deno.Kv, n: number): Deno.Kv {
  let commits = 0;
  return new Proxy(kv, {
    get(target, prop) {
      if (prop === "atomic") {
        return () => {
          const op = target.atomic();
          const commit = op.commit.bind(op);
          op.commit = () => {
            if (++commits === n) {
              return Promise.reject(new Error("database or disk is full"));
            }
            return commit();
          };
          return op;
        };
      }
      const value = Reflect.get(target, prop);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}

async function keys(kv: Deno.Kv, prefix: Deno.KvKey): Promise<number> {
  return (await Array.fromAsync(kv.list({ prefix }))).length;
}

projectTest(
  "an upload whose commit fails leaves no slice behind",
  async (h, project) => {
    const failing = failingAt(h.kv, 2);
    await assert.rejects(
      uploadSourceMap(failing, {
        projectId: project.id,
        release: "1.0.0",
        url: "app.min.js",
        bytes: BIG,
        now: h.clock.now(),
      }),
      /disk is full/,
    );
    assert.equal(await keys(h.kv, sourceMapSliceKey(project.id)), 0);
    assert.equal(await keys(h.kv, sourceMapLooseKey(project.id)), 0);
  },
);

projectTest(
  "a replaced and a deleted map take their slices with them, and no note stays",
  async (h, project) => {
    const put = () =>
      uploadSourceMap(h.kv, {
        projectId: project.id,
        release: "1.0.0",
        url: "app.min.js",
        bytes: BIG,
        now: h.clock.now(),
      });
    await put();
    const second = await put();
    assert.equal(
      await keys(h.kv, sourceMapSliceKey(project.id)),
      second.slices,
    );
    assert.equal(await keys(h.kv, sourceMapLooseKey(project.id)), 0);
    await deleteSourceMaps(h.kv, project.id);
    assert.equal(await keys(h.kv, sourceMapSliceKey(project.id)), 0);
    assert.equal(await keys(h.kv, sourceMapLooseKey(project.id)), 0);
  },
);

projectTest(
  "slices an upload cut short left are deleted by a merge round once older than an upload takes; a map's own are kept",
  async (h, project) => {
    const t0 = h.clock.now();
    const kept = await uploadSourceMap(h.kv, {
      projectId: project.id,
      release: "1.0.0",
      url: "app.min.js",
      bytes: BIG,
      now: t0,
    });
    // A crash after the note and two slices, before the record: what an
    // upload of "lost" leaves.
    await h.kv.set(
      sourceMapLooseKey(project.id, "lost"),
      encodeJson({ release: "1.0.0", at: t0 }),
    );
    for (const n of [0, 1]) {
      await h.kv.set(
        sourceMapSliceKey(project.id, "lost", n),
        new Uint8Array(8),
      );
    }
    // A crash after a record's commit, before its note was deleted.
    await h.kv.set(
      sourceMapLooseKey(project.id, kept.id),
      encodeJson({ release: "1.0.0", at: t0 }),
    );
    // Still within an upload's time: it may be under way.
    assert.equal(
      await sweepLooseSlices(h.kv, project.id, t0 + LOOSE_SLICES_MS - 1),
      0,
    );
    assert.equal(await keys(h.kv, sourceMapSliceKey(project.id, "lost")), 2);
    await mergeProject(h.kv, project.id, { now: t0 + LOOSE_SLICES_MS });
    assert.equal(await keys(h.kv, sourceMapSliceKey(project.id, "lost")), 0);
    assert.equal(await keys(h.kv, sourceMapLooseKey(project.id)), 0);
    assert.equal(
      await keys(h.kv, sourceMapSliceKey(project.id, kept.id)),
      kept.slices,
    );
    assert.deepEqual(
      (await listSourceMaps(h.kv, project.id)).map((m) => m.id),
      [kept.id],
    );
  },
);

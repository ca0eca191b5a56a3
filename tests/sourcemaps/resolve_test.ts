/**
 * Stacks resolved through source maps: a real minified bundle (built by
 * `deno bundle --minify`) throws in V8; its entry, of a release with the
 * bundle's map, is resolved by the consumer as it is stored, and its error
 * group's top frame is the original function and file; an entry stored
 * before its map is shown resolved once the map is uploaded; every frame
 * that does not resolve says why; maps are listed and deleted by release
 * and with their project.
 *
 * @module
 */
import assert from "node:assert/strict";
import { deleteProject } from "../../db/deletion.ts";
import { listGroups } from "../../db/error_group_reads.ts";
import {
  deleteSourceMaps,
  listSourceMaps,
  MAX_MAP_BYTES,
  readSourceMapIndex,
  SourceMapTooLargeError,
  uploadSourceMap,
} from "../../db/sourcemaps.ts";
import {
  entryTopFrame,
  groupTopFrame,
  shownStack,
} from "../../db/symbolicate.ts";
import { sourceMapSliceKey } from "../../db/keys.ts";
import {
  buildBundle,
  type Bundle,
  thrownStack,
  uploadBundleMap,
} from "../_helpers/bundle.ts";
import {
  everything,
  type Harness,
  harnessTest,
  ORIGIN,
  projectTest,
  randomEntry,
} from "../_helpers/harness.ts";
import { allowValue } from "../../db/projects.ts";
import { replayRejected } from "../../queue/replay.ts";
import { store } from "../_helpers/dashboard.ts";

const bundle: Bundle = await buildBundle();

const URL_OF_BUNDLE = "https://shop.example.com/assets/app.min.js?v=7";
const stack = await thrownStack(bundle, URL_OF_BUNDLE);

function upload(h: Harness, projectId: string, release = "1.0.0") {
  return uploadBundleMap(h.kv, projectId, bundle, h.clock.now(), release);
}

function errorEntry(
  release: string | null,
  data: Record<string, unknown> = {},
) {
  return {
    level: "error",
    data: { title: "Cart has no items", stack, ...data },
    context: release === null ? {} : { release },
  };
}

projectTest(
  "an error of a release with maps is stored resolved, and its group's top frame is the original function",
  async (h, project) => {
    await upload(h, project.id);
    const [entry] = await store(h, project.id, [errorEntry("1.0.0")]);
    const top = entry!.resolved!.frames[0]!;
    assert.equal(top.resolved, true);
    assert.equal(top.function, "checkout");
    assert.equal(top.file, "src/cart.js");
    assert.equal(top.line, 3);
    assert.equal(top.source, 'throw new TypeError("Cart has no items");');
    const caller = entry!.resolved!.frames[1]!;
    assert.deepEqual([caller.function, caller.file, caller.line], [
      "pay",
      "src/main.js",
      4,
    ]);
    const [group] = await listGroups(h.kv, project.id, h.clock.now());
    assert.equal(group!.topFrame, "src/cart.js:checkout");
    const frame = {
      function: "checkout",
      file: "src/cart.js",
      line: 3,
      column: 11,
    };
    assert.deepEqual(await entryTopFrame(h.kv, project.id, entry!), frame);
    assert.deepEqual(
      await groupTopFrame(h.kv, project.id, group!.sampleId),
      frame,
    );
  },
);

projectTest(
  "an entry stored before its map is shown resolved once the map is uploaded",
  async (h, project) => {
    const [entry] = await store(h, project.id, [errorEntry("1.0.0")]);
    assert.equal(entry!.resolved, undefined);
    const before = await shownStack(h.kv, project.id, entry!);
    assert.equal(before!.frames[0]!.resolved, false);
    assert.equal(
      before!.frames[0]!.why,
      'no source maps uploaded for release "1.0.0"',
    );
    assert.match(before!.frames[0]!.file, /app\.min\.js/);
    await upload(h, project.id);
    const after = await shownStack(h.kv, project.id, entry!);
    assert.deepEqual(
      [
        after!.frames[0]!.function,
        after!.frames[0]!.file,
        after!.frames[0]!.line,
      ],
      ["checkout", "src/cart.js", 3],
    );
  },
);

projectTest("each frame that does not resolve says why", async (h, project) => {
  await upload(h, project.id);
  const withoutSources = JSON.parse(bundle.map);
  delete withoutSources.sourcesContent;
  await uploadSourceMap(h.kv, {
    projectId: project.id,
    release: "2.0.0",
    url: "~/assets/app.min.js",
    bytes: new TextEncoder().encode(JSON.stringify(withoutSources)),
    now: h.clock.now(),
  });
  const other = stack.replaceAll("app.min.js", "vendor.min.js");
  const entries = await store(h, project.id, [
    errorEntry(null),
    errorEntry("1.0.0", { stack: other }),
    errorEntry("2.0.0"),
    errorEntry("1.0.0", {
      stack: `Error: x\n    at JSON.parse (<anonymous>)\n${
        stack.split("\n").slice(1).join("\n")
      }`,
    }),
  ]);
  const shown = await Promise.all(
    entries.map((e) => shownStack(h.kv, project.id, e)),
  );
  assert.equal(
    shown[0]!.frames[0]!.why,
    'the entry names no release ("context.release")',
  );
  assert.equal(
    shown[1]!.frames[0]!.why,
    `no source map of release "1.0.0" for "${
      URL_OF_BUNDLE.replace("app.min.js", "vendor.min.js")
    }"`,
  );
  const bare = shown[2]!.frames[0]!;
  assert.deepEqual([bare.resolved, bare.file, bare.line], [
    true,
    "src/cart.js",
    3,
  ]);
  assert.equal(bare.source, undefined);
  assert.equal(bare.why, "the map holds no sources");
  const runtime = shown[3]!.frames[0]!;
  assert.deepEqual([runtime.resolved, runtime.why], [
    false,
    "the runtime's own code",
  ]);
  // The runtime's frame is skipped for the group: the app's is the top.
  const groups = await listGroups(h.kv, project.id, h.clock.now());
  assert.ok(groups.some((g) => g.topFrame === "src/cart.js:checkout"));
  assert.ok(groups.every((g) => !g.topFrame?.includes("<anonymous>")));
});

projectTest(
  "maps are listed and deleted by release, and deleted with their project",
  async (h, project) => {
    await upload(h, project.id, "1.0.0");
    await upload(h, project.id, "1.0.0"); // replaces the release's map of that URL
    await upload(h, project.id, "1.1.0");
    assert.deepEqual(
      (await listSourceMaps(h.kv, project.id)).map((m) => m.release),
      ["1.0.0", "1.1.0"],
    );
    assert.equal((await deleteSourceMaps(h.kv, project.id, "1.0.0")).length, 1);
    const { index } = await readSourceMapIndex(h.kv, project.id);
    assert.deepEqual(index.releases, { "1.1.0": 1 });
    assert.equal(index.bytes, bundle.map.length);
    await deleteProject(h.kv, project.id);
    const left = await everything(h.kv);
    assert.ok(!left.includes("source_map"), left);
  },
);

projectTest(
  "a map past the size bound is refused before it is read",
  async (h, project) => {
    await assert.rejects(
      uploadSourceMap(h.kv, {
        projectId: project.id,
        release: "1.0.0",
        url: "app.min.js",
        bytes: new Uint8Array(MAX_MAP_BYTES + 1),
        now: h.clock.now(),
      }),
      SourceMapTooLargeError,
    );
    assert.deepEqual(await listSourceMaps(h.kv, project.id), []);
  },
);

projectTest(
  "a map that cannot be read leaves its entries stored, each frame saying why",
  async (h, project) => {
    const map = await upload(h, project.id);
    await h.kv.delete(sourceMapSliceKey(project.id, map.id, 0));
    const [entry] = await store(h, project.id, [errorEntry("1.0.0")]);
    assert.ok(entry, "the entry is stored");
    assert.match(
      entry!.resolved!.frames[0]!.why!,
      /^the map "app\.min\.js" cannot be read: .*slice missing/,
    );
  },
);

harnessTest(
  "an error stored by a replay is resolved through the maps of its release",
  async (h) => {
    const project = await h.project([]);
    await upload(h, project.id);
    await h.post(
      randomEntry({ projectId: project.id, ...errorEntry("1.0.0") }),
      {
        Origin: ORIGIN,
      },
    );
    await h.process();
    await allowValue(h.kv, project.id, ORIGIN);
    const [result] = await replayRejected(h.kv, project.id, undefined, {
      now: h.clock.now,
    });
    assert.equal(result!.outcome, "stored");
    const [entry] = await h.logs(project.id);
    assert.equal(entry!.resolved!.frames[0]!.function, "checkout");
    const [group] = await listGroups(h.kv, project.id, h.clock.now());
    assert.equal(group!.topFrame, "src/cart.js:checkout");
  },
);

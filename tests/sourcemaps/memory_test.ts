/**
 * What a source map costs in memory once decoded: an upload whose mappings
 * pass the bounds of generated lines, segments or sections is refused (`400`
 * JSON over HTTP, one line and exit 1 from `deno task sourcemap upload`)
 * and nothing is stored, while the map of a real minified bundle is stored
 * and resolves; the counts are those the decoder builds; the consumer's
 * cache weighs each parsed map by its decoded memory, not its JSON, and the
 * maps one stack holds stop at the same budget, the frames left saying why.
 *
 * @module
 */
import assert from "node:assert/strict";
import { decodedMappings, TraceMap } from "@jridgewell/trace-mapping";
import { createReadToken } from "../../db/tokens.ts";
import {
  listSourceMaps,
  MAX_MAP_LINES,
  MAX_MAP_SECTIONS,
  MAX_MAP_SEGMENTS,
  uploadSourceMap,
} from "../../db/sourcemaps.ts";
import {
  PARSE_WINDOW_MS,
  shownStack,
  SourceMapResolver,
} from "../../db/symbolicate.ts";
import type { LogRecord } from "../../domain/entry.ts";
import { countMappings, parseSourceMap } from "../../domain/symbolicate.ts";
import { bundleMinified } from "../../bench/sourcemap.ts";
import {
  apiRequest,
  dashboardProjectTest,
  store,
} from "../_helpers/dashboard.ts";
import { assertRefused, cli } from "../_helpers/cli.ts";
import { type Harness, projectTest } from "../_helpers/harness.ts";

const ORIGIN = "https://shop.example.com";

/** A plain map of one source whose mappings are `mappings`. */
function plainMap(mappings: string, extra: Record<string, unknown> = {}) {
  return JSON.stringify({
    version: 3,
    sources: ["src/app.js"],
    names: [],
    mappings,
    ...extra,
  });
}

/** A sectioned map of `count` one-segment sections, `step` lines apart. */
function sectionedMap(count: number, step = 1): string {
  const map = {
    version: 3,
    sources: ["src/app.js"],
    names: [],
    mappings: "AAAA",
  };
  return JSON.stringify({
    version: 3,
    sections: Array.from({ length: count }, (_, i) => ({
      offset: { line: i * step, column: 0 },
      map,
    })),
  });
}

/** Each bound, a map just past it, and the message that refuses it. */
const PAST_BOUNDS: [string, string, string][] = [
  [
    "lines",
    plainMap(";".repeat(MAX_MAP_LINES)),
    `its mappings describe ${
      MAX_MAP_LINES + 1
    } generated lines, the most is ${MAX_MAP_LINES}`,
  ],
  [
    "segments",
    plainMap("A,".repeat(MAX_MAP_SEGMENTS) + "A"),
    `its mappings hold ${
      MAX_MAP_SEGMENTS + 1
    } segments, the most is ${MAX_MAP_SEGMENTS}`,
  ],
  [
    "sections",
    sectionedMap(MAX_MAP_SECTIONS + 1),
    `more than ${MAX_MAP_SECTIONS} sections, the most is ${MAX_MAP_SECTIONS}`,
  ],
  [
    "a section's offset",
    sectionedMap(2, MAX_MAP_LINES),
    `its mappings describe ${
      MAX_MAP_LINES + 1
    } generated lines, the most is ${MAX_MAP_LINES}`,
  ],
];

Deno.test("countMappings counts the lines and segments the decoder builds", () => {
  const cases = [
    "",
    "AAAA,CAAC;;AACA",
    "A,A;A",
    "AAAAA,gBAAgB", // five values; values of two digits
    "AAAAAAAAAAAAAAAA", // values without commas: several segments
    "AA,AA,AA", // two values: the decoder reads on past the comma
    ",,;;,",
    "gggg", // a value that never ends
    "A*A,é,A", // characters that are no base64 digit
  ];
  for (const mappings of cases) {
    const decoded = decodedMappings(
      new TraceMap({ version: 3, sources: [], names: [], mappings }),
    );
    assert.deepEqual(countMappings(mappings), {
      lines: decoded.length,
      segments: decoded.reduce((sum, line) => sum + line.length, 0),
    }, mappings);
  }
});

/** A token of the upload scope for `projectId`. */
async function uploadToken(h: { kv: Deno.Kv }, projectId: string) {
  return (await createReadToken(h.kv, {
    projectId,
    name: "ci",
    scope: "upload",
    createdBy: "cli",
  })).token;
}

dashboardProjectTest(
  "a map past the bound of lines, segments or sections is a 400 JSON error naming it, and nothing is stored",
  async (h, project) => {
    const token = await uploadToken(h, project.id);
    for (const [bound, body, message] of PAST_BOUNDS) {
      const res = await apiRequest(
        h,
        `/api/v1/projects/${project.id}/sourcemaps?release=1.0.0&url=app.min.js`,
        token,
        { method: "POST", body },
      );
      assert.equal(res.status, 400, bound);
      assert.deepEqual(await res.json(), {
        error: `Cannot read the source map: ${message}`,
      }, bound);
    }
    assert.deepEqual(await listSourceMaps(h.kv, project.id), []);
  },
);

projectTest(
  "deno task sourcemap upload refuses a map past a bound in one line, exit 1, and stores nothing",
  async (h, project) => {
    const dir = await Deno.makeTempDir();
    try {
      for (const [bound, text, message] of PAST_BOUNDS) {
        const path = `${dir}/app.min.js.map`;
        await Deno.writeTextFile(path, text);
        const run = await cli(
          h.kv,
          ["sourcemap", "upload", project.id, "--release", "1.0.0", path],
          { now: h.clock.now },
        );
        assert.equal(run.code, 1, bound);
        assertRefused(
          run,
          `Cannot read the source map: ${message} (app.min.js.map)`,
        );
      }
      assert.deepEqual(await listSourceMaps(h.kv, project.id), []);
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
);

projectTest(
  "a map at each bound is stored",
  async (h, project) => {
    const maps = {
      lines: plainMap(";".repeat(MAX_MAP_LINES - 1)),
      segments: plainMap("A,".repeat(MAX_MAP_SEGMENTS - 1) + "A"),
      sections: sectionedMap(MAX_MAP_SECTIONS),
    };
    for (const [url, text] of Object.entries(maps)) {
      await uploadSourceMap(h.kv, {
        projectId: project.id,
        release: "1.0.0",
        url,
        bytes: new TextEncoder().encode(text),
        now: h.clock.now(),
      });
    }
    assert.equal((await listSourceMaps(h.kv, project.id)).length, 3);
  },
);

/** A generated app of `count` functions, each throwing on its second line. */
function generatedApp(count: number): string {
  const lines = ["export const all = [];"];
  for (let i = 0; i < count; i++) {
    lines.push(
      `export function handler${i}(order) {`,
      `  if (!order) throw new RangeError("No order for handler ${i}");`,
      `  return { id: order.id, total: order.total * ${i + 1} };`,
      `}`,
      `all.push(handler${i});`,
    );
  }
  return lines.join("\n");
}

dashboardProjectTest(
  "the map of a real minified bundle of 16,000 functions (a 5.7 MB map) is stored and resolves a stack",
  async (h, project) => {
    const { js, map } = await bundleMinified(
      { "src/app.js": generatedApp(16_000) },
      "src/app.js",
    );
    const { lines, segments } = countMappings(JSON.parse(map).mappings);
    assert.ok(map.length > 5_000_000, `a map of ${map.length} bytes`);
    assert.ok(segments > 400_000 && segments < MAX_MAP_SEGMENTS / 4);
    assert.ok(lines < 100);
    const res = await apiRequest(
      h,
      `/api/v1/projects/${project.id}/sourcemaps?release=1.0.0&url=app.min.js`,
      await uploadToken(h, project.id),
      { method: "POST", body: map },
    );
    assert.equal(res.status, 201, await res.clone().text());
    // The last function's throw, in the minified code.
    const at = js.lastIndexOf("throw ");
    const line = js.slice(0, at).split("\n").length;
    const column = at - js.lastIndexOf("\n", at - 1);
    const [entry] = await store(h, project.id, [{
      level: "error",
      data: {
        title: "No order",
        stack:
          `RangeError: No order\n    at x (${ORIGIN}/app.min.js:${line}:${column})`,
      },
      context: { release: "1.0.0" },
    }]);
    const top = entry!.resolved!.frames[0]!;
    assert.deepEqual([top.resolved, top.file, top.line], [
      true,
      "src/app.js",
      5 * 15_999 + 3,
    ]);
  },
);

/** A map of `segments` one-line segments, every one at column 0. */
const heavyMap = (segments: number, extra: Record<string, unknown> = {}) =>
  plainMap("AAAA,".repeat(segments - 1) + "AAAA", extra);

/** Uploads `text` for `m{i}.min.js` of release 1.0.0. */
async function uploadAs(
  h: Harness,
  projectId: string,
  i: number,
  text: string,
) {
  await uploadSourceMap(h.kv, {
    projectId,
    release: "1.0.0",
    url: `m${i}.min.js`,
    bytes: new TextEncoder().encode(text),
    now: h.clock.now(),
  });
}

/** An error of release 1.0.0 whose frames are in `m{i}.min.js` for each `i`. */
function errorIn(files: number[]): LogRecord {
  return {
    id: crypto.randomUUID(),
    receivedAt: 0,
    level: "error",
    data: {
      stack: `Error: x\n${
        files.map((i) => `    at f${i} (${ORIGIN}/m${i}.min.js:1:1)`).join("\n")
      }`,
    },
    device: {},
    context: { release: "1.0.0" },
    auth: "origin",
  };
}

projectTest(
  "the resolver's cache weighs a parsed map by its decoded memory, not its JSON",
  async (h, project) => {
    // 100 KB of JSON; 20,000 segments of 4 values, 88 bytes each decoded.
    const text = heavyMap(20_000);
    for (let i = 0; i < 3; i++) await uploadAs(h, project.id, i, text);
    // Room for the JSON of the three ten times over, for one decoded.
    const resolver = new SourceMapResolver(h.kv, {
      maxBytes: 30 * text.length,
    });
    for (let i = 0; i < 3; i++) {
      const stack = await resolver.resolve(project.id, errorIn([i]));
      assert.equal(stack!.frames[0]!.resolved, true);
    }
    const { maps, bytes } = resolver.cached;
    assert.equal(maps, 1);
    assert.equal(bytes, parseSourceMap(text).bytes);
    assert.ok(bytes > 15 * text.length, `${bytes} bytes for ${text.length}`);
  },
);

projectTest(
  "source lines split for showing a frame add to a kept map's weight",
  async (h, project) => {
    const source = "let total = 0;\n".repeat(50_000);
    const text = heavyMap(10, { sourcesContent: [source] });
    await uploadAs(h, project.id, 0, text);
    const resolver = new SourceMapResolver(h.kv);
    const stack = await resolver.resolve(project.id, errorIn([0]));
    assert.equal(stack!.frames[0]!.source, "let total = 0;");
    const { maps, bytes } = resolver.cached;
    assert.equal(maps, 1);
    assert.ok(bytes >= parseSourceMap(text).bytes + 50_000 * 30, `${bytes}`);
  },
);

projectTest(
  "the maps of one stack stop at the budget: a frame past it says why",
  async (h, project) => {
    const text = heavyMap(20_000);
    const weight = parseSourceMap(text).bytes;
    for (let i = 0; i < 3; i++) await uploadAs(h, project.id, i, text);
    const maxBytes = Math.floor(1.5 * weight);
    const resolver = new SourceMapResolver(h.kv, { maxBytes });
    const stack = await resolver.resolve(project.id, errorIn([0, 1, 2]));
    assert.deepEqual(stack!.frames.map((f) => f.resolved), [true, true, false]);
    assert.equal(
      stack!.frames[2]!.why,
      `the stack's other maps take the ${maxBytes} bytes of memory given to maps`,
    );
  },
);

projectTest(
  "a project's maps are parsed within its parsing time each window: past it an entry is stored as sent and a page resolves it",
  async (h, project) => {
    const text = heavyMap(20_000);
    for (let i = 0; i < 2; i++) await uploadAs(h, project.id, i, text);
    // Each parse takes 5 ms of this clock; the project has 1 ms a window.
    let t = 0;
    const resolver = new SourceMapResolver(h.kv, {
      now: h.clock.now,
      maxBytes: parseSourceMap(text).bytes,
      parseBudgetMs: 1,
      clock: () => (t += 5),
    });
    const first = await resolver.resolve(project.id, errorIn([0]));
    assert.equal(first!.frames[0]!.resolved, true);
    // Kept: no parse needed.
    assert.ok(await resolver.resolve(project.id, errorIn([0])));
    // Another map, not kept (one fits): the window's time is spent.
    assert.equal(await resolver.resolve(project.id, errorIn([1])), null);
    const shown = await shownStack(h.kv, project.id, errorIn([1]));
    assert.equal(shown!.frames[0]!.resolved, true, "the page resolves it");
    h.clock.advance(PARSE_WINDOW_MS);
    const next = await resolver.resolve(project.id, errorIn([1]));
    assert.equal(next!.frames[0]!.resolved, true, "the next window parses");
  },
);

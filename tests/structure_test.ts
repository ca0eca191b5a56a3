/**
 * The shape of the house (docs/design.md#layers): no import cycle, not even
 * through type-only imports, lower layers never import higher ones, no
 * function outside the tests over 80 lines (JSX components included), and
 * no test file past 700 lines. A source file past 600 lines is named in a
 * warning, not refused: a file is split where its concerns part, not at a
 * count. Inside db/, the query module only reads
 * (docs/storage.md#storage-and-query): nothing in db/query/ writes, and of
 * db/storage/ it imports only the stored formats' decoders, never what
 * writes.
 *
 * @module
 */
import assert from "node:assert/strict";
import { longFunctions } from "./_helpers/function_length.ts";

const ROOT = new URL("../", import.meta.url);
/** Longest function outside the tests, nested functions included. */
const MAX_FUNCTION_LINES = 80;
/** Source files past this many lines are named in a warning. */
const WARN_FILE_LINES = 600;
/** Longest file under tests/, so that a suite stays one thing to read. */
const MAX_TEST_LINES = 700;
/** Layers from the bottom: a module may import its own layer or lower ones. */
const LAYERS = ["domain", "db", "auth", "queue", "routes", "app"];

async function sourceFiles(dir = ""): Promise<string[]> {
  const files: string[] = [];
  for await (const entry of Deno.readDir(new URL(dir || ".", ROOT))) {
    const path = dir + entry.name;
    if (entry.isDirectory) {
      if (entry.name.startsWith(".") || entry.name === "data") continue;
      if (entry.name === "node_modules" || entry.name === "dist") continue;
      files.push(...await sourceFiles(path + "/"));
    } else if (/\.tsx?$/.test(entry.name)) {
      files.push(path);
    }
  }
  return files;
}

const IMPORT =
  /(?:^|\n)\s*(?:import|export)\b[^"';]*?from\s*["'](\.{1,2}\/[^"']+)["']/g;

function resolve(from: string, spec: string): string {
  return new URL(spec, new URL(from, ROOT)).href.slice(ROOT.href.length);
}

async function importGraph(): Promise<Map<string, string[]>> {
  const graph = new Map<string, string[]>();
  for (const file of await sourceFiles()) {
    const text = await Deno.readTextFile(new URL(file, ROOT));
    graph.set(
      file,
      [...text.matchAll(IMPORT)].map((m) => resolve(file, m[1]!)),
    );
  }
  return graph;
}

function layerOf(file: string): number {
  const top = file.includes("/") ? file.slice(0, file.indexOf("/")) : "app";
  return LAYERS.indexOf(top === "main.ts" ? "app" : top);
}

Deno.test("the import graph has no cycle, type-only imports included", async () => {
  const graph = await importGraph();
  const state = new Map<string, "open" | "done">();
  const cycles: string[] = [];
  const visit = (file: string, path: string[]) => {
    if (state.get(file) === "done") return;
    if (state.get(file) === "open") {
      cycles.push([...path.slice(path.indexOf(file)), file].join(" -> "));
      return;
    }
    state.set(file, "open");
    for (const next of graph.get(file) ?? []) visit(next, [...path, file]);
    state.set(file, "done");
  };
  for (const file of graph.keys()) visit(file, []);
  assert.deepEqual(cycles, []);
});

/** Whether a module of `layer` may import `target`. */
function mayImport(layer: number, target: string): boolean {
  const above = layerOf(target);
  // A module outside the layers (cli/, dashboard/, alerts/, server/ and the
  // like) sits on top: only the app's wiring may import it.
  return above < 0 ? layer === LAYERS.indexOf("app") : above <= layer;
}

Deno.test("lower layers never import higher ones", async () => {
  const leaks: string[] = [];
  let checked = 0;
  for (const [file, imports] of await importGraph()) {
    const layer = layerOf(file);
    if (layer < 0) continue; // cli/, bench/, tests/ and the like sit on top
    for (const target of imports) {
      checked++;
      if (!mayImport(layer, target)) leaks.push(`${file} -> ${target}`);
    }
  }
  assert.ok(checked > 100, `only ${checked} imports were read`);
  assert.deepEqual(leaks, []);
});

Deno.test("a module of a layer that imports one on top is a leak", () => {
  assert.equal(
    mayImport(layerOf("db/storage/write.ts"), "dashboard/mount.ts"),
    false,
  );
  assert.equal(mayImport(layerOf("routes/logs.ts"), "alerts/mod.ts"), false);
  assert.equal(mayImport(layerOf("main.ts"), "dashboard/mount.ts"), true);
  assert.equal(
    mayImport(layerOf("db/storage/write.ts"), "routes/logs.ts"),
    false,
  );
  assert.equal(
    mayImport(layerOf("routes/logs.ts"), "db/storage/write.ts"),
    true,
  );
});

/**
 * The modules of db/storage/ that db/query/ may import: the stored formats
 * and their decoders (a line, a chunk and its summary and blooms, a Bloom
 * filter, what a token is). The writes, the merger and its tiers stay out.
 */
const STORAGE_FORMATS = [
  "db/storage/lines.ts",
  "db/storage/chunk.ts",
  "db/storage/bloom.ts",
  "db/storage/text.ts",
  "db/storage/columns.ts",
  "db/storage/coarse.ts",
];
/** A write to KV: an atomic operation, its commit, or a single write. */
const WRITE = /\.atomic\(|\.commit\(|\bkv\.(?:set|delete|enqueue)\(/;

/** Whether a module of db/query/ may import `target`. */
function queryMayImport(target: string): boolean {
  return !target.startsWith("db/storage/") || STORAGE_FORMATS.includes(target);
}

Deno.test("db/query/ only reads: no write in it, and of db/storage/ only the formats", async () => {
  const graph = await importGraph();
  const found: string[] = [];
  let checked = 0;
  for (const [file, imports] of graph) {
    if (file.startsWith("db/storage/")) {
      for (const target of imports) {
        if (target.startsWith("db/query/")) found.push(`${file} -> ${target}`);
      }
    }
    const formats = STORAGE_FORMATS.includes(file);
    if (!file.startsWith("db/query/") && !formats) continue;
    checked++;
    const text = await Deno.readTextFile(new URL(file, ROOT));
    if (WRITE.test(text)) found.push(`${file} writes`);
    if (formats) continue;
    for (const target of imports) {
      if (!queryMayImport(target)) found.push(`${file} -> ${target}`);
    }
  }
  assert.ok(checked > 10, `only ${checked} modules were read`);
  assert.deepEqual(found, []);
});

Deno.test("a query module that imports a writer of storage, or writes, is a leak", () => {
  assert.equal(queryMayImport("db/storage/chunk.ts"), true);
  assert.equal(queryMayImport("db/keys.ts"), true);
  assert.equal(queryMayImport("db/storage/merge.ts"), false);
  assert.equal(queryMayImport("db/storage/write.ts"), false);
  assert.ok(WRITE.test("const op = kv.atomic();"));
  assert.ok(WRITE.test("await op.commit();"));
  assert.ok(WRITE.test("await kv.set(key, value);"));
  assert.ok(!WRITE.test("cache.set(filter, compiled);"));
});

Deno.test(`no function outside the tests is over ${MAX_FUNCTION_LINES} lines`, async () => {
  const long: string[] = [];
  let files = 0;
  for (const file of await sourceFiles()) {
    if (file.startsWith("tests/")) continue;
    files++;
    const source = await Deno.readTextFile(new URL(file, ROOT));
    for (const fn of longFunctions(file, source, MAX_FUNCTION_LINES)) {
      long.push(`${file}:${fn.line} ${fn.name}: ${fn.lines}`);
    }
  }
  assert.ok(files > 150, `only ${files} files were read`);
  assert.deepEqual(long, []);
});

Deno.test("the function rule measures declarations, arrows, methods and JSX components, nested ones in their holder", () => {
  const body = (n: number) => Array.from({ length: n }, (_, i) => `  f(${i});`);
  const source = [
    `function short() {`,
    ...body(3),
    `}`,
    `export function Long() {`,
    `  const inner = () => {`,
    ...body(4),
    `  };`,
    `  return <div>`,
    ...body(3).map((l) => `  <p>{${l.trim().slice(0, -1)}}</p>`),
    `  </div>;`,
    `}`,
    `const arrow = (x: number) => {`,
    ...body(8),
    `};`,
    `class C {`,
    `  method() {`,
    ...body(8),
    `  }`,
    `}`,
  ].join("\n");
  assert.deepEqual(
    longFunctions("a.tsx", source, 9).map((f) => [f.name, f.line, f.lines]),
    [["Long", 6, 13], ["arrow", 19, 10], ["method", 30, 10]],
  );
});

/** The files past `max` lines, as `path: lines`. */
function longFiles(
  files: [path: string, text: string][],
  max: number,
): string[] {
  const long: string[] = [];
  for (const [path, text] of files) {
    const lines = text.split("\n").length - 1;
    if (lines > max) long.push(`${path}: ${lines}`);
  }
  return long;
}

Deno.test("longFiles names a file past the bound and not one at it", () => {
  const text = (n: number) => "x\n".repeat(n);
  assert.deepEqual(
    longFiles([["a.ts", text(600)], ["b.ts", text(601)], ["c.ts", ""]], 600),
    ["b.ts: 601"],
  );
});

Deno.test(`a source file past ${WARN_FILE_LINES} lines is named in a warning`, async () => {
  const files: [string, string][] = [];
  for (const file of await sourceFiles()) {
    if (file.startsWith("tests/")) continue;
    files.push([file, await Deno.readTextFile(new URL(file, ROOT))]);
  }
  assert.ok(files.length > 200, `only ${files.length} source files were read`);
  const long = longFiles(files, WARN_FILE_LINES);
  if (long.length > 0) {
    console.warn(`Files past ${WARN_FILE_LINES} lines: ${long.join(", ")}`);
  }
});

Deno.test(`no test file is over ${MAX_TEST_LINES} lines`, async () => {
  const long: string[] = [];
  for (const file of await sourceFiles("tests/")) {
    const lines = (await Deno.readTextFile(new URL(file, ROOT))).split("\n");
    if (lines.length - 1 > MAX_TEST_LINES) {
      long.push(`${file}: ${lines.length - 1}`);
    }
  }
  assert.deepEqual(long, []);
});

/**
 * The documentation's shape: the README stays a front door, BENCHMARKS.md
 * holds current results, every link between the pages (README.md,
 * BENCHMARKS.md, docs/*.md) reaches a file and, when it names one, a heading
 * of that page, docs/operating.md names every task, and every heading a
 * code comment points to (`docs/query.md#query-syntax`) exists.
 */
import assert from "node:assert/strict";

const ROOT = new URL("../", import.meta.url);

/**
 * Pages linked from the README that are written on other branches; once they
 * are merged, this list is emptied and their links are checked like the rest.
 */
const PENDING_PAGES = new Set<string>([]);

/** The number of lines of a file of the repository. */
async function lineCount(path: string): Promise<number> {
  const text = await Deno.readTextFile(new URL(path, ROOT));
  return text.trimEnd().split("\n").length;
}

/** The pages whose links are checked, as paths from the root. */
async function pages(): Promise<string[]> {
  const found = ["README.md", "BENCHMARKS.md"];
  for await (const entry of Deno.readDir(new URL("docs/", ROOT))) {
    if (entry.isFile && entry.name.endsWith(".md")) {
      found.push(`docs/${entry.name}`);
    }
  }
  return found.sort();
}

/** A page's text without its fenced code blocks, where links are not links. */
function prose(text: string): string {
  return text.replace(/^```[\s\S]*?^```$/gm, "");
}

/** The anchor GitHub gives a heading: `## What happens after \`200\`` → `what-happens-after-200`. */
function anchorOf(heading: string): string {
  return heading.trim().toLowerCase().replace(/[^\p{L}\p{N}\- _]/gu, "")
    .replaceAll(" ", "-");
}

/** The anchors of a page's headings. */
function anchors(text: string): Set<string> {
  const found = new Set<string>();
  for (const [, heading] of prose(text).matchAll(/^#{1,6} (.+)$/gm)) {
    found.add(anchorOf(heading!));
  }
  return found;
}

/** Joins a relative link to the page it is written in: a path from the root. */
function resolve(page: string, link: string): string {
  return new URL(link, new URL(page, "file:///")).pathname.slice(1);
}

Deno.test("anchorOf names headings as GitHub does", () => {
  assert.equal(anchorOf("What happens after `200`"), "what-happens-after-200");
  assert.equal(anchorOf("Burst: `deno task bench`"), "burst-deno-task-bench");
  assert.equal(
    anchorOf("Signing, from any language"),
    "signing-from-any-language",
  );
});

Deno.test("the README is a front door of at most 350 lines", async () => {
  const lines = await lineCount("README.md");
  assert.ok(lines <= 350, `README.md has ${lines} lines`);
});

Deno.test("BENCHMARKS.md holds the current results in at most 300 lines", async () => {
  const lines = await lineCount("BENCHMARKS.md");
  assert.ok(lines <= 300, `BENCHMARKS.md has ${lines} lines`);
});

Deno.test("every link between the documentation pages reaches a page and its heading", async () => {
  const all = await pages();
  assert.ok(all.includes("docs/operating.md"), "docs/ was not read");
  const texts = new Map<string, string>();
  for (const page of all) {
    texts.set(page, await Deno.readTextFile(new URL(page, ROOT)));
  }
  const broken: string[] = [];
  let checked = 0;
  for (const [page, text] of texts) {
    for (const [, link] of prose(text).matchAll(/\]\(([^)\s]+)\)/g)) {
      if (/^[a-z]+:/.test(link!)) continue;
      const [path, anchor] = link!.split("#");
      const target = path ? resolve(page, path) : page;
      if (PENDING_PAGES.has(target)) continue;
      checked++;
      const targetText = texts.get(target) ??
        await Deno.readTextFile(new URL(target, ROOT)).catch(() => undefined);
      if (targetText === undefined) {
        broken.push(`${page}: ${link} (no such file)`);
      } else if (
        anchor && target.endsWith(".md") && !anchors(targetText).has(anchor)
      ) {
        broken.push(`${page}: ${link} (no such heading)`);
      }
    }
  }
  assert.ok(checked > 50, `only ${checked} links were checked`);
  assert.deepEqual(broken, []);
});

Deno.test("every task of deno.json is named in docs/operating.md's table of tasks", async () => {
  const config = JSON.parse(
    await Deno.readTextFile(new URL("deno.json", ROOT)),
  ) as { tasks: Record<string, unknown> };
  const text = await Deno.readTextFile(new URL("docs/operating.md", ROOT));
  const section = text.slice(
    text.indexOf("## Tasks"),
    text.indexOf("\n## ", text.indexOf("## Tasks") + 1),
  );
  const named = new Set(
    [...section.matchAll(/`(?:deno task )?([a-z:]+)`/g)].map((m) => m[1]!),
  );
  const tasks = Object.keys(config.tasks);
  assert.ok(tasks.length > 20, `only ${tasks.length} tasks were read`);
  assert.deepEqual(tasks.filter((task) => !named.has(task)), []);
});

/** The source files of the repository, as paths from the root. */
async function sources(dir = ""): Promise<string[]> {
  const found: string[] = [];
  for await (const entry of Deno.readDir(new URL(dir || ".", ROOT))) {
    const path = `${dir}${entry.name}`;
    if (entry.isDirectory && !entry.name.startsWith(".")) {
      if (entry.name !== "node_modules" && entry.name !== "data") {
        found.push(...await sources(`${path}/`));
      }
    } else if (entry.isFile && /\.tsx?$/.test(entry.name)) found.push(path);
  }
  return found;
}

Deno.test("every heading a code comment names in the docs exists", async () => {
  const files = await sources();
  assert.ok(files.includes("db/query/parse.ts"), "the sources were not read");
  const broken: string[] = [];
  let checked = 0;
  for (const file of files) {
    const text = await Deno.readTextFile(new URL(file, ROOT));
    for (
      const [, page, anchor] of text.matchAll(
        /\b((?:docs\/[a-z_]+|README|BENCHMARKS)\.md)#([a-z0-9-]+)/g,
      )
    ) {
      checked++;
      const target = await Deno.readTextFile(new URL(page!, ROOT)).catch(() =>
        undefined
      );
      if (target === undefined || !anchors(target).has(anchor!)) {
        broken.push(`${file}: ${page}#${anchor}`);
      }
    }
  }
  assert.ok(checked > 30, `only ${checked} references were checked`);
  assert.deepEqual(broken, []);
});

/**
 * The client library's builds: the committed `client/dist` is what
 * `deno task build:client` makes from the current source, the ESM build stays
 * within 4 KB gzipped, the script-tag build defines one global, and Node runs
 * the ESM build.
 */
import assert from "node:assert/strict";
import { sign as serverSign } from "../../auth/signature.ts";
import { buildClient, BUILDS, type BuildSize } from "../../client/build.ts";

const DIST = new URL("../../client/dist/", import.meta.url);

/** Builds into a temporary folder, hands it to `fn`, then removes it. */
async function withBuild(
  fn: (dir: string, sizes: BuildSize[]) => Promise<void>,
): Promise<void> {
  const dir = await Deno.makeTempDir();
  try {
    await fn(dir, await buildClient({ outDir: dir }));
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("the committed client/dist is the build of the current source, within 4 KB gzipped", async () => {
  await withBuild(async (dir, sizes) => {
    for (const { name } of BUILDS) {
      const committed = await Deno.readTextFile(new URL(name, DIST));
      const built = await Deno.readTextFile(`${dir}/${name}`);
      assert.ok(
        committed === built,
        `client/dist/${name} is out of date: run deno task build:client`,
      );
    }
    for (const size of sizes) {
      console.log(`${size.name}: ${size.bytes} B, ${size.gzipBytes} B gzipped`);
    }
    const esm = sizes.find((size) => size.name === "logger.js")!;
    assert.ok(esm.gzipBytes <= 4000, `${esm.gzipBytes} B gzipped`);
    const code = await Deno.readTextFile(`${dir}/logger.js`);
    assert.ok(!code.includes("\n  "), "minified: no indented lines");
  });
});

Deno.test("the script-tag build defines one global, LogIngest", async () => {
  const code = await Deno.readTextFile(new URL("logger.global.js", DIST));
  const before = new Set(Object.getOwnPropertyNames(globalThis));
  const scope = globalThis as Record<string, unknown>;
  try {
    (0, eval)(code);
    const added = Object.getOwnPropertyNames(globalThis)
      .filter((name) => !before.has(name));
    assert.deepEqual(added, ["LogIngest"]);
    const api = scope.LogIngest as Record<string, unknown>;
    assert.deepEqual(Object.keys(api).sort(), [
      "createLogger",
      "sign",
      "signEntry",
      "signedParams",
    ]);
    const sign = api.sign as (secret: string, text: string) => Promise<string>;
    assert.equal(await sign("k", "text"), serverSign("k", "text"));
  } finally {
    delete scope.LogIngest;
  }
});

Deno.test("Node imports the ESM build and signs as the server does", async (t) => {
  const node = Deno.env.get("NODE") ?? "node";
  let output: Deno.CommandOutput;
  try {
    output = await new Deno.Command(node, {
      args: [
        "--input-type=module",
        "-e",
        `import { signEntry } from ${
          JSON.stringify(new URL("logger.js", DIST).href)
        };
         const entry = { level: "info", projectId: "p1", data: { title: "Hé" } };
         console.log(JSON.stringify(await signEntry("k", entry, 1767225600000)));`,
      ],
      stdout: "piped",
      stderr: "piped",
    }).output();
  } catch (error) {
    if (!(error instanceof Deno.errors.NotFound)) throw error;
    console.log(`Skipped: no "${node}" on this machine`);
    await t.step({ name: "node is installed", ignore: true, fn() {} });
    return;
  }
  const stderr = new TextDecoder().decode(output.stderr);
  assert.equal(output.code, 0, stderr);
  const headers = JSON.parse(new TextDecoder().decode(output.stdout));
  assert.deepEqual(headers, {
    timestamp: "1767225600000",
    signature: serverSign(
      "k",
      'p1{"level":"info","projectId":"p1","data":{"title":"Hé"}}1767225600000',
    ),
  });
});

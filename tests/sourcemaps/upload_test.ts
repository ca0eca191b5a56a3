/**
 * Uploading source maps: over HTTP on the dashboard server, with a token of
 * the upload scope (refused for a read token, which the upload token is not
 * either), a bad map answered with a clear JSON error, a map past the bound
 * with `413` JSON; and with `deno task sourcemap upload|list|delete`.
 *
 * @module
 */
import assert from "node:assert/strict";
import { createReadToken } from "../../db/tokens.ts";
import { listSourceMaps, MAX_MAP_BYTES } from "../../db/sourcemaps.ts";
import {
  apiRequest,
  createTokenOnPage,
  dashboardProjectTest,
  type DashHarness,
  signIn,
  store,
  textOf,
} from "../_helpers/dashboard.ts";
import { cli } from "../_helpers/cli.ts";
import { buildBundle, thrownStack } from "../_helpers/bundle.ts";
import { projectTest } from "../_helpers/harness.ts";

const bundle = await buildBundle();
const { map } = bundle;

function upload(
  h: DashHarness,
  projectId: string,
  options: { token?: string; body?: BodyInit; query?: string },
): Promise<Response> {
  const query = options.query ?? "release=1.0.0&url=app.min.js";
  return apiRequest(
    h,
    `/api/v1/projects/${projectId}/sourcemaps?${query}`,
    options.token,
    { method: "POST", body: options.body ?? map },
  );
}

async function tokens(h: DashHarness, projectId: string) {
  const make = async (scope: "read" | "upload") =>
    (await createReadToken(h.kv, {
      projectId,
      name: scope,
      scope,
      createdBy: "cli",
    })).token;
  return { read: await make("read"), upload: await make("upload") };
}

dashboardProjectTest(
  "POST /api/v1/projects/:id/sourcemaps stores a map with a token of the upload scope only",
  async (h, project) => {
    const { read, upload: up } = await tokens(h, project.id);
    const none = await upload(h, project.id, {});
    assert.equal(none.status, 401);
    assert.match((await none.json()).error, /Bearer/);
    const denied = await upload(h, project.id, { token: read });
    assert.equal(denied.status, 403);
    assert.match((await denied.json()).error, /scope is "read"/);
    const other = await h.project();
    const elsewhere = await upload(h, other.id, { token: up });
    assert.equal(elsewhere.status, 404);
    const res = await upload(h, project.id, { token: up });
    assert.equal(res.status, 201);
    const body = await res.json();
    assert.deepEqual(
      [body.release, body.url, body.bytes, body.hasSources],
      ["1.0.0", "app.min.js", new TextEncoder().encode(map).length, true],
    );
    assert.equal((await listSourceMaps(h.kv, project.id)).length, 1);
    // The upload token reads nothing.
    const reading = await apiRequest(
      h,
      `/api/v1/projects/${project.id}/logs`,
      up,
    );
    assert.equal(reading.status, 403);
  },
);

dashboardProjectTest(
  "a bad map or parameter is a 400 JSON error, a map past the bound a 413",
  async (h, project) => {
    const { upload: token } = await tokens(h, project.id);
    const cases: [string, { body?: BodyInit; query?: string }, RegExp][] = [
      ["not JSON", { body: "{nope" }, /not JSON/],
      ["not version 3", { body: '{"version":2}' }, /"version": 3/],
      ["no mappings", { body: '{"version":3}' }, /"mappings"/],
      ["no release", { query: "url=app.min.js" }, /release/],
      ["no url, no file", {
        query: "release=1",
        body: '{"version":3,"sources":[],"mappings":""}',
      }, /"url"/],
    ];
    for (const [name, options, message] of cases) {
      const res = await upload(h, project.id, { token, ...options });
      assert.equal(res.status, 400, name);
      assert.match((await res.json()).error, message, name);
    }
    const big = await upload(h, project.id, {
      token,
      body: new Uint8Array(MAX_MAP_BYTES + 1),
    });
    assert.equal(big.status, 413);
    assert.match((await big.json()).error, new RegExp(String(MAX_MAP_BYTES)));
    assert.deepEqual(await listSourceMaps(h.kv, project.id), []);
  },
);

projectTest(
  "deno task sourcemap uploads, lists and deletes maps by release",
  async (h, project) => {
    const dir = await Deno.makeTempDir();
    try {
      await Deno.writeTextFile(`${dir}/app.min.js.map`, map);
      await Deno.writeTextFile(`${dir}/bad.js.map`, "{");
      const run = (...args: string[]) =>
        cli(h.kv, ["sourcemap", ...args], { now: h.clock.now });
      const up = await run(
        "upload",
        project.id,
        "--release",
        "2.1.0",
        "--url-prefix",
        "https://shop.example.com/assets/",
        `${dir}/app.min.js.map`,
        "--json",
      );
      assert.equal(up.code, 0, up.stderr);
      assert.equal(
        JSON.parse(up.stdout)[0].url,
        "https://shop.example.com/assets/app.min.js",
      );
      const bad = await run(
        "upload",
        project.id,
        "--release",
        "2.1.0",
        `${dir}/bad.js.map`,
      );
      assert.equal(bad.code, 1);
      assert.match(bad.stderr, /not JSON.*bad\.js\.map/);
      // A bad file among good ones stores none of them.
      const mixed = await run(
        "upload",
        project.id,
        "--release",
        "2.2.0",
        `${dir}/app.min.js.map`,
        `${dir}/bad.js.map`,
      );
      assert.equal(mixed.code, 1);
      assert.match(mixed.stderr, /not JSON.*bad\.js\.map/);
      assert.deepEqual(
        (await listSourceMaps(h.kv, project.id)).map((m) => m.release),
        ["2.1.0"],
      );
      const list = await run("list", project.id, "--release", "2.1.0");
      assert.match(
        list.stdout,
        /2\.1\.0\s+https:\/\/shop\.example\.com\/assets\/app\.min\.js/,
      );
      const gone = await run(
        "delete",
        project.id,
        "--release",
        "2.1.0",
        "--json",
      );
      assert.equal(JSON.parse(gone.stdout).length, 1);
      assert.deepEqual(await listSourceMaps(h.kv, project.id), []);
      // A release no upload takes is refused in one line, before any read.
      for (const command of ["list", "delete"]) {
        const long = await run(
          command,
          project.id,
          "--release",
          "r".repeat(3000),
        );
        assert.equal(long.code, 1, command);
        assert.match(
          long.stderr,
          /^Cannot read release "r{40}": expected 1 to/,
        );
        assert.equal(long.stderr.split("\n").filter(Boolean).length, 1);
      }
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
);

dashboardProjectTest(
  "the settings page creates an upload token, which uploads maps and reads nothing",
  async (h, project) => {
    const admin = await signIn(h.dash);
    const { token, html } = await createTokenOnPage(admin, project.id, {
      name: "ci",
      scope: "upload",
    });
    assert.match(textOf(html), /ci\s.*uploads source maps/);
    assert.equal((await upload(h, project.id, { token })).status, 201);
    const reading = await apiRequest(
      h,
      `/api/v1/projects/${project.id}/logs`,
      token,
    );
    assert.equal(reading.status, 403);
    const bad = await admin.post(
      `/projects/${project.id}/settings/tokens`,
      { name: "other", scope: "admin" },
    );
    assert.equal(bad.status, 400);
    assert.match(textOf(await bad.text()), /Cannot read scope "admin"/);
  },
);

dashboardProjectTest(
  "a map of more than 5 MB uploads over HTTP in slices and resolves a stack",
  async (h, project) => {
    const { upload: token } = await tokens(h, project.id);
    const big = JSON.parse(map);
    // Sources of 6 MB more: the bundle's own first, then filler files.
    big.sources.push("src/filler.js");
    big.sourcesContent.push("// filler\n".repeat(600_000));
    const body = JSON.stringify(big);
    assert.ok(body.length > 6_000_000);
    const res = await upload(h, project.id, { token, body });
    assert.equal(res.status, 201, await res.clone().text());
    assert.equal((await res.json()).bytes, body.length);
    const stack = await thrownStack(
      { js: bundle.js, map },
      "https://shop.example.com/app.min.js",
    );
    const [entry] = await store(h, project.id, [{
      level: "error",
      data: { title: "Cart has no items", stack },
      context: { release: "1.0.0" },
    }]);
    const top = entry!.resolved!.frames[0]!;
    assert.deepEqual([top.function, top.file, top.line], [
      "checkout",
      "src/cart.js",
      3,
    ]);
  },
);

dashboardProjectTest(
  "an upload whose bytes stall answers 408, and one cut short 400, with nothing stored",
  async (h, project) => {
    const { upload: token } = await tokens(h, project.id);
    const part = new TextEncoder().encode('{"version":3,');
    const stalled = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(part);
      },
      pull: () => new Promise(() => {}),
    });
    const slow = await upload(h, project.id, { token, body: stalled });
    assert.equal(slow.status, 408);
    assert.match((await slow.json()).error, /not whole within 100 ms/);
    let pulled = false;
    const cut = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (pulled) return controller.error(new Error("connection reset"));
        pulled = true;
        controller.enqueue(part);
      },
    });
    const short = await upload(h, project.id, { token, body: cut });
    assert.equal(short.status, 400);
    assert.match((await short.json()).error, /ended before it was whole/);
    assert.deepEqual(await listSourceMaps(h.kv, project.id), []);
  },
  { dashboard: { uploadTimeMs: 100 } },
);

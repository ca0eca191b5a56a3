/**
 * Where resolved stacks are shown: the entry's page, the error group's page
 * and `deno task errors PROJECT FINGERPRINT` show the original frames of an
 * entry stored before its map was uploaded, and say why when none resolve.
 *
 * @module
 */
import assert from "node:assert/strict";
import { fingerprintOf } from "../../domain/fingerprint.ts";
import {
  buildBundle,
  thrownStack,
  uploadBundleMap,
} from "../_helpers/bundle.ts";
import { cli } from "../_helpers/cli.ts";
import { signedInProjectTest, store, textOf } from "../_helpers/dashboard.ts";

const bundle = await buildBundle();
const stack = await thrownStack(bundle, "https://shop.example.com/app.min.js");

signedInProjectTest(
  "the entry's page, the group's page and the CLI show an earlier entry resolved once its map is uploaded",
  async (h, browser, project) => {
    const [entry] = await store(h, project.id, [{
      level: "error",
      data: { title: "Cart has no items", stack },
      context: { release: "4.0.0" },
    }]);
    const fp = fingerprintOf(entry!).fingerprint;
    const pages = [
      `/projects/${project.id}/entries/${entry!.id}`,
      `/projects/${project.id}/errors/${fp}`,
    ];
    for (const path of pages) {
      const text = textOf(await (await browser.get(path)).text());
      assert.match(
        text,
        /Frames not resolved: no source maps uploaded for release "4\.0\.0"/,
        path,
      );
    }
    await uploadBundleMap(h.kv, project.id, bundle, h.clock.now(), "4.0.0");
    for (const path of pages) {
      const text = textOf(await (await browser.get(path)).text());
      assert.match(text, /Original stack \(release 4\.0\.0\)/, path);
      assert.match(text, /at checkout \(src\/cart\.js:3:11\)/, path);
      assert.match(text, /throw new TypeError\("Cart has no items"\);/, path);
    }
    const run = await cli(h.kv, ["errors", project.id, fp], {
      now: h.clock.now,
    });
    assert.equal(run.code, 0, run.stderr);
    assert.match(run.stdout, /Original stack \(release 4\.0\.0\):/);
    assert.match(run.stdout, /at pay \(src\/main\.js:4:10\)/);
    const json = await cli(h.kv, ["errors", project.id, fp, "--json"], {
      now: h.clock.now,
    });
    assert.deepEqual(JSON.parse(json.stdout).frame, {
      function: "checkout",
      file: "src/cart.js",
      line: 3,
      column: 11,
    });
  },
);

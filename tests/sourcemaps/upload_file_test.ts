/**
 * `deno task sourcemap upload` reads a map file within the bound of one map:
 * a path that is no regular file (a FIFO no one writes, `/dev/zero`, a
 * directory) or a missing one is refused at once in one line, and a file
 * past the bound is refused at its size, without being read.
 *
 * @module
 */
import assert from "node:assert/strict";
import { listSourceMaps, MAX_MAP_BYTES } from "../../db/sourcemaps.ts";
import { assertRefused, cli } from "../_helpers/cli.ts";
import {
  EVENT_TIMEOUT_MS,
  projectTest,
  withTimeout,
} from "../_helpers/harness.ts";
import { peakRss } from "../_helpers/memory.ts";

/** Runs `fn` with a new temporary folder, removed after. */
async function withDir(fn: (dir: string) => Promise<void>): Promise<void> {
  const dir = await Deno.makeTempDir();
  try {
    await fn(dir);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

projectTest(
  "a path that is no regular file is refused at once in one line, and nothing is stored",
  async (h, project) => {
    const upload = (path: string) =>
      cli(h.kv, ["sourcemap", "upload", project.id, "--release", "1", path], {
        now: h.clock.now,
      });
    await withDir(async (dir) => {
      const fifo = `${dir}/app.js.map`;
      const made = await new Deno.Command("mkfifo", { args: [fifo] }).output();
      assert.ok(made.success, "mkfifo");
      // A FIFO no one writes: opening it to read waits for a writer.
      const run = upload(fifo);
      try {
        assertRefused(
          await withTimeout(run, EVENT_TIMEOUT_MS, "the FIFO to be refused"),
          `Cannot read "${fifo}": not a regular file`,
        );
      } finally {
        // Ends a read the command started, if any: a writer that leaves.
        (await Deno.open(fifo, { read: true, write: true })).close();
        await run;
      }
      for (
        const [path, message] of [
          ["/dev/zero", `Cannot read "/dev/zero": not a regular file`],
          [dir, `Cannot read "${dir}": not a regular file`],
          [
            `${dir}/none.js.map`,
            `Cannot read "${dir}/none.js.map": no such file`,
          ],
        ]
      ) {
        const refused = await upload(path!);
        assertRefused(refused, message!);
        assert.equal(refused.code, 1);
        assert.doesNotMatch(refused.stderr, /^\s+at /m);
      }
    });
    assert.deepEqual(await listSourceMaps(h.kv, project.id), []);
  },
);

projectTest(
  "a file past the bound of one map is refused at its size, without being read",
  async (h, project) => {
    await withDir(async (dir) => {
      const upload = (path: string) =>
        cli(h.kv, ["sourcemap", "upload", project.id, "--release", "1", path], {
          now: h.clock.now,
        });
      // Sparse files: their size is set, no byte written.
      const over = `${dir}/over.js.map`;
      await Deno.writeFile(over, new Uint8Array());
      await Deno.truncate(over, MAX_MAP_BYTES + 1);
      assertRefused(
        await upload(over),
        `Cannot store a source map of ${
          MAX_MAP_BYTES + 1
        } bytes: the most is ${MAX_MAP_BYTES} (over.js.map)`,
      );
      // Read whole, a file of 64 MiB would take as much memory at least.
      const huge = `${dir}/huge.js.map`;
      await Deno.writeFile(huge, new Uint8Array());
      await Deno.truncate(huge, 64 << 20);
      const before = Deno.memoryUsage().rss;
      const [run, peak] = await peakRss(() => upload(huge));
      assert.ok(
        peak - before < 32 << 20,
        `${peak - before} bytes more resident while refusing`,
      );
      assertRefused(
        run,
        `Cannot store a source map of ${
          64 << 20
        } bytes: the most is ${MAX_MAP_BYTES} (huge.js.map)`,
      );
    });
    assert.deepEqual(await listSourceMaps(h.kv, project.id), []);
  },
);

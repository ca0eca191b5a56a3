/**
 * A database left by a server that was killed (its `-wal` and `-shm` files
 * still beside it) on a disk that became read-only: SQLite opens it, so
 * only a write at start-up finds it out. The disk is a tmpfs remounted
 * read-only, since permission bits do not bind root.
 *
 * @module
 */
import assert from "node:assert/strict";
import {
  CAN_MOUNT,
  mountTmpfs,
  remountReadOnly,
  runMain,
  startServer,
  unmount,
} from "../_helpers/disk.ts";

Deno.test({
  name:
    "on a read-only disk whose -wal and -shm files exist, the server stops at start-up with one line naming KV_PATH",
  ignore: !CAN_MOUNT,
  fn: async () => {
    const dir = await Deno.makeTempDir();
    try {
      assert.ok(await mountTmpfs(dir, "64m"));
      const path = `${dir}/kv.sqlite`;
      // A first run that takes an entry and is killed: SQLite leaves its
      // write-ahead log and shared-memory files behind.
      const first = await startServer({ KV_PATH: path });
      const res = await fetch(`${first.url}/api/v1/logs`, {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: '{"level":"info","projectId":"p","data":{}}',
      });
      assert.equal(res.status, 200);
      await res.body?.cancel();
      first.child.kill("SIGKILL");
      await first.done;
      const names = [...Deno.readDirSync(dir)].map((e) => e.name).sort();
      assert.ok(names.includes("kv.sqlite-wal"), names.join(", "));
      assert.ok(names.includes("kv.sqlite-shm"), names.join(", "));

      assert.ok(await remountReadOnly(dir));
      const exit = await runMain({ KV_PATH: path });
      assert.equal(exit.code, 1, `exit code 1 expected: ${exit.stderr}`);
      const text = exit.stderr.trim();
      assert.doesNotMatch(text, /\n/, "one line");
      assert.match(
        text,
        new RegExp(`^Cannot open KV_PATH "${path}": cannot write to it: `),
      );
      assert.doesNotMatch(exit.stdout, /Listening/);
    } finally {
      await unmount(dir);
      await Deno.remove(dir, { recursive: true });
    }
  },
});

if (!CAN_MOUNT) {
  console.log(
    "kv_read_only_test: skipped, this process may not mount a tmpfs (it needs root or CAP_SYS_ADMIN)",
  );
}

/**
 * A full disk (docs/design.md#full-disk): the real server on a small tmpfs,
 * filled under load and freed again. It answers 503 while the disk is full,
 * stays alive, answers 200 again once space returns, and every entry it
 * answered 200 ends stored exactly once. And a database that cannot be
 * opened or written at start-up stops the server with one line naming
 * `KV_PATH`. The tmpfs cases need the right to mount one (root on Linux) and
 * are ignored otherwise.
 */
import assert from "node:assert/strict";
import { listLogs } from "../../db/query/mod.ts";
import { createProject } from "../../db/projects.ts";
import { pendingBatchesPrefix } from "../../db/keys.ts";
import {
  CAN_MOUNT,
  delay,
  type Exit,
  fill,
  mountTmpfs,
  remountReadOnly,
  runMain,
  type Server,
  startServer,
  stopServer,
  unmount,
  withTmpfs,
} from "../_helpers/disk.ts";
import { postEntry } from "../_helpers/server_process.ts";
import { ORIGIN } from "../_helpers/harness.ts";

/**
 * Size of the tmpfs: the database, the reserve, and room to fill. The filler
 * takes what is left, so it must stay well above the reserve and the margin
 * the server waits for once it is deleted, however much the load stored.
 */
const VOLUME_MB = 48;
/** Expiring keys: 3 MB that Deno deletes on its own while the disk is full. */
const EXPIRING_KEYS = 1000;
const EXPIRING_VALUE_BYTES = 3000;
/**
 * Long enough for the server to start and the disk to be filled first, on
 * any machine: start-up takes about 1 s, several on a busy machine.
 */
const EXPIRE_IN_MS = 15_000;
/** Longest wait for the server to answer as expected: against a hang only. */
const WAIT_MS = 30_000;
/** How long the disk stays full at least, from the first 503. */
const HOLD_MS = 3000;

if (!CAN_MOUNT) {
  console.log(
    "disk_full_test: cannot mount a tmpfs here (needs root on Linux): " +
      "the full-disk tests are ignored",
  );
}

interface Answer {
  seq: number;
  /** HTTP status, 0 when the request failed. */
  status: number;
  /** When the request was sent, `performance.now()`. */
  sent: number;
  /** When the answer came, `performance.now()`. */
  at: number;
}

/** Posts entries from `concurrency` loops until `stop()`. */
function load(url: string, projectId: string, concurrency: number) {
  const answers: Answer[] = [];
  let next = 0;
  let stopping = false;
  const loop = async () => {
    while (!stopping) {
      const seq = next++;
      const sent = performance.now();
      let status = 0;
      try {
        status = await postEntry(
          url,
          {
            level: "info",
            projectId,
            data: { title: "disk test", seq, pad: "x".repeat(300) },
          },
          ORIGIN,
          AbortSignal.timeout(WAIT_MS),
        );
      } catch { /* no answer */ }
      answers.push({ seq, status, sent, at: performance.now() });
      if (status !== 200) await delay(5);
    }
  };
  const loops = Array.from({ length: concurrency }, loop);
  return {
    answers,
    /** Waits for an answer with `status` after `since`; resolves to its time. */
    async until(status: number, since: number, timeoutMs: number, count = 1) {
      const deadline = performance.now() + timeoutMs;
      while (performance.now() < deadline) {
        const found = answers.filter((a) =>
          a.status === status && a.at > since
        );
        if (found.length >= count) return found[count - 1]!.at;
        await delay(10);
      }
      throw new Error(
        `No ${status} within ${timeoutMs} ms: ${summary(answers, since)}`,
      );
    },
    async stop() {
      stopping = true;
      await Promise.all(loops);
    },
  };
}

function summary(answers: Answer[], since = -Infinity): string {
  const counts: Record<number, number> = {};
  for (const a of answers) {
    if (a.at > since) counts[a.status] = (counts[a.status] ?? 0) + 1;
  }
  return JSON.stringify(counts);
}

/** One outage: the server started on a tmpfs, the disk filled and freed. */
interface Outage {
  /** How long entries are sent before the disk is filled (0: filled at once). */
  loadMs: number;
  /**
   * Keys written before the server starts that expire while the disk is
   * full: Deno's SQLite backend deletes them on its own, a write that no
   * commit of the server makes.
   */
  expiring: boolean;
}

async function outage(options: Outage): Promise<void> {
  const dir = await Deno.makeTempDir();
  assert.ok(await mountTmpfs(dir, `${VOLUME_MB}m`), "mount a tmpfs");
  let server: Server | undefined;
  let kv: Deno.Kv | undefined;
  try {
    const kvPath = `${dir}/kv.sqlite`;
    kv = await Deno.openKv(kvPath);
    const project = await createProject(kv, { name: "disk", allow: [ORIGIN] });
    let expiresAt = -Infinity;
    if (options.expiring) {
      const value = new Uint8Array(EXPIRING_VALUE_BYTES);
      for (let i = 0; i < EXPIRING_KEYS; i += 50) {
        const op = kv.atomic();
        for (let j = i; j < i + 50; j++) {
          op.set(["disk_full_test", j], value, { expireIn: EXPIRE_IN_MS });
        }
        await op.commit();
      }
      expiresAt = performance.now() + EXPIRE_IN_MS;
    }
    // Closed, so that the server starts with a fresh write-ahead log.
    kv.close();
    kv = undefined;

    server = await startServer({ KV_PATH: kvPath });
    const sender = load(server.url, project.id, 8);
    let measured: string;
    try {
      if (options.loadMs > 0) {
        await sender.until(200, -Infinity, WAIT_MS);
        await delay(options.loadMs);
      }
      const filledAt = performance.now();
      const filled = await fill(`${dir}/filler`);
      assert.ok(
        filledAt < expiresAt - 1000 || !options.expiring,
        "the keys must expire while the disk is full: the server started too slowly",
      );
      const first503 = await sender.until(503, filledAt, WAIT_MS);
      // Long enough for the expired keys to be deleted.
      const holdUntil = Math.max(first503 + HOLD_MS, expiresAt + 1500);
      while (performance.now() < holdUntil) {
        assert.ok(!server.exited, `the server exited: ${server.stderr()}`);
        await delay(50);
      }
      // Requests sent once a 503 has come: one sent earlier may have been
      // taken before the disk was full, however late its answer.
      const held = sender.answers.filter((a) => a.sent > first503);
      assert.ok(
        held.length > 0,
        "requests are answered while the disk is full",
      );
      assert.deepEqual(
        held.filter((a) => a.status !== 503),
        [],
        "every answer while the disk is full is 503",
      );
      await Deno.remove(`${dir}/filler`);
      const freedAt = performance.now();
      const back = await sender.until(200, freedAt, WAIT_MS);
      await delay(300);
      await sender.stop();
      measured = `filled ${(filled / 1024 / 1024).toFixed(1)} MiB; ` +
        `first 503 ${Math.round(first503 - filledAt)} ms after filling; ` +
        `503 for ${((freedAt - first503) / 1000).toFixed(1)} s; ` +
        `200 again ${Math.round(back - freedAt)} ms after freeing`;
    } finally {
      await sender.stop();
    }

    // Batches caught by the full disk are processed once space is back.
    kv = await Deno.openKv(kvPath);
    const deadline = Date.now() + WAIT_MS;
    while (
      (await Array.fromAsync(
          kv.list({ prefix: pendingBatchesPrefix() }, { limit: 1 }),
        )).length > 0 && Date.now() < deadline
    ) {
      await delay(100);
    }
    await stopServer(server);
    assert.doesNotMatch(server.stderr(), /panicked/);

    const stored = new Map<number, number>();
    for await (const log of listLogs(kv, project.id)) {
      const seq = log.data.seq as number;
      stored.set(seq, (stored.get(seq) ?? 0) + 1);
    }
    const acked = sender.answers.filter((a) => a.status === 200);
    assert.deepEqual(
      acked.filter((a) => !stored.has(a.seq)).map((a) => a.seq),
      [],
      "every entry answered 200 is stored",
    );
    assert.deepEqual(
      [...stored].filter(([, n]) => n > 1),
      [],
      "no entry is stored twice",
    );
    console.log(
      `${measured}; ${acked.length} answered 200, ` +
        `${stored.size} stored; answers ${summary(sender.answers)}`,
    );
  } finally {
    if (server) await stopServer(server);
    kv?.close();
    await unmount(dir);
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test({
  name:
    "a disk filled under load answers 503 without ending the server, 200 returns once space does, and every entry answered 200 is stored once",
  ignore: !CAN_MOUNT,
  fn: () => outage({ loadMs: 2500, expiring: false }),
});

Deno.test({
  name:
    "keys expiring while the disk is full do not end the server: the released reserve gives Deno's own deletes room",
  ignore: !CAN_MOUNT,
  fn: () => outage({ loadMs: 0, expiring: true }),
});

/** Asserts that `main.ts` ended with code 1 and one line matching `line`. */
function assertOneLine(exit: Exit, line: RegExp): void {
  assert.equal(exit.code, 1, `exit code 1 expected: ${exit.stderr}`);
  const text = exit.stderr.trim();
  assert.doesNotMatch(text, /\n/, "one line");
  assert.match(text, line);
}

function kvPathLine(path: string): RegExp {
  return new RegExp(`^Cannot open KV_PATH "${path}": \\S`);
}

/** Whether permission bits bind this process (they do not bind root). */
async function permissionsBind(dir: string): Promise<boolean> {
  const file = `${dir}/probe`;
  await Deno.writeTextFile(file, "");
  await Deno.chmod(file, 0o444);
  try {
    (await Deno.open(file, { write: true })).close();
    return false;
  } catch {
    return true;
  } finally {
    await Deno.remove(file);
  }
}

async function createDatabase(path: string): Promise<void> {
  const kv = await Deno.openKv(path);
  await createProject(kv, { name: "start-up", allow: [ORIGIN] });
  kv.close();
}

Deno.test("the server stops with one line naming KV_PATH when its database cannot be opened or written", async (t) => {
  const dir = await Deno.makeTempDir();
  try {
    await t.step("a directory where the file should be", async () => {
      const path = `${dir}/folder.sqlite`;
      await Deno.mkdir(path);
      assertOneLine(await runMain({ KV_PATH: path }), kvPathLine(path));
    });

    await t.step("a file where its folder should be", async () => {
      await Deno.writeTextFile(`${dir}/plain`, "");
      const path = `${dir}/plain/kv.sqlite`;
      assertOneLine(await runMain({ KV_PATH: path }), kvPathLine(path));
    });

    const bind = await permissionsBind(dir);
    await t.step({
      name: "a read-only file",
      ignore: !bind && !CAN_MOUNT,
      fn: async () => {
        const mnt = `${dir}/ro`;
        await Deno.mkdir(mnt);
        const path = `${mnt}/kv.sqlite`;
        // Root ignores permission bits: a read-only mount stands in.
        if (!bind) assert.ok(await mountTmpfs(mnt, "4m"));
        try {
          await createDatabase(path);
          if (bind) await Deno.chmod(path, 0o444);
          else assert.ok(await remountReadOnly(mnt));
          assertOneLine(await runMain({ KV_PATH: path }), kvPathLine(path));
        } finally {
          if (!bind) await unmount(mnt);
        }
      },
    });

    await t.step({
      name: "no room for a new database",
      ignore: !CAN_MOUNT,
      fn: () =>
        withTmpfs(`${dir}/full`, "1m", async (mnt) => {
          await fill(`${mnt}/filler`);
          const path = `${mnt}/kv.sqlite`;
          assertOneLine(await runMain({ KV_PATH: path }), kvPathLine(path));
        }),
    });

    await t.step({
      name: "no room for the reserve beside an existing database",
      ignore: !CAN_MOUNT,
      fn: () =>
        withTmpfs(`${dir}/tight`, "8m", async (mnt) => {
          const path = `${mnt}/kv.sqlite`;
          await createDatabase(path);
          const filled = await fill(`${mnt}/filler`);
          await Deno.truncate(`${mnt}/filler`, filled - 2 * 1024 * 1024);
          assertOneLine(
            await runMain({ KV_PATH: path }),
            new RegExp(`^Cannot open KV_PATH "${path}": no space left`),
          );
        }),
    });

    await t.step("a malformed variable", async () => {
      assertOneLine(
        await runMain({ KV_PATH: `${dir}/kv.sqlite`, PORT: "eighty" }),
        /^Cannot read "PORT": /,
      );
    });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

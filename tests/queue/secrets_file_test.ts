/**
 * Secrets never in the database file's bytes: entries with a secret-named
 * value and a Luhn-valid card number sent by a browser origin, an app id
 * and a signed server, processed, and then the raw bytes of the KV file,
 * its write-ahead log and its shared memory file searched for them. The
 * queued batches, written before scrubbing and deleted once processed,
 * leave their bytes in free pages and the log: sealed, those bytes are
 * ciphertext (docs/privacy.md#queued-batches).
 *
 * @module
 */
import assert from "node:assert/strict";
import {
  harness,
  ORIGIN,
  postQueued,
  randomEntry,
  signEntry,
} from "../_helpers/harness.ts";

const APP = "com.example.app.ios";

/** What the entries carry; none may be found in the file's bytes. */
const SECRETS = [
  "hunter2-file-secret",
  "file-token-abcdefgh",
  "file-apikey-ijklmnop",
  "4111 1111 1111 1111",
  "5555555555554444",
  "4242-4242-4242-4242",
];

/** The bytes of the database file and its companions, as Latin-1 text. */
async function fileBytes(path: string): Promise<string> {
  const parts: string[] = [];
  for (const suffix of ["", "-wal", "-shm"]) {
    try {
      const bytes = await Deno.readFile(path + suffix);
      parts.push(new TextDecoder("latin1").decode(bytes));
    } catch (error) {
      if (!(error instanceof Deno.errors.NotFound)) throw error;
    }
  }
  return parts.join("\n");
}

Deno.test("no secret-named value or card number sent over HTTP is left in the bytes of the KV file", async () => {
  const dir = await Deno.makeTempDir();
  const path = `${dir}/kv.sqlite`;
  const kv = await Deno.openKv(path);
  const h = await harness({ kv });
  try {
    const project = await h.project([ORIGIN, APP]);
    await postQueued(
      h,
      randomEntry({
        projectId: project.id,
        data: {
          password: "hunter2-file-secret",
          note: "paid with 4111 1111 1111 1111",
        },
      }),
      { Origin: ORIGIN },
    );
    await postQueued(
      h,
      randomEntry({
        projectId: project.id,
        appid: APP,
        data: { token: "file-token-abcdefgh", card: "5555555555554444" },
      }),
    );
    const signed = randomEntry({
      projectId: project.id,
      data: { api_key: "file-apikey-ijklmnop", cc: "4242-4242-4242-4242" },
    });
    await postQueued(
      h,
      signed,
      signEntry(project.secret, signed, h.clock.now()),
    );
    await h.process();
    assert.deepEqual(
      (await h.logs(project.id)).map((r) => r.auth).sort(),
      ["appid", "origin", "signature"],
    );
    // The file while the database is open (log not yet folded in), then
    // once it is closed.
    const open = await fileBytes(path);
    assert.ok(open.includes(project.id), "the file holds the project's keys");
    await h.close();
    kv.close();
    const closed = await fileBytes(path);
    for (const secret of SECRETS) {
      assert.ok(!open.includes(secret), `"${secret}" found in the open file`);
      assert.ok(!closed.includes(secret), `"${secret}" found in the file`);
    }
  } finally {
    await h.close({ checkErrors: false }).catch(() => {});
    try {
      kv.close();
    } catch {
      // closed already
    }
    await Deno.remove(dir, { recursive: true });
  }
});

/**
 * Scrubbing at ingest, end to end: entries with secrets and card numbers
 * sent over HTTP by a browser origin, an app id and a signed server (whose
 * signature still verifies: scrubbing comes after it), stored by the
 * consumer, and then searched for in every KV key and value (deflated
 * chunks inflated), in `deno task logs --json`, in the read API's export,
 * in the error groups and in the kept rejected entries. (The database
 * file's raw bytes are not searched: the queue holds entries as sent until
 * they are authenticated, and SQLite may keep a deleted row's bytes in a
 * free page until it reuses it; see docs/privacy.md#what-is-not-scrubbed.)
 *
 * @module
 */
import assert from "node:assert/strict";
import { inflateRawSync } from "node:zlib";
import { cli } from "../_helpers/cli.ts";
import { withDashboard } from "../_helpers/dashboard.ts";
import { PEER } from "../_helpers/dashboard.ts";
import {
  harnessTest,
  ORIGIN,
  postQueued,
  randomEntry,
  replayWith,
  signEntry,
} from "../_helpers/harness.ts";
import { listRejected } from "../../db/rejected.ts";
import { replayRejected } from "../../queue/replay.ts";
import { allowValue } from "../../db/projects.ts";
import { addScrubRule } from "../../db/scrub.ts";
import { listGroups } from "../../db/error_group_reads.ts";
import { FILTERED } from "../../domain/scrub.ts";

const APP = "com.example.app.ios";

/** Every secret the test sends; none may be stored anywhere. */
const SECRETS = [
  "hunter2-secret-a",
  "secret-b-abcdefgh",
  "secret-c-cookie",
  "secret-d-apikey",
  "secret-e-rejected",
  "secret-f-badsig",
  "secret-g-session",
  "ana@example.com",
  "4111111111111111",
  "4111 1111 1111 1111",
  "4242-4242-4242-4242",
  "5555555555554444",
  "378282246310005",
  "6011111111111117",
];

function assertNoSecret(where: string, text: string): void {
  for (const secret of SECRETS) {
    assert.ok(
      !text.toLowerCase().includes(secret.toLowerCase()),
      `"${secret}" found in ${where}`,
    );
  }
}

/** Every KV key and value as text, and each deflated value inflated. */
async function valuesInflated(kv: Deno.Kv): Promise<string> {
  const parts: string[] = [];
  const text = (value: unknown) =>
    JSON.stringify(value, (_k, v) => typeof v === "bigint" ? String(v) : v);
  for await (const entry of kv.list({ prefix: [] })) {
    parts.push(text(entry.key));
    if (!(entry.value instanceof Uint8Array)) {
      parts.push(text(entry.value));
      continue;
    }
    parts.push(new TextDecoder().decode(entry.value));
    // A chunk's blocks are deflated after a small header: try each start.
    for (let at = 0; at < Math.min(entry.value.length, 64); at++) {
      try {
        parts.push(
          new TextDecoder().decode(inflateRawSync(entry.value.subarray(at))),
        );
      } catch {
        // not a deflate stream from here
      }
    }
  }
  return parts.join("\n");
}

Deno.test("no secret or card number sent over HTTP is stored, listed or exported", async () => {
  await withDashboard(async (h) => {
    const project = await h.project([ORIGIN, APP]);
    const rules = await cli(h.kv, [
      "project",
      "scrub",
      project.id,
      "--key",
      "email",
      "--action",
      "hash",
    ]);
    assert.equal(rules.code, 0, rules.stderr);
    const origin = randomEntry({
      projectId: project.id,
      level: "error",
      data: {
        message: "Payment failed for 5555555555554444",
        password: "hunter2-secret-a",
        note: "paid with 4111 1111 1111 1111 yesterday",
        user: { email: "ana@example.com" },
        stack: "Error: card 6011111111111117\n    at pay (app.js:1:2)",
      },
      context: { Authorization: "Bearer secret-b-abcdefgh" },
    });
    await postQueued(h, origin, { Origin: ORIGIN });
    await postQueued(
      h,
      randomEntry({
        projectId: project.id,
        appid: APP,
        device: { type: "ios", cookie: "secret-c-cookie" },
        data: { user: { email: "ana@example.com" }, "4111111111111111": 1 },
      }),
      {},
    );
    const signed = randomEntry({
      projectId: project.id,
      data: { api_key: "secret-d-apikey", cc: "4242-4242-4242-4242" },
      context: { session_id: "secret-g-session" },
    });
    await postQueued(
      h,
      signed,
      signEntry(project.secret, signed, h.clock.now()),
    );
    // Rejected and kept: a disallowed origin, and a bad signature.
    await postQueued(
      h,
      randomEntry({
        projectId: project.id,
        data: { password: "secret-e-rejected", n: "378282246310005" },
      }),
      { Origin: "https://evil.example.com" },
    );
    const bad = randomEntry({
      projectId: project.id,
      data: { token: "secret-f-badsig" },
    });
    await postQueued(h, bad, signEntry("wrong", bad, h.clock.now()));
    await h.process();

    const logs = await h.logs(project.id);
    assert.deepEqual(logs.map((l) => l.auth).sort(), [
      "appid",
      "origin",
      "signature",
    ]);
    const byAuth = Object.fromEntries(logs.map((l) => [l.auth, l]));
    assert.equal(byAuth.origin!.data.password, FILTERED);
    assert.equal(
      byAuth.origin!.data.note,
      `paid with ${FILTERED} yesterday`,
    );
    const hashed = (byAuth.origin!.data.user as { email: string }).email;
    assert.match(hashed, /^hash:[0-9a-f]{16}$/);
    assert.equal(
      (byAuth.appid!.data.user as { email: string }).email,
      hashed,
      "one user's entries hash alike",
    );
    assert.equal(byAuth.signature!.data.api_key, FILTERED);
    const kept = await listRejected(h.kv, project.id);
    assert.equal(kept.length, 2);
    assert.ok(kept.every((k) => k.entry !== undefined && k.scrubbed));
    const groups = await listGroups(h.kv, project.id, h.clock.now());
    assert.equal(groups.length, 1);
    assertNoSecret("the error groups", JSON.stringify(groups));

    const values = await valuesInflated(h.kv);
    assert.ok(
      values.includes(`paid with ${FILTERED} yesterday`),
      "the chunks were inflated and read",
    );
    assertNoSecret("KV keys and values", values);

    const listed = await cli(h.kv, ["logs", project.id, "--json"]);
    assert.equal(listed.code, 0, listed.stderr);
    assert.equal(listed.stdout.trim().split("\n").length, 3);
    assertNoSecret("logs --json", listed.stdout);
    const rejected = await cli(h.kv, ["rejected", project.id, "--json"]);
    assert.equal(rejected.code, 0, rejected.stderr);
    assertNoSecret("rejected --json", rejected.stdout);

    const token = JSON.parse(
      (await cli(h.kv, [
        "token",
        "create",
        project.id,
        "--name",
        "ci",
        "--json",
      ]))
        .stdout,
    ).token;
    const exported = await h.dash.request(
      `/api/v1/projects/${project.id}/logs?format=ndjson`,
      { headers: { authorization: `Bearer ${token}` } },
      PEER,
    );
    assert.equal(exported.status, 200);
    const ndjson = await exported.text();
    assert.equal(ndjson.trim().split("\n").length, 3);
    assertNoSecret("the NDJSON export", ndjson);
  });
});

harnessTest(
  "a kept rejected entry is scrubbed; replayed, it is scrubbed again by the rules of now, unless its signature can no longer verify",
  async (h) => {
    const project = await h.project([]);
    const unsigned = randomEntry({
      projectId: project.id,
      data: { password: "secret-e-rejected", email: "bo@example.com" },
    });
    await postQueued(h, unsigned, { Origin: ORIGIN });
    const signed = randomEntry({
      projectId: project.id,
      data: { token: "secret-f-badsig" },
    });
    await postQueued(h, signed, signEntry("wrong", signed, h.clock.now()));
    await h.process();
    const kept = await listRejected(h.kv, project.id);
    assertNoSecret("the kept entries", JSON.stringify(kept));
    assert.ok(kept.every((k) => k.scrubbed === true && !k.entry?.raw));

    await allowValue(h.kv, project.id, ORIGIN);
    // A rule added since: the replay scrubs by the rules of now.
    await addScrubRule(h.kv, project.id, { kind: "key", key: "email" });
    const results = await replayRejected(
      h.kv,
      project.id,
      undefined,
      replayWith(h),
    );
    assert.deepEqual(results.map((r) => r.outcome).sort(), [
      "skipped",
      "stored",
    ]);
    const skipped = results.find((r) => r.outcome === "skipped");
    assert.match(
      (skipped as { why: string }).why,
      /content was scrubbed, so its signature cannot verify/,
    );
    const [stored] = await h.logs(project.id);
    assert.equal(stored!.data.password, FILTERED);
    assert.equal(stored!.data.email, FILTERED);
  },
);

/**
 * Kept rejected entries: what is kept of a rejected entry and within which
 * bounds, the text a `bad_signature` entry should have been signed over,
 * and `deno task rejected` (JSON, and inert human output). Replays are in
 * tests/queue/replay_test.ts.
 *
 * @module
 */
import assert from "node:assert/strict";
import { ProjectCache } from "../../auth/projects.ts";
import { sign } from "../../auth/signature.ts";
import {
  globalRejectedEntriesPrefix,
  rejectedEntriesPrefix,
  statsPrefix,
} from "../../db/keys.ts";
import { allowValue } from "../../db/projects.ts";
import {
  KEPT_MAX_BYTES,
  KEPT_TTL_MS,
  listRejected,
} from "../../db/rejected.ts";
import { Consumer } from "../../queue/consumer.ts";
import { replayRejected } from "../../queue/replay.ts";
import {
  assertCounts,
  globalRejected,
  harnessTest,
  ORIGIN,
  pendingBatchIds,
  postEntries,
  postQueued,
  randomEntry,
  replayWith,
  signedMembers,
  signEntry,
  stats,
  withHarness,
} from "../_helpers/harness.ts";
import { rejected } from "../_helpers/cli.ts";
import { atomicView } from "../_helpers/hold.ts";

const OTHER = "https://shop.example.net";

function jsonLines(out: string): Record<string, unknown>[] {
  return out.trim().split("\n").filter((l) => l !== "").map((l) =>
    JSON.parse(l)
  );
}

harnessTest(
  "a rejected entry is kept with its content and listed by rejected --json",
  async (h) => {
    const project = await h.project([ORIGIN]);
    const body = randomEntry({ projectId: project.id, level: "error" });
    await postQueued(h, body, { Origin: OTHER });
    await h.process();
    const run = await rejected(h, [project.id, "--json"]);
    assert.equal(run.code, 0, run.stderr);
    const [kept, ...rest] = jsonLines(run.stdout);
    assert.deepEqual(rest, []);
    assert.equal(kept!.reason, "bad_origin");
    assert.equal(kept!.origin, OTHER);
    assert.equal(kept!.level, "error");
    assert.equal(kept!.at, new Date(h.clock.now()).toISOString());
    assert.deepEqual(kept!.body, {
      level: "error",
      projectId: project.id,
      device: body.device,
      context: body.context,
      data: body.data,
    });
    assert.equal(kept!.expected, undefined);
  },
);

/** How clients in other languages get a signature wrong, as seen from outside. */
const MISTAKES: [string, (params: Record<string, unknown>) => string][] = [
  [
    "Python's json.dumps with its default separators",
    (p) => JSON.stringify(p).replaceAll(",", ", ").replaceAll(":", ": "),
  ],
  [
    "Go's encoding/json with sorted map keys",
    (p) => JSON.stringify(p, Object.keys(p).sort().concat("n", "title")),
  ],
  ["json.Encoder's trailing newline", (p) => JSON.stringify(p) + "\n"],
];

Deno.test("a bad_signature entry shows the exact text the service expected to be signed", async (t) => {
  for (const [name, serialize] of MISTAKES) {
    await t.step(name, async () => {
      await withHarness(async (h) => {
        const project = await h.project([]);
        const { level, projectId, data } = randomEntry({
          projectId: project.id,
          data: { title: "Paid", n: 1 },
        });
        const params = { level, projectId, data };
        const timestamp = String(h.clock.now());
        const signedText = projectId + serialize(params) + timestamp;
        await postQueued(h, params, {
          timestamp,
          signature: sign(project.secret, signedText),
        });
        await h.process();
        await assertCounts(h, project.id, 0, { bad_signature: 1 });
        const expected = projectId + JSON.stringify(params) + timestamp;
        assert.notEqual(expected, signedText);
        const [kept] = jsonLines(
          (await rejected(h, [project.id, "--json"]))
            .stdout,
        );
        assert.equal(kept!.expected, expected);
        assert.equal(kept!.timestamp, timestamp);
        const human = await rejected(h, [project.id]);
        assert.ok(
          human.stdout.includes(`  expected   ${expected}\n`),
          human.stdout,
        );
        // The text shown is the one a correct client signs.
        const fixed = randomEntry({ projectId, data: { title: "Paid", n: 2 } });
        const good = signEntry(project.secret, fixed, h.clock.now());
        await postQueued(h, fixed, good);
        await h.process();
        assert.equal((await stats(h.kv, project.id)).accepted, 1);
      });
    });
  }
  await t.step(
    "echo instead of printf: a newline after the timestamp",
    async () => {
      await withHarness(async (h) => {
        const project = await h.project([]);
        const body = randomEntry({ projectId: project.id });
        const projectId = project.id;
        const params = JSON.stringify(signedMembers(body));
        const timestamp = String(h.clock.now());
        await postQueued(h, body, {
          timestamp,
          signature: sign(
            project.secret,
            `${projectId}${params}${timestamp}\n`,
          ),
        });
        await h.process();
        const [kept] = await listRejected(h.kv, project.id);
        assert.equal(kept!.expected, `${projectId}${params}${timestamp}`);
      });
    },
  );
});

harnessTest(
  "rejected prints what a sender supplied inert for humans and exact with --json",
  async (h) => {
    const project = await h.project([ORIGIN]);
    const appid = "\u001b]0;PWNED\u0007\u001b[2J\u202egpj.exe";
    // Header bytes 0x80-0x9F arrive as C1 controls.
    const origin = "https://a.example\u0085\u009b31m";
    const data = { title: "\u001b[31mred\u202e\u2066" };
    await postQueued(h, randomEntry({ projectId: project.id, appid, data }), {
      Origin: origin,
    });
    await h.process();
    const human = await rejected(h, [project.id]);
    assert.equal(human.code, 0, human.stderr);
    const unsafe = [...human.stdout].filter((c) => {
      const code = c.codePointAt(0)!;
      return (code < 0x20 && c !== "\n") || (code >= 0x7f && code <= 0x9f) ||
        (code >= 0x202a && code <= 0x202e) ||
        (code >= 0x2066 && code <= 0x2069);
    });
    assert.deepEqual(unsafe, []);
    assert.ok(human.stdout.includes("\\u{1b}]0;PWNED\\u{7}\\u{1b}[2J"));
    assert.ok(human.stdout.includes("\\u{202e}gpj.exe"));
    assert.ok(human.stdout.includes("https://a.example\\u{85}\\u{9b}31m"));
    assert.ok(human.stdout.includes("red\\u{202e}\\u{2066}"));
    const [kept] = jsonLines(
      (await rejected(h, [project.id, "--json"])).stdout,
    );
    assert.equal(kept!.appid, appid);
    assert.equal(kept!.origin, origin);
    assert.deepEqual((kept!.body as { data: unknown }).data, data);
  },
);

Deno.test("kept entries are bounded: the newest 100 per project, each at most KEPT_MAX_BYTES, kept 7 days", async (t) => {
  await withHarness(async (h) => {
    const project = await h.project([ORIGIN]);
    await t.step("the newest 100", async () => {
      for (let i = 0; i < 120; i++) {
        await postEntries(h, project.id, { origin: OTHER });
        if (i % 40 === 39) await h.process();
      }
      const kept = await listRejected(h.kv, project.id);
      assert.equal(kept.length, 100);
      const numbers = kept.map((k) => (k.entry!.data as { n: number }).n);
      const all = numbers.toSorted((a, b) => a - b);
      assert.equal(all.at(-1)! - all[0]!, 99, "consecutive, newest");
      assert.deepEqual(numbers, all.toReversed(), "newest first");
      let bytes = 0;
      for await (
        const e of h.kv.list<Uint8Array>({
          prefix: rejectedEntriesPrefix(project.id),
        })
      ) {
        bytes += e.value.length;
      }
      assert.ok(bytes <= 1024 * 1024, `${bytes} bytes kept`);
    });
    await t.step("a large entry is listed without its content", async () => {
      const big = "x".repeat(KEPT_MAX_BYTES);
      await postQueued(
        h,
        randomEntry({ projectId: project.id, data: { big } }),
        {
          Origin: OTHER,
        },
      );
      await h.process();
      const [kept] = await listRejected(h.kv, project.id, { limit: 1 });
      assert.equal(kept!.entry, undefined);
      assert.ok(kept!.omittedBytes! > KEPT_MAX_BYTES);
      assert.equal(kept!.origin, OTHER);
      const human = await rejected(h, [project.id, "--limit", "1"]);
      assert.match(human.stdout, /content +not kept \(\d+ bytes\)/);
      await allowValue(h.kv, project.id, OTHER);
      const [result] = await replayRejected(
        h.kv,
        project.id,
        [kept!.entryId],
        replayWith(h),
      );
      assert.equal(result!.outcome, "skipped");
    });
    await t.step("expiring after 7 days", async () => {
      const expiries: number[] = [];
      const view = atomicView(h.kv, (op) => {
        const set = op.set.bind(op);
        op.set = (key, value, options) => {
          if (key[0] === rejectedEntriesPrefix("")[0]) {
            expiries.push(options?.expireIn ?? -1);
          }
          return set(key, value, options);
        };
        return op;
      });
      const consumer = new Consumer({
        kv: view,
        now: h.clock.now,
        maxSkewMs: h.config.signatureMaxSkewMs,
        projects: new ProjectCache(view, { ttlMs: 0 }),
      });
      await postEntries(h, project.id, { origin: "https://third.example.org" });
      await h.pipeline.producer.flush();
      for (const id of await pendingBatchIds(h.kv)) {
        assert.equal(await consumer.process(id), "processed");
      }
      assert.deepEqual(expiries, [KEPT_TTL_MS]);
      assert.equal(KEPT_TTL_MS, 7 * 86_400_000);
    });
  });
});

harnessTest(
  "entries naming no project are kept in one global ring, never under the named id",
  async (h) => {
    const attacker = "attacker-chosen-id";
    for (let i = 0; i < 105; i++) {
      await postQueued(h, randomEntry({ projectId: `${attacker}-${i % 3}` }), {
        Origin: ORIGIN,
      });
    }
    await h.process();
    assert.deepEqual(await globalRejected(h.kv), { unknown_project: 105 });
    const run = await rejected(h, ["--global", "--json"]);
    const kept = jsonLines(run.stdout);
    assert.equal(kept.length, 100);
    assert.ok(kept.every((k) => k.reason === "unknown_project"));
    assert.ok(kept.some((k) => k.projectId === `${attacker}-0`));
    const global = await Array.fromAsync(
      h.kv.list({ prefix: globalRejectedEntriesPrefix() }),
    );
    assert.equal(global.length, 100);
    for (let i = 0; i < 3; i++) {
      for (
        const prefix of [
          rejectedEntriesPrefix(`${attacker}-${i}`),
          statsPrefix(`${attacker}-${i}`),
        ]
      ) {
        assert.deepEqual(await Array.fromAsync(h.kv.list({ prefix })), []);
      }
    }
    const human = await rejected(h, ["--global", "--limit", "2"]);
    assert.match(
      human.stdout,
      /^Entries naming no existing project: 2 rejected entries/,
    );
    assert.match(human.stdout, /\n {2}project +attacker-chosen-id-/);
  },
);

harnessTest(
  "rejected --reason filters, and refuses a reason that does not exist",
  async (h) => {
    const project = await h.project([ORIGIN]);
    await postEntries(h, project.id, { origin: OTHER });
    await postEntries(h, project.id);
    await h.process();
    const only = jsonLines(
      (await rejected(h, [project.id, "--reason", "no_credentials", "--json"]))
        .stdout,
    );
    assert.deepEqual(only.map((k) => k.reason), ["no_credentials"]);
    const bad = await rejected(h, [project.id, "--reason", "bad"]);
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /^Cannot use --reason "bad": expected one of/);
    const unknown = await rejected(h, ["no-such-project"]);
    assert.equal(unknown.code, 1);
    assert.equal(unknown.stderr, `Cannot find project "no-such-project"\n`);
  },
);

/**
 * `deno task alert add|list|remove|history`, run in-process against an
 * in-memory KV.
 *
 * @module
 */
import assert from "node:assert/strict";
import { getAlertRule, listAlertRules } from "../../db/alerts.ts";
import { createProject } from "../../db/projects.ts";
import { cli } from "../_helpers/cli.ts";
import { fakeClock, withKv } from "../_helpers/harness.ts";

async function withProject(
  body: (kv: Deno.Kv, projectId: string) => Promise<void>,
): Promise<void> {
  await withKv(async (kv) =>
    await body(kv, (await createProject(kv, { name: "shop" })).id)
  );
}

/** The arguments of `alert add` for a rule of `query` posting to `webhook`. */
function addArgs(
  projectId: string,
  query: string,
  webhook = "https://hooks.example.com/a",
): string[] {
  return ["alert", "add", projectId, "--query", query, "--webhook", webhook];
}

Deno.test("alert add stores a rule and prints its secret once", async () => {
  await withProject(async (kv, id) => {
    const added = await cli(kv, [
      ...addArgs(id, "level:error"),
      "--threshold",
      "10",
      "--window",
      "5m",
      "--every",
      "15m",
      "--json",
    ]);
    assert.equal(added.code, 0, added.stderr);
    const rule = JSON.parse(added.stdout);
    assert.match(rule.secret, /^whsec_[0-9a-f]{64}$/);
    assert.equal(rule.threshold, 10);
    assert.equal(rule.window, "5m");
    assert.equal(rule.every, "15m");
    const stored = await getAlertRule(kv, id, rule.id);
    assert.equal(stored?.windowMs, 300_000);
    assert.equal(stored?.everyMs, 900_000);
    assert.equal(stored?.secret, rule.secret);

    const list = await cli(kv, ["alert", "list", id, "--json"]);
    assert.equal(list.code, 0);
    const listed = JSON.parse(list.stdout);
    assert.equal(listed.length, 1);
    assert.equal(listed[0].id, rule.id);
    assert.equal(listed[0].secret, undefined, "list never shows the secret");
    const table = await cli(kv, ["alert", "list", id]);
    assert.ok(table.stdout.includes("> 10 in 5m"));
    assert.ok(!table.stdout.includes(rule.secret));
  });
});

Deno.test("alert add refuses a private webhook unless ALERT_PRIVATE_TARGETS=allow", async () => {
  await withProject(async (kv, id) => {
    const args = addArgs(id, "level:critical", "http://127.0.0.1:9/hook");
    const refused = await cli(kv, args);
    assert.equal(refused.code, 1);
    assert.match(refused.stderr, /ALERT_PRIVATE_TARGETS=allow/);
    assert.deepEqual(await listAlertRules(kv, id), []);
    const allowed = await cli(kv, args, { allowPrivateTargets: true });
    assert.equal(allowed.code, 0, allowed.stderr);
    assert.equal((await listAlertRules(kv, id)).length, 1);
  });
});

Deno.test("alert add names the value at fault", async (t) => {
  await withProject(async (kv, id) => {
    const base = ["alert", "add", id, "--webhook", "https://h.example.com/"];
    const cases: [string, string[], number, RegExp][] = [
      ["a missing query", [], 2, /missing --query Q/],
      ["a bad query", ["--query", '"open'], 1, /quoted text is not closed/],
      [
        "a bad window",
        ["--query", "x", "--threshold", "1", "--window", "5 min"],
        2,
        /Cannot read --window "5 min"/,
      ],
      [
        "a window alone",
        ["--query", "x", "--window", "5m"],
        1,
        /without a threshold/,
      ],
      [
        "a bad threshold",
        ["--query", "x", "--threshold", "-1"],
        2,
        /--threshold/,
      ],
    ];
    for (const [name, extra, code, message] of cases) {
      await t.step(name, async () => {
        const run = await cli(kv, [...base, ...extra]);
        assert.equal(run.code, code);
        assert.match(run.stderr, message);
      });
    }
    const unknown = await cli(kv, ["alert", "list", "nope"]);
    assert.equal(unknown.code, 1);
    assert.match(unknown.stderr, /Cannot find project "nope"/);
  });
});

Deno.test("alert remove deletes the rule; history of a removed rule is refused", async () => {
  await withProject(async (kv, id) => {
    const added = await cli(kv, [...addArgs(id, "level:critical"), "--json"], {
      clock: fakeClock(),
    });
    const ruleId = JSON.parse(added.stdout).id;
    const history = await cli(kv, ["alert", "history", id, ruleId]);
    assert.equal(history.code, 0);
    assert.equal(history.stdout.trim(), "No deliveries yet");
    const removed = await cli(kv, ["alert", "remove", id, ruleId]);
    assert.equal(removed.code, 0);
    assert.deepEqual(await listAlertRules(kv, id), []);
    const again = await cli(kv, ["alert", "remove", id, ruleId]);
    assert.equal(again.code, 1);
    assert.match(again.stderr, /Cannot find alert rule/);
    const gone = await cli(kv, ["alert", "history", id, ruleId]);
    assert.equal(gone.code, 1);
    // Past a key's size: names nothing, never made a key.
    const long = await cli(kv, ["alert", "history", id, "r".repeat(3000)]);
    assert.equal(long.code, 1);
    assert.match(long.stderr, /^Cannot find alert rule/);
  });
});

/**
 * `deno task project scrub`: listing the rules, adding keys, detectors and
 * patterns with their actions, removing them, refusing bad ones with a
 * clear message, the dry run over recent entries, and the audit log.
 *
 * @module
 */
import assert from "node:assert/strict";
import { listAudit } from "../../db/audit.ts";
import { getProject } from "../../db/projects.ts";
import { MAX_SCRUB_RULES } from "../../db/scrub.ts";
import { FILTERED } from "../../domain/scrub.ts";
import { assertRefused, cli, create, json, kvTest } from "../_helpers/cli.ts";
import { projectTest } from "../_helpers/harness.ts";
import { store } from "../_helpers/dashboard.ts";

/** Runs `deno task project scrub PROJECT <args>`. */
function scrub(kv: Deno.Kv, projectId: string, args: string[]) {
  return cli(kv, ["project", "scrub", projectId, ...args]);
}

kvTest(
  "project scrub lists the defaults, adds rules and removes them, each in the audit log",
  async (kv) => {
    const { projectId } = await create(kv);
    const listed = json(
      await scrub(kv, projectId, ["--json"]),
    );
    assert.deepEqual(listed.rules, []);
    assert.ok(
      (listed.defaults as { keys: string[] }).keys.includes("password"),
    );

    const key = json(
      await scrub(kv, projectId, [
        "--key",
        "user_email",
        "--action",
        "hash",
        "--json",
      ]),
    );
    assert.deepEqual(key.rules, [{
      id: "key:user_email",
      kind: "key",
      key: "user_email",
      action: "hash",
    }]);
    const project = await getProject(kv, projectId);
    assert.match(project!.hashKey!, /^[A-Za-z0-9+/=]{40,}$/);
    const shown = await cli(kv, ["project", "show", projectId, "--json"]);
    assert.ok(
      !shown.stdout.includes(project!.hashKey!),
      "the key is never shown",
    );

    await scrub(kv, projectId, ["--detector", "ip"]);
    const pattern = await scrub(kv, projectId, [
      "--pattern",
      "ORD-[0-9]{6}",
      "--action",
      "mask",
    ]);
    assert.equal(pattern.code, 0, pattern.stderr);
    assert.match(pattern.stdout, /Saved rule "pattern:1"/);
    assert.match(
      pattern.stdout,
      /pattern:1 +pattern \/ORD-\[0-9\]\{6\}\/ +mask/,
    );
    assert.match(pattern.stdout, /\(default\) +keys naming secrets +remove/);

    const removed = await scrub(kv, projectId, ["--remove", "ip", "--json"]);
    assert.deepEqual(
      (json(removed).rules as { id: string }[]).map((r) => r.id),
      ["key:user_email", "pattern:1"],
    );
    const audit = await listAudit(kv, projectId);
    assert.deepEqual(
      audit.map((e) => e.action).filter((a) => a.startsWith("scrub.")),
      ["scrub.remove", "scrub.add", "scrub.add", "scrub.add"],
    );
    assert.match(audit[0]!.detail!, /^detector:ip: detector ip → remove$/);
  },
);

kvTest("project scrub refuses bad rules with a clear message", async (kv) => {
  const { projectId } = await create(kv);
  const cases: [string[], RegExp, number][] = [
    [
      ["--detector", "phone"],
      /^Cannot read --detector "phone": expected email, ip, token, iban or card/,
      2,
    ],
    [
      ["--pattern", "(a+)+$"],
      /^Cannot use pattern "\(a\+\)\+\$": a repeated group/,
      1,
    ],
    [["--pattern", "(x)\\1"], /backreferences are not allowed/, 1],
    [["--pattern", "["], /not a regular expression/, 1],
    [["--key=--"], /^Cannot scrub key "--"/, 1],
    [
      ["--key", "a", "--action", "shred"],
      /^Cannot read --action "shred": expected remove, mask or hash/,
      2,
    ],
    [["--key", "a", "--detector", "ip"], /give one of --key/, 2],
    [["--action", "mask"], /^Cannot use --action alone/, 2],
    [
      ["--remove", "nothing"],
      /^Cannot remove rule "nothing": the project has no such rule/,
      1,
    ],
  ];
  for (const [args, message, code] of cases) {
    const run = await scrub(kv, projectId, args);
    assertRefused(run, message);
    assert.equal(run.code, code, args.join(" "));
  }
  assert.equal((await getProject(kv, projectId))!.scrub, undefined);
});

kvTest(`project scrub holds at most ${MAX_SCRUB_RULES} rules`, async (kv) => {
  const { projectId } = await create(kv);
  for (let i = 0; i < MAX_SCRUB_RULES; i++) {
    const run = await scrub(kv, projectId, ["--key", `k${i}`]);
    assert.equal(run.code, 0, run.stderr);
  }
  const again = await scrub(kv, projectId, ["--key", "k0", "--action", "mask"]);
  assert.equal(again.code, 0, "changing a rule's action adds none");
  const over = await scrub(kv, projectId, ["--key", "more"]);
  assertRefused(over, /at most 20 scrubbing rules; remove one first/);
});

projectTest(
  "a dry run shows what a rule would change in recent entries and saves nothing",
  async (h, project) => {
    await store(h, project.id, [
      {
        data: { message: "from 10.1.2.3", user: { email: "ana@example.com" } },
      },
      { data: { message: "nothing here" } },
    ]);
    const dryRun = ["--detector", "ip", "--dry-run", "--json"];
    const out = json(await scrub(h.kv, project.id, dryRun));
    assert.equal(out.read, 2);
    assert.equal(out.changed, 1);
    assert.deepEqual(
      (out.changes as { path: string; before: string; after: string }[]).map((
        c,
      ) => [c.path, c.before, c.after]),
      [["data.message", '"from 10.1.2.3"', `"from ${FILTERED}"`]],
    );
    assert.equal((await getProject(h.kv, project.id))!.scrub, undefined);
    const text = await scrub(h.kv, project.id, [
      "--key",
      "email",
      "--action",
      "hash",
      "--dry-run",
    ]);
    assert.match(text.stdout, /^Dry run of key "email" → hash \(not saved\):/);
    assert.match(text.stdout, /Of the latest 2 entries, 1 would change\./);
    assert.match(
      text.stdout,
      /data\.user\.email: "ana@example\.com" → "hash:[0-9a-f]{16}"/,
    );
    assert.equal((await getProject(h.kv, project.id))!.hashKey, undefined);
  },
);

projectTest(
  "a saved rule applies to entries stored from then on",
  async (h, project) => {
    const run = await scrub(h.kv, project.id, [
      "--key",
      "phone",
      "--action",
      "mask",
    ]);
    assert.equal(run.code, 0, run.stderr);
    const [entry] = await store(h, project.id, [{
      data: { phone: "+44 7700 900123" },
    }]);
    assert.equal(entry!.data.phone, "***********0123");
  },
);

kvTest("the same pattern added again changes its rule's action", async (kv) => {
  const { projectId } = await create(kv);
  const args = ["--pattern", "ORD-[0-9]{6}"];
  await scrub(kv, projectId, args);
  const again = json(
    await scrub(kv, projectId, [...args, "--action", "mask", "--json"]),
  );
  assert.deepEqual(again.rules, [{
    id: "pattern:1",
    kind: "pattern",
    pattern: "ORD-[0-9]{6}",
    action: "mask",
  }]);
});

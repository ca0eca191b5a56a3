/**
 * The operator commands by project name: one resolver for every command, an
 * ambiguous name refused with the ids, `project list` with levels, the
 * `errors` command, and a description for every `deno task`.
 *
 * @module
 */
import assert from "node:assert/strict";
import { addLevel, createProject } from "../../db/projects.ts";
import { cli } from "../_helpers/cli.ts";
import {
  harnessTest,
  ORIGIN,
  postQueued,
  randomEntry,
} from "../_helpers/harness.ts";

harnessTest("a project's name works wherever its id does", async (h) => {
  const project = await createProject(h.kv, {
    name: "Web shop",
    allow: [ORIGIN],
  });
  await postQueued(
    h,
    randomEntry({ projectId: project.id, data: { title: "Hello" } }),
    { Origin: ORIGIN },
  );
  await h.process();
  const opts = { now: h.clock.now };
  const show = await cli(
    h.kv,
    ["project", "show", "Web shop", "--json"],
    opts,
  );
  assert.equal(show.code, 0, show.stderr);
  assert.equal(JSON.parse(show.stdout).projectId, project.id);
  const allow = await cli(
    h.kv,
    ["project", "allow", "web shop", "com.example.app.ios", "--json"],
    opts,
  );
  assert.equal(allow.code, 0, allow.stderr);
  assert.deepEqual(JSON.parse(allow.stdout).settings.allowedOrigin, [
    ORIGIN,
    "com.example.app.ios",
  ]);
  const logs = await cli(h.kv, ["logs", "Web shop", "--json"], opts);
  assert.equal(logs.code, 0, logs.stderr);
  assert.equal(JSON.parse(logs.stdout.trim()).data.title, "Hello");
  const rejected = await cli(h.kv, ["rejected", "Web shop", "--json"], opts);
  assert.equal(rejected.code, 0, rejected.stderr);
  const errors = await cli(h.kv, ["errors", "Web shop"], opts);
  assert.equal(errors.code, 0, errors.stderr);
  assert.match(errors.stdout, /No errors in project "Web shop"/);
});

harnessTest(
  "an ambiguous name is refused with the ids of the projects that share it",
  async (h) => {
    const a = await createProject(h.kv, { name: "api", allow: [] });
    const b = await createProject(h.kv, { name: "api", allow: [] });
    for (const args of [["logs", "api"], ["project", "show", "api"]]) {
      const run = await cli(h.kv, args);
      assert.equal(run.code, 1);
      assert.match(
        run.stderr,
        /Cannot tell which project "api" is: 2 projects/,
      );
      assert.ok(run.stderr.includes(a.id) && run.stderr.includes(b.id));
    }
    const byId = await cli(h.kv, ["project", "show", a.id, "--json"]);
    assert.equal(JSON.parse(byId.stdout).projectId, a.id);
    const none = await cli(h.kv, ["errors", "nope"]);
    assert.equal(none.code, 1);
    assert.match(none.stderr, /Cannot find project "nope"/);
  },
);

harnessTest(
  "project list shows each project's levels, standard and custom",
  async (h) => {
    const project = await createProject(h.kv, { name: "web", allow: [] });
    await addLevel(h.kv, project.id, "audit");
    const run = await cli(h.kv, ["project", "list"]);
    assert.equal(run.code, 0);
    assert.match(run.stdout, /LEVELS/);
    assert.match(run.stdout, /info, warning, error, critical, audit/);
  },
);

harnessTest(
  "errors prints groups with counts, sparkline and fingerprint, and --json one object per group",
  async (h) => {
    const project = await createProject(h.kv, { name: "web", allow: [ORIGIN] });
    for (const n of [1, 2, 3]) {
      await postQueued(
        h,
        randomEntry({
          projectId: project.id,
          level: "error",
          data: { title: `Order ${n} failed` },
        }),
        { Origin: ORIGIN },
      );
    }
    await postQueued(
      h,
      randomEntry({
        projectId: project.id,
        level: "critical",
        data: {
          message: "\u001b[31mDisk full",
          stack: "Error\n    at write (/srv/disk.ts:4:2)",
        },
      }),
      { Origin: ORIGIN },
    );
    await h.process();
    const text = await cli(h.kv, ["errors", "web"], { now: h.clock.now });
    assert.equal(text.code, 0, text.stderr);
    assert.match(
      text.stdout,
      /3 +█ +2026-01-01 00:00:00Z .*\[new\] Order <n> failed/,
    );
    assert.match(text.stdout, /at \/srv\/disk\.ts:write/);
    assert.ok(!text.stdout.includes("\u001b"), "sender text is inert");
    const json = await cli(h.kv, ["errors", "web", "--json"], {
      now: h.clock.now,
    });
    const groups = json.stdout.trim().split("\n").map((l) => JSON.parse(l));
    assert.equal(groups.length, 2);
    const orders = groups.find((g) => g.count === 3)!;
    assert.equal(orders.title, "Order <n> failed");
    assert.equal(orders.new, true);
    assert.equal(orders.firstSeen, "2026-01-01T00:00:00.000Z");
    assert.equal(orders.hourly.length, 24);
    assert.equal(orders.query, `fingerprint:${orders.fingerprint}`);
    // The query lists that group's entries.
    const logs = await cli(h.kv, [
      "logs",
      "web",
      "--query",
      orders.query,
      "--json",
    ], { now: h.clock.now });
    assert.equal(logs.stdout.trim().split("\n").length, 3);
  },
);

Deno.test("every deno task has a description", async () => {
  const config = JSON.parse(
    await Deno.readTextFile(new URL("../../deno.json", import.meta.url)),
  );
  for (const [name, task] of Object.entries(config.tasks)) {
    const t = task as { command?: string; description?: string };
    assert.equal(typeof t.command, "string", `task ${name} has a command`);
    assert.ok((t.description ?? "").length > 10, `task ${name} is described`);
  }
  assert.match(config.tasks.errors.command, /cli\/main\.ts errors$/);
});

harnessTest(
  "rejected shows a bad signature's members as sent beside the expected text",
  async (h) => {
    const project = await createProject(h.kv, { name: "web", allow: [] });
    const body =
      `{"level": "info", "projectId": "${project.id}", "data": {"a": 1}}`;
    const res = await h.post(body, {
      timestamp: String(h.clock.now()),
      signature: "A".repeat(64),
    });
    await res.body?.cancel();
    await h.process();
    const text = await cli(h.kv, ["rejected", "web"], { now: h.clock.now });
    assert.equal(text.code, 0, text.stderr);
    const sent =
      `${project.id}{"level": "info","projectId": "${project.id}","data": {"a": 1}}${h.clock.now()}`;
    assert.ok(text.stdout.includes(`sent       ${sent}`), text.stdout);
    assert.match(text.stdout, /expected +\S+\{"level":"info","projectId"/);
    const json = await cli(h.kv, ["rejected", "web", "--json"], {
      now: h.clock.now,
    });
    assert.equal(JSON.parse(json.stdout.trim()).sent, sent);
  },
);

/**
 * `deno task project`: creating, listing and showing projects, their
 * allowed values, secrets, levels, retention and deletion, run in-process
 * against an in-memory KV with their output captured.
 *
 * @module
 */
import assert from "node:assert/strict";
import { listAudit } from "../../db/audit.ts";
import { getProject, listProjects } from "../../db/projects.ts";
import {
  fakeClock,
  harnessTest,
  ORIGIN,
  postEntries,
  randomEntry,
  withHarness,
} from "../_helpers/harness.ts";
import {
  assertRefused,
  cli,
  create,
  json,
  jsonLines,
  kvTest,
  withKv,
} from "../_helpers/cli.ts";

kvTest(
  "project create --json prints the project with its secret and stores it",
  async (kv) => {
    const out = await create(
      kv,
      "https://app.example.com",
      "com.example.app.ios",
    );
    assert.match(out.projectId, /^[A-Za-z0-9_-]{16,}$/);
    assert.equal(out.name, "web");
    assert.match(out.secret, /^[A-Za-z0-9_-]{43,}$/);
    assert.deepEqual(out.settings.allowedOrigin, [
      "https://app.example.com",
      "com.example.app.ios",
    ]);
    const stored = await getProject(kv, out.projectId);
    assert.equal(stored?.secret, out.secret);
  },
);

kvTest("project create prints the id and the secret for humans", async (kv) => {
  const run = await cli(kv, ["project", "create", "--name", "shop"]);
  assert.equal(run.code, 0, run.stderr);
  const [project] = await listProjects(kv);
  assert.match(run.stdout, /^Created project "shop"/);
  assert.match(run.stdout, new RegExp(`ID +${project!.id}\n`));
  assert.match(run.stdout, new RegExp(`Secret +${project!.secret}\n`));
});

Deno.test("project create refuses wildcards, null and origins with a path", async (t) => {
  await withKv(async (kv) => {
    for (
      const [value, message] of [
        ["*", /^Cannot allow "\*": wildcards are not supported/],
        ["https://*.example.com", /wildcards are not supported/],
        ["null", /^Cannot allow "null"/],
        ["https://app.example.com/path", /no path and no trailing slash/],
        ["https://app.example.com/", /no path and no trailing slash/],
        ["not a value", /^Cannot allow "not a value"/],
      ] as const
    ) {
      await t.step(value, async () => {
        const run = await cli(kv, [
          "project",
          "create",
          "--name",
          "x",
          "--allow",
          value,
        ]);
        assertRefused(run, message);
        assert.equal(run.code, 1);
      });
    }
    const list = await cli(kv, ["project", "list", "--json"]);
    assert.deepEqual(json(list), [], "no project was created");
  });
});

kvTest("project list and show never print the secret", async (kv) => {
  const created = await create(kv, "https://app.example.com");
  const runs = [
    await cli(kv, ["project", "list"]),
    await cli(kv, ["project", "list", "--json"]),
    await cli(kv, ["project", "show", created.projectId]),
    await cli(kv, ["project", "show", created.projectId, "--json"]),
  ];
  for (const run of runs) {
    assert.equal(run.code, 0, run.stderr);
    assert.ok(run.stdout.includes(created.projectId));
    assert.ok(!run.stdout.includes(created.secret), run.stdout);
  }
  const [listed] = json(runs[1]!) as unknown as Record<string, unknown>[];
  assert.equal(listed!.projectId, created.projectId);
  assert.equal("secret" in listed!, false);
  assert.match(
    runs[0]!.stdout,
    /^ID +NAME +ALLOWED +LEVELS +RETENTION +CREATED\n/,
  );
  const shown = json(runs[3]!);
  assert.deepEqual(shown.settings, {
    allowedOrigin: ["https://app.example.com"],
  });
  assert.equal(shown.createdAt, "2026-01-01T00:00:00.000Z");
});

kvTest(
  "project list says how to start when there is no project",
  async (kv) => {
    const run = await cli(kv, ["project", "list"]);
    assert.equal(run.code, 0);
    assert.match(run.stdout, /No projects yet/);
  },
);

Deno.test("project allow adds a value and refuses wildcards, null and paths", async (t) => {
  await withKv(async (kv) => {
    const { projectId } = await create(kv);
    await t.step("an origin and an app id are added", async () => {
      const run = await cli(kv, [
        "project",
        "allow",
        projectId,
        "http://localhost:5173",
      ]);
      assert.equal(run.code, 0, run.stderr);
      assert.match(run.stdout, /^Allowed "http:\/\/localhost:5173"/);
      const out = json(
        await cli(kv, [
          "project",
          "allow",
          projectId,
          "com.example.app",
          "--json",
        ]),
      );
      assert.deepEqual(out.settings, {
        allowedOrigin: ["http://localhost:5173", "com.example.app"],
      });
    });
    for (
      const value of ["*", "null", "https://app.example.com/login"]
    ) {
      await t.step(`"${value}" is refused`, async () => {
        const run = await cli(kv, ["project", "allow", projectId, value]);
        assertRefused(
          run,
          new RegExp(`^Cannot allow "${value.replace("*", "\\*")}"`),
        );
      });
    }
    const project = await getProject(kv, projectId);
    assert.deepEqual(project?.settings.allowedOrigin, [
      "http://localhost:5173",
      "com.example.app",
    ]);
  });
});

/** Origins of the right shape that `new URL` refuses. */
const NO_URL_ORIGINS = [
  "http://a:99999",
  "https://999.1.1.1",
  "http://[:::::]",
];

Deno.test("project allow and create refuse an origin of the right shape that is no URL, in one line", async (t) => {
  await withKv(async (kv) => {
    const { projectId } = await create(kv);
    for (const value of NO_URL_ORIGINS) {
      const message = `Cannot allow "${value}": it is no valid origin`;
      await t.step(value, async () => {
        for (
          const args of [
            ["project", "allow", projectId, value],
            ["project", "create", "--name", "other", "--allow", value],
          ]
        ) {
          const run = await cli(kv, args);
          assertRefused(run, message);
          assert.equal(run.code, 1);
          assert.doesNotMatch(run.stderr, /^\s+at /m);
        }
      });
    }
    assert.deepEqual((await getProject(kv, projectId))?.settings, {
      allowedOrigin: [],
    });
    assert.equal((await listProjects(kv)).length, 1, "nothing was created");
  });
});

kvTest(
  "project disallow removes a value and refuses one not listed",
  async (kv) => {
    const { projectId } = await create(
      kv,
      "https://app.example.com",
      "com.example.app.ios",
    );
    const out = json(
      await cli(kv, [
        "project",
        "disallow",
        projectId,
        "https://app.example.com",
        "--json",
      ]),
    );
    assert.deepEqual(out.settings, { allowedOrigin: ["com.example.app.ios"] });
    assertRefused(
      await cli(kv, ["project", "disallow", projectId, "https://nope.example"]),
      `Cannot disallow "https://nope.example": it is not in the allow-list`,
    );
  },
);

kvTest(
  "project rotate-secret prints a new secret and keeps the old one for the grace period",
  async (kv) => {
    const clock = fakeClock();
    const created = await create(kv);
    const out = json(
      await cli(kv, [
        "project",
        "rotate-secret",
        created.projectId,
        "--grace",
        "2h",
        "--json",
      ], { clock }),
    );
    assert.notEqual(out.secret, created.secret);
    assert.equal(out.previousSecretExpiresAt, "2026-01-01T02:00:00.000Z");
    const stored = await getProject(kv, created.projectId);
    assert.equal(stored?.secret, out.secret);
    assert.equal(stored?.previousSecret, created.secret);

    const human = await cli(kv, [
      "project",
      "rotate-secret",
      created.projectId,
      "--grace",
      "0",
    ], { clock });
    assert.equal(human.code, 0, human.stderr);
    const secret = (await getProject(kv, created.projectId))!.secret;
    assert.ok(human.stdout.includes(secret));
    assert.match(human.stdout, /The previous secret no longer verifies/);
    const shown = await cli(kv, ["project", "show", created.projectId]);
    assert.ok(!shown.stdout.includes(secret));

    // Past a year, the expiry would be no date: refused before rotating.
    assertRefused(
      await cli(kv, [
        "project",
        "rotate-secret",
        created.projectId,
        "--grace",
        "999999999d",
      ], { clock }),
      /^Cannot read --grace "999999999d"/,
    );
    assert.equal((await getProject(kv, created.projectId))!.secret, secret);
    const year = await cli(kv, [
      "project",
      "rotate-secret",
      created.projectId,
      "--grace",
      "365d",
      "--json",
    ], { clock });
    assert.equal(
      json(year).previousSecretExpiresAt,
      "2027-01-01T00:00:00.000Z",
    );
  },
);

harnessTest(
  "project levels adds and removes custom levels, and entries with them are then stored",
  async (h) => {
    const { projectId } = await create(h.kv, "https://app.example.com");
    const added = json(
      await cli(h.kv, [
        "project",
        "levels",
        projectId,
        "add",
        "audit",
        "--json",
      ]),
    );
    assert.deepEqual(added.levels, ["audit"]);
    await h.post(
      randomEntry({ projectId, level: "audit" }),
      { Origin: "https://app.example.com" },
    );
    await h.process();
    assert.equal((await h.logs(projectId))[0]?.level, "audit");

    const shown = await cli(h.kv, ["project", "levels", projectId]);
    assert.match(shown.stdout, /Custom +audit/);
    assertRefused(
      await cli(h.kv, ["project", "levels", projectId, "add", "Bad Level"]),
      /^Cannot use level "Bad Level"/,
    );
    assertRefused(
      await cli(h.kv, ["project", "levels", projectId, "add", "error"]),
      `Cannot add level "error": it is a standard level`,
    );
    const removed = json(
      await cli(h.kv, [
        "project",
        "levels",
        projectId,
        "remove",
        "audit",
        "--json",
      ]),
    );
    assert.deepEqual(removed.levels, []);
    assertRefused(
      await cli(h.kv, ["project", "levels", projectId, "remove", "audit"]),
      /^Cannot remove level "audit"/,
    );
  },
);

kvTest(
  "project retention sets the days kept and refuses other numbers",
  async (kv) => {
    const { projectId } = await create(kv);
    const run = await cli(kv, ["project", "retention", projectId, "7"]);
    assert.equal(run.code, 0, run.stderr);
    assert.match(run.stdout, /kept 7 days/);
    assert.equal((await getProject(kv, projectId))?.retentionDays, 7);
    for (const days of ["0", "-1", "abc", "4000"]) {
      assertRefused(
        await cli(kv, ["project", "retention", projectId, "--", days]),
        /^Cannot keep entries for ".*" days: expected a whole number from 1 to 3650/,
      );
    }
  },
);

Deno.test("project delete asks first, and deletes the project with its logs once confirmed", async (t) => {
  await withHarness(async (h) => {
    const { projectId } = await create(h.kv, "https://app.example.com");
    await postEntries(h, projectId, { origin: ORIGIN });
    await h.process();

    await t.step("no answer keeps the project", async () => {
      const run = await cli(h.kv, ["project", "delete", projectId]);
      assert.equal(run.code, 1);
      assert.equal(run.stdout, "");
      assert.match(run.stderr, /and all its logs\? \[y\/N\]/);
      assert.match(run.stderr, /not confirmed \(pass --yes/);
      assert.notEqual(await getProject(h.kv, projectId), null);
    });
    await t.step("answering no keeps the project", async () => {
      const run = await cli(h.kv, ["project", "delete", projectId], {
        readLine: () => Promise.resolve("n"),
      });
      assert.equal(run.code, 1);
      assert.notEqual(await getProject(h.kv, projectId), null);
    });
    await t.step("answering yes deletes it and its logs", async () => {
      const run = await cli(h.kv, ["project", "delete", projectId], {
        readLine: () => Promise.resolve("y"),
      });
      assert.equal(run.code, 0, run.stderr);
      assert.match(run.stdout, /^Deleted project "web" \(.+\) and 1 entry\n$/);
      assert.equal(await getProject(h.kv, projectId), null);
      assert.deepEqual(await h.logs(projectId), []);
    });
  });
});

kvTest("project delete --yes deletes without asking", async (kv) => {
  const { projectId } = await create(kv);
  let asked = false;
  const run = await cli(kv, [
    "project",
    "delete",
    projectId,
    "--yes",
    "--json",
  ], {
    readLine: () => {
      asked = true;
      return Promise.resolve("n");
    },
  });
  assert.deepEqual(json(run), { projectId, deleted: true, logs: 0 });
  assert.equal(asked, false);
  assert.equal(await getProject(kv, projectId), null);
});

kvTest(
  "every project change is written to an audit log as done by cli, and only a change",
  async (kv) => {
    const { projectId } = await create(kv, "https://app.example.com");
    const runs = [
      ["allow", projectId, "com.example.app.ios"],
      ["disallow", projectId, "https://app.example.com"],
      ["rotate-secret", projectId, "--grace", "90m"],
      ["levels", projectId, "add", "audit"],
      ["levels", projectId, "remove", "audit"],
      ["levels", projectId],
      ["retention", projectId, "7"],
      ["show", projectId],
      ["list"],
      ["retention", projectId, "--help"],
      ["delete", projectId],
    ];
    for (const args of runs) await cli(kv, ["project", ...args]);
    const actions = async (args: string[]) =>
      jsonLines(await cli(kv, ["audit", ...args, "--json"])).map((e) => [
        e.actor,
        e.action,
        e.detail,
      ]);
    assert.deepEqual(await actions([projectId]), [
      ["cli", "settings.retention", "7"],
      ["cli", "settings.levels.remove", "audit"],
      ["cli", "settings.levels.add", "audit"],
      ["cli", "secret.rotate", "90m"],
      ["cli", "settings.disallow", "https://app.example.com"],
      ["cli", "settings.allow", "com.example.app.ios"],
      ["cli", "project.create", "web"],
    ]);
    assert.deepEqual(await actions([]), []);
    await cli(kv, ["project", "delete", projectId, "--yes"]);
    assert.deepEqual(await actions([]), [
      ["cli", "project.delete", `web (${projectId})`],
    ]);
    assert.deepEqual(await listAudit(kv, projectId, 500), []);
  },
);

/**
 * The operator commands (cli/), run in-process against an in-memory KV with
 * their output captured, plus one run of the real entry point as a
 * subprocess on a temporary KV file.
 *
 * @module
 */
import assert from "node:assert/strict";
import { takePositionals, UsageError } from "../../cli/command.ts";
import { formatTable, parseDuration, parseTimeFlag } from "../../cli/format.ts";
import { pendingBatchesPrefix, rejectionKey } from "../../db/keys.ts";
import { getProject, listProjects } from "../../db/projects.ts";
import type { Rejection } from "../../db/stats.ts";
import { MAX_ATTEMPTS } from "../../queue/dead_letters.ts";
import {
  deadLetter,
  EVENT_TIMEOUT_MS,
  type FakeClock,
  fakeClock,
  type Harness,
  randomEntry,
  signEntry,
  withHarness,
  withTimeout,
} from "../_helpers/harness.ts";
import { cli, type Run, type RunOptions } from "../_helpers/cli.ts";

/** Parses the one JSON document a command printed. */
function json(run: Run): Record<string, unknown> {
  assert.equal(run.code, 0, run.stderr);
  return JSON.parse(run.stdout);
}

/** Parses the JSON lines a command printed. */
function jsonLines(run: Run): Record<string, unknown>[] {
  assert.equal(run.code, 0, run.stderr);
  return run.stdout.trim().split("\n").filter((l) => l !== "").map((l) =>
    JSON.parse(l)
  );
}

/** Asserts a one-line refusal on stderr, nothing on stdout, a non-zero exit. */
function assertRefused(run: Run, message: string | RegExp): void {
  assert.notEqual(run.code, 0);
  assert.equal(run.stdout, "");
  assert.equal(run.stderr.trimEnd().split("\n").length, 1, run.stderr);
  if (typeof message === "string") assert.equal(run.stderr, message + "\n");
  else assert.match(run.stderr, message);
}

async function withKv(fn: (kv: Deno.Kv) => Promise<void>): Promise<void> {
  const kv = await Deno.openKv(":memory:");
  try {
    await fn(kv);
  } finally {
    kv.close();
  }
}

/**
 * Runs `logs --follow` until the test aborts `controller` (from its `sleep`),
 * failing, and stopping the command, if it still runs after
 * {@linkcode EVENT_TIMEOUT_MS}.
 */
async function follow(
  kv: Deno.Kv,
  args: string[],
  controller: AbortController,
  options: RunOptions & { clock?: FakeClock } = {},
): Promise<Run> {
  try {
    return await withTimeout(
      cli(kv, args, { ...options, signal: controller.signal }),
      EVENT_TIMEOUT_MS,
      `"${args.join(" ")}" to stop when aborted`,
    );
  } finally {
    controller.abort();
  }
}

/** Creates a project through the CLI and returns it as printed. */
async function create(kv: Deno.Kv, ...allow: string[]) {
  const run = await cli(kv, [
    "project",
    "create",
    "--name",
    "web",
    ...allow.flatMap((a) => ["--allow", a]),
    "--json",
  ]);
  return json(run) as {
    projectId: string;
    name: string;
    secret: string;
    settings: { allowedOrigin: string[] };
  };
}

// ---------------------------------------------------------------- project

Deno.test("project create --json prints the project with its secret and stores it", async () => {
  await withKv(async (kv) => {
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
  });
});

Deno.test("project create prints the id and the secret for humans", async () => {
  await withKv(async (kv) => {
    const run = await cli(kv, ["project", "create", "--name", "shop"]);
    assert.equal(run.code, 0, run.stderr);
    const [project] = await listProjects(kv);
    assert.match(run.stdout, /^Created project "shop"/);
    assert.match(run.stdout, new RegExp(`ID +${project!.id}\n`));
    assert.match(run.stdout, new RegExp(`Secret +${project!.secret}\n`));
  });
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

Deno.test("project list and show never print the secret", async () => {
  await withKv(async (kv) => {
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
});

Deno.test("project list says how to start when there is no project", async () => {
  await withKv(async (kv) => {
    const run = await cli(kv, ["project", "list"]);
    assert.equal(run.code, 0);
    assert.match(run.stdout, /No projects yet/);
  });
});

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

Deno.test("project disallow removes a value and refuses one not listed", async () => {
  await withKv(async (kv) => {
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
  });
});

Deno.test("every command refuses an unknown project with one line and exit 1", async (t) => {
  await withKv(async (kv) => {
    for (
      const args of [
        ["project", "show", "nope"],
        ["project", "allow", "nope", "https://app.example.com"],
        ["project", "disallow", "nope", "https://app.example.com"],
        ["project", "rotate-secret", "nope"],
        ["project", "levels", "nope"],
        ["project", "levels", "nope", "add", "audit"],
        ["project", "retention", "nope", "7"],
        ["project", "delete", "nope", "--yes"],
        ["logs", "nope"],
        ["stats", "nope", "--json"],
      ]
    ) {
      await t.step(args.join(" "), async () => {
        const run = await cli(kv, args);
        assertRefused(run, `Cannot find project "nope"`);
        assert.equal(run.code, 1);
      });
    }
  });
});

Deno.test("a bad flag or argument gives one line on stderr and exit 2", async (t) => {
  await withKv(async (kv) => {
    const { projectId } = await create(kv);
    for (
      const [args, message] of [
        [["project", "create"], /missing --name NAME/],
        [["project", "create", "--name"], /"--name".*expected a value/],
        [
          ["project", "create", "--name", "x", "--bogus"],
          /"--bogus".*unknown option/,
        ],
        [["project", "show"], /^Cannot run "project show": missing ID/],
        [
          ["project", "show", projectId, "extra"],
          /unexpected argument "extra"/,
        ],
        [
          ["project", "frobnicate"],
          /^Cannot run "project frobnicate": unknown command/,
        ],
        [
          ["project", "rotate-secret", projectId, "--grace", "soon"],
          /^Cannot read --grace "soon"/,
        ],
        [
          ["project", "levels", projectId, "rename", "x"],
          /expected "add" or "remove"/,
        ],
        [
          ["logs", projectId, "--since", "yesterday"],
          /^Cannot read --since "yesterday"/,
        ],
        [["logs", projectId, "--limit", "0"], /^Cannot read --limit "0"/],
        [
          ["logs", projectId, "--min-level", "loud"],
          /^Cannot read --min-level "loud"/,
        ],
        [
          ["logs", projectId, "--where", "context.env"],
          /^Cannot read --where "context.env"/,
        ],
        [
          ["logs", projectId, "--follow", "--until", "1h"],
          /^Cannot use --until with --follow/,
        ],
        [["logs", projectId, "--json=yes"], /"--json".*takes no value/],
        [
          ["logs", projectId, "--follow=1"],
          /^Cannot use option "--follow" with "logs": it takes no value\n/,
        ],
        [
          ["logs", projectId, "-x"],
          /^Cannot use option "-x" with "logs": unknown option/,
        ],
        [
          ["project", "create", "--name", "--json"],
          /^Cannot use option "--name" with "project create": expected a value/,
        ],
        [
          ["project", "allow", projectId],
          /^Cannot run "project allow": missing VALUE \(see --help\)\n/,
        ],
        [
          ["deadletters"],
          /^Cannot run "deadletters": missing list\|replay \(see --help\)\n/,
        ],
        [["stats"], /^Cannot run "stats": missing ID/],
        [["deadletters", "purge"], /expected "list" or "replay"/],
        [["frobnicate"], /^Cannot run "frobnicate": unknown command/],
      ] as const
    ) {
      await t.step(args.join(" "), async () => {
        const run = await cli(kv, [...args]);
        assertRefused(run, message);
        assert.equal(run.code, 2);
      });
    }
  });
});

Deno.test("takePositionals types the positionals and names the first one missing", () => {
  const [id, action, name] = takePositionals(
    "project levels",
    ["p1", "add"],
    ["ID", "add|remove?", "NAME?"],
  );
  // Required names are strings, optional ones may be undefined.
  const typed: [string, string | undefined, string | undefined] = [
    id,
    action,
    name,
  ];
  assert.deepEqual(typed, ["p1", "add", undefined]);
  assert.throws(
    () => takePositionals("project allow", ["p1"], ["ID", "VALUE"]),
    (error) => {
      assert.ok(error instanceof UsageError);
      assert.equal(
        error.message,
        `Cannot run "project allow": missing VALUE (see --help)`,
      );
      return true;
    },
  );
  assert.throws(
    () => takePositionals("project show", ["p1", "p2"], ["ID"]),
    /^UsageError: Cannot run "project show": unexpected argument "p2"/,
  );
});

Deno.test("project ids never start with a dash or an underscore, and -- ends the options", async (t) => {
  await withKv(async (kv) => {
    await t.step(
      "ids drawn with a leading - or _ are drawn again",
      async () => {
        // The first id drawn encodes to "-…", the second to "_…" (base64url of
        // a first byte 0xf8 or 0xfc), the third to "A…" (0x00, so that it is
        // never refused by chance): only the third may be kept.
        const forced = [0xf8, 0xfc, 0x00];
        const idDraws: Uint8Array[] = [];
        const real = crypto.getRandomValues;
        crypto.getRandomValues = function <T extends ArrayBufferView | null>(
          array: T,
        ): T {
          real.call(crypto, array as Uint8Array);
          if (array instanceof Uint8Array && array.length === 16) {
            idDraws.push(array);
            const first = forced.shift();
            if (first !== undefined) array[0] = first;
          }
          return array;
        };
        let projectId: string;
        try {
          ({ projectId } = await create(kv));
        } finally {
          crypto.getRandomValues = real;
        }
        assert.equal(idDraws.length, 3, "two ids refused, the third kept");
        assert.match(projectId, /^[A-Za-z0-9][A-Za-z0-9_-]{21}$/);
        assert.notEqual(await getProject(kv, projectId), null);
      },
    );
    await t.step(
      "an argument after -- is an id, even with a dash",
      async () => {
        const { projectId } = await create(kv);
        const run = await cli(kv, [
          "project",
          "show",
          "--json",
          "--",
          projectId,
        ]);
        assert.equal(run.code, 0, run.stderr);
        assert.equal(JSON.parse(run.stdout).projectId, projectId);
        assertRefused(
          await cli(kv, ["project", "show", "--", "-zQ3"]),
          `Cannot find project "-zQ3"`,
        );
      },
    );
  });
});

Deno.test("every command answers --help with its usage and exit 0", async (t) => {
  await withKv(async (kv) => {
    for (
      const args of [
        ["--help"],
        ["project", "--help"],
        ...[
          "create",
          "list",
          "show",
          "allow",
          "disallow",
          "rotate-secret",
          "levels",
          "retention",
          "delete",
        ].map((sub) => ["project", sub, "--help"]),
        ["project", "show", "-h"],
        ["logs", "--help"],
        ["stats", "--help"],
        ["deadletters", "--help"],
      ]
    ) {
      await t.step(args.join(" "), async () => {
        const run = await cli(kv, args);
        assert.equal(run.code, 0, run.stderr);
        assert.match(run.stdout, /Usage:/);
        assert.equal(run.stderr, "");
      });
    }
  });
});

Deno.test("project rotate-secret prints a new secret and keeps the old one for the grace period", async () => {
  await withKv(async (kv) => {
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
  });
});

Deno.test("project levels adds and removes custom levels, and entries with them are then stored", async () => {
  await withHarness(async (h) => {
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
  });
});

Deno.test("project retention sets the days kept and refuses other numbers", async () => {
  await withKv(async (kv) => {
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
  });
});

Deno.test("project delete asks first, and deletes the project with its logs once confirmed", async (t) => {
  await withHarness(async (h) => {
    const { projectId } = await create(h.kv, "https://app.example.com");
    await h.post(randomEntry({ projectId }), {
      Origin: "https://app.example.com",
    });
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

Deno.test("project delete --yes deletes without asking", async () => {
  await withKv(async (kv) => {
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
});

// ------------------------------------------------------------------- logs

/** Stores one entry of each client kind, a second apart. */
async function storeThreeKinds(
  h: Harness,
  project: { projectId: string; secret: string },
) {
  const { projectId, secret } = project;
  await h.post(
    randomEntry({ projectId, level: "info", data: { title: "from browser" } }),
    { Origin: "https://app.example.com" },
  );
  h.clock.advance(1000);
  await h.post(
    randomEntry({
      projectId,
      level: "warning",
      appid: "com.example.app.ios",
      data: { title: "from app" },
      context: { environment: "production", build: 42 },
    }),
  );
  h.clock.advance(1000);
  const body = randomEntry({
    projectId,
    level: "error",
    data: { title: "from server" },
    device: "api-1",
  });
  const { timestamp, signature } = signEntry(secret, body, h.clock.now());
  await h.post(body, { timestamp, signature });
  await h.process();
}

Deno.test("logs --json prints one object per entry with its id, level, members, receipt time and authentication", async () => {
  await withHarness(async (h) => {
    const project = await create(
      h.kv,
      "https://app.example.com",
      "com.example.app.ios",
    );
    await storeThreeKinds(h, project);
    const lines = jsonLines(
      await cli(h.kv, ["logs", project.projectId, "--json"], {
        clock: h.clock,
      }),
    );
    assert.equal(lines.length, 3);
    const [browser, app, server] = lines;
    assert.match(String(browser!.id), /^[0-9a-f]{28}$/);
    assert.equal(browser!.receivedAt, "2026-01-01T00:00:00.000Z");
    assert.equal(browser!.level, "info");
    assert.equal(browser!.auth, "origin");
    assert.equal(browser!.origin, "https://app.example.com");
    assert.equal("appid" in browser!, false);
    assert.deepEqual(browser!.data, { title: "from browser" });
    assert.deepEqual(browser!.device, { type: "browser", os: "Linux" });
    assert.equal(typeof browser!.context, "object");
    assert.equal(app!.auth, "appid");
    assert.equal(app!.appid, "com.example.app.ios");
    assert.equal(app!.receivedAt, "2026-01-01T00:00:01.000Z");
    assert.deepEqual(app!.context, { environment: "production", build: 42 });
    assert.equal(server!.auth, "signature");
    assert.equal(server!.device, "api-1");
    assert.equal(server!.level, "error");
  });
});

Deno.test("logs prints the newest entries oldest first, as many as --limit", async () => {
  await withHarness(async (h) => {
    const { projectId } = await create(h.kv, "https://app.example.com");
    for (let n = 1; n <= 5; n++) {
      await h.post(randomEntry({ projectId, data: { n } }), {
        Origin: "https://app.example.com",
      });
      h.clock.advance(1000);
    }
    await h.process();
    const all = jsonLines(await cli(h.kv, ["logs", projectId, "--json"]));
    assert.deepEqual(all.map((l) => (l.data as { n: number }).n), [
      1,
      2,
      3,
      4,
      5,
    ]);
    const newest = jsonLines(
      await cli(h.kv, ["logs", projectId, "--limit", "2", "--json"]),
    );
    assert.deepEqual(newest.map((l) => (l.data as { n: number }).n), [4, 5]);
  });
});

Deno.test("logs --since and --until take durations back from now and ISO times", async (t) => {
  await withHarness(async (h) => {
    const { projectId } = await create(h.kv, "https://app.example.com");
    // Entries at 00:00, 00:10, 00:20 and 00:30.
    for (let n = 0; n < 4; n++) {
      await h.post(randomEntry({ projectId, data: { minute: n * 10 } }), {
        Origin: "https://app.example.com",
      });
      h.clock.advance(10 * 60_000);
    }
    await h.process();
    h.clock.set(Date.UTC(2026, 0, 1, 0, 35));
    const minutes = async (...args: string[]) =>
      jsonLines(
        await cli(h.kv, ["logs", projectId, "--json", ...args], {
          clock: h.clock,
        }),
      ).map((l) => (l.data as { minute: number }).minute);
    await t.step("--since 15m", async () => {
      assert.deepEqual(await minutes("--since", "15m"), [20, 30]);
    });
    await t.step("--since 1h", async () => {
      assert.deepEqual(await minutes("--since", "1h"), [0, 10, 20, 30]);
    });
    await t.step("--since ISO and --until ISO, both inclusive", async () => {
      assert.deepEqual(
        await minutes(
          "--since",
          "2026-01-01T00:10:00Z",
          "--until",
          "2026-01-01T00:20:00Z",
        ),
        [10, 20],
      );
    });
    await t.step("--until 20m", async () => {
      assert.deepEqual(await minutes("--until", "20m"), [0, 10]);
    });
  });
});

Deno.test("logs filters by level, minimum level, text and field values", async (t) => {
  await withHarness(async (h) => {
    const project = await create(
      h.kv,
      "https://app.example.com",
      "com.example.app.ios",
    );
    await storeThreeKinds(h, project);
    const titles = async (...args: string[]) =>
      jsonLines(await cli(h.kv, ["logs", project.projectId, "--json", ...args]))
        .map((l) => (l.data as { title: string }).title);
    await t.step("--level", async () => {
      assert.deepEqual(await titles("--level", "warning"), ["from app"]);
      assert.deepEqual(await titles("--level", "info,error"), [
        "from browser",
        "from server",
      ]);
      assert.deepEqual(await titles("--level", "info", "--level", "warning"), [
        "from browser",
        "from app",
      ]);
    });
    await t.step("--min-level", async () => {
      assert.deepEqual(await titles("--min-level", "warning"), [
        "from app",
        "from server",
      ]);
    });
    await t.step("--grep, case-insensitive", async () => {
      assert.deepEqual(await titles("--grep", "FROM SERVER"), ["from server"]);
      assert.deepEqual(await titles("--grep", "production"), ["from app"]);
      assert.deepEqual(await titles("--grep", "nothing like it"), []);
    });
    await t.step("--where", async () => {
      assert.deepEqual(
        await titles("--where", "context.environment=production"),
        ["from app"],
      );
      assert.deepEqual(await titles("--where", "context.build=42"), [
        "from app",
      ]);
      assert.deepEqual(await titles("--where", "appid=com.example.app.ios"), [
        "from app",
      ]);
      assert.deepEqual(
        await titles(
          "--where",
          "context.environment=production",
          "--where",
          "level=info",
        ),
        [],
      );
    });
  });
});

Deno.test("logs prints aligned columns for humans, levels coloured only on a terminal without NO_COLOR", async (t) => {
  await withHarness(async (h) => {
    const project = await create(
      h.kv,
      "https://app.example.com",
      "com.example.app.ios",
    );
    await storeThreeKinds(h, project);
    await t.step("plain when not a terminal", async () => {
      const run = await cli(h.kv, ["logs", project.projectId]);
      assert.equal(run.code, 0, run.stderr);
      const lines = run.stdout.trimEnd().split("\n");
      assert.equal(lines.length, 3);
      assert.equal(run.stdout.includes("\x1b["), false);
      assert.match(
        lines[0]!,
        /^2026-01-01 00:00:00\.000Z {2}info {6}https:\/\/app\.example\.com {2}\{"title":"from browser"\}/,
      );
      assert.match(
        lines[1]!,
        /^2026-01-01 00:00:01\.000Z {2}warning {3}com\.example\.app\.ios {6}\{"title":"from app"\} {2}context=\{"environment":"production","build":42\}$/,
      );
      assert.match(
        lines[2]!,
        /^2026-01-01 00:00:02\.000Z {2}error {5}signed {19}/,
      );
      // The data column starts at the same place on every line.
      const at = lines.map((l) => l.indexOf("{"));
      assert.equal(new Set(at).size, 1);
    });
    await t.step("coloured on a terminal", async () => {
      const run = await cli(h.kv, ["logs", project.projectId], {
        isTerminal: true,
      });
      assert.ok(run.stdout.includes("\x1b[31merror\x1b[0m"));
      assert.ok(run.stdout.includes("\x1b[33mwarning\x1b[0m"));
    });
    await t.step("plain on a terminal when NO_COLOR is set", async () => {
      const run = await cli(h.kv, ["logs", project.projectId], {
        isTerminal: true,
        noColor: true,
      });
      assert.equal(run.stdout.includes("\x1b["), false);
    });
    await t.step("--json is never coloured", async () => {
      const run = await cli(h.kv, ["logs", project.projectId, "--json"], {
        isTerminal: true,
      });
      assert.equal(run.stdout.includes("\x1b["), false);
    });
  });
});

Deno.test("logs says so on stderr when no entry matches", async () => {
  await withKv(async (kv) => {
    const { projectId } = await create(kv);
    const run = await cli(kv, ["logs", projectId]);
    assert.equal(run.code, 0);
    assert.equal(run.stdout, "");
    assert.equal(run.stderr, `No entries found in project "${projectId}"\n`);
  });
});

Deno.test("logs --follow prints an entry stored after it started, until stopped", async () => {
  await withHarness(async (h) => {
    const { projectId } = await create(h.kv, "https://app.example.com");
    await h.post(randomEntry({ projectId, data: { title: "before" } }), {
      Origin: "https://app.example.com",
    });
    await h.process();
    const controller = new AbortController();
    let polls = 0;
    const run = await follow(
      h.kv,
      ["logs", projectId, "--follow", "--json"],
      controller,
      {
        clock: h.clock,
        pollMs: 5,
        // Each wait between polls is a step of the test: store an entry after
        // the first listing, then (after the next poll) press Ctrl-C.
        sleep: async (ms) => {
          assert.equal(ms, 5);
          polls++;
          if (polls === 1) {
            h.clock.advance(1000);
            await h.post(
              randomEntry({ projectId, data: { title: "after" } }),
              { Origin: "https://app.example.com" },
            );
            await h.post(
              randomEntry({
                projectId,
                data: { title: "filtered" },
                level: "debug",
              }),
              { Origin: "https://app.example.com" },
            );
            await h.process();
          } else if (polls === 3) {
            controller.abort();
          }
        },
      },
    );
    assert.equal(run.code, 0, run.stderr);
    assert.equal(polls, 3);
    const titles = jsonLines(run).map((l) =>
      (l.data as { title: string }).title
    );
    // Printed once each, although every poll re-reads the recent window.
    assert.deepEqual(titles, ["before", "after"]);
  });
});

Deno.test("logs --follow keeps the lines it adds aligned with the first ones", async () => {
  await withHarness(async (h) => {
    const { projectId } = await create(
      h.kv,
      "https://a.example",
      "com.example.a-much-longer-app-id",
    );
    await h.post(randomEntry({ projectId }), { Origin: "https://a.example" });
    await h.process();
    const controller = new AbortController();
    let polls = 0;
    const run = await follow(
      h.kv,
      ["logs", projectId, "--follow"],
      controller,
      {
        sleep: async () => {
          if (++polls > 1) return controller.abort();
          h.clock.advance(1000);
          await h.post(
            randomEntry({
              projectId,
              appid: "com.example.a-much-longer-app-id",
            }),
          );
          await h.process();
        },
      },
    );
    const lines = run.stdout.trimEnd().split("\n");
    assert.equal(lines.length, 2);
    assert.equal(lines[0]!.indexOf("{"), lines[1]!.indexOf("{"));
    assert.equal(run.stderr, "Waiting for new entries (Ctrl-C to stop)\n");
  });
});

Deno.test("logs --follow prints late-stored entries older than the newest one seen", async () => {
  await withHarness(async (h) => {
    const { projectId } = await create(h.kv, "https://app.example.com");
    const origin = { Origin: "https://app.example.com" };
    // An entry received first but processed last (its batch was retried).
    await h.post(randomEntry({ projectId, data: { title: "late" } }), origin);
    await h.pipeline.producer.flush();
    const [late] = await Array.fromAsync(
      h.kv.list({ prefix: pendingBatchesPrefix() }),
    );
    await h.kv.delete(late!.key);
    h.clock.advance(2000);
    await h.post(
      randomEntry({ projectId, data: { title: "on time" } }),
      origin,
    );
    await h.process();
    const controller = new AbortController();
    let polls = 0;
    const run = await follow(
      h.kv,
      ["logs", projectId, "--follow", "--json"],
      controller,
      {
        sleep: async () => {
          polls++;
          if (polls === 1) {
            await h.kv.set(late!.key, late!.value);
            await h.process();
          } else controller.abort();
        },
      },
    );
    const titles = jsonLines(run).map((l) =>
      (l.data as { title: string }).title
    );
    assert.deepEqual(titles, ["on time", "late"]);
  });
});

// ------------------------------------------------------------------ stats

Deno.test("stats --json counts accepted and rejected entries and lists recent rejections newest first", async () => {
  await withHarness(async (h) => {
    const project = await create(
      h.kv,
      "https://app.example.com",
      "com.example.app.ios",
    );
    const { projectId } = project;
    await storeThreeKinds(h, project);
    h.clock.advance(1000);
    await h.post(randomEntry({ projectId }), {
      Origin: "https://evil.example.com",
    });
    h.clock.advance(1000);
    await h.post(randomEntry({ projectId, appid: "com.evil.app" }));
    h.clock.advance(1000);
    await h.post(randomEntry({ projectId }), {
      Origin: "https://evil.example.com",
    });
    h.clock.advance(1000);
    await h.post(randomEntry({ projectId }));
    await h.process();

    const out = json(await cli(h.kv, ["stats", projectId, "--json"]));
    assert.deepEqual(Object.keys(out), [
      "accepted",
      "acceptedOnReplay",
      "rejected",
      "recent",
      "backlog",
    ]);
    assert.equal(out.accepted, 3);
    const backlog = out.backlog as Record<string, Record<string, unknown>>;
    assert.deepEqual(backlog.queued, {
      batches: 0,
      entries: 0,
      oldestAgeSeconds: null,
    });
    assert.equal(backlog.unmerged!.entries, 3);
    assert.deepEqual(out.rejected, {
      bad_origin: 2,
      no_credentials: 1,
      unknown_appid: 1,
    });
    const recent = out.recent as Record<string, unknown>[];
    assert.deepEqual(
      recent.map((r) => [r.reason, r.at, r.origin ?? r.appid ?? null]),
      [
        ["no_credentials", "2026-01-01T00:00:06.000Z", null],
        ["bad_origin", "2026-01-01T00:00:05.000Z", "https://evil.example.com"],
        ["unknown_appid", "2026-01-01T00:00:04.000Z", "com.evil.app"],
        ["bad_origin", "2026-01-01T00:00:03.000Z", "https://evil.example.com"],
      ],
    );
    assert.match(String(recent[0]!.entryId), /^[0-9a-f]{28}$/);
    assert.equal(recent[0]!.level, "info");
  });
});

Deno.test("stats sorts the ring of recent rejections by time, whatever their slots", async () => {
  await withKv(async (kv) => {
    const { projectId } = await create(kv);
    // After the ring wraps, slot 0 holds the newest rejection.
    const at = (s: number) => Date.UTC(2026, 0, 1, 0, 0, s);
    const slots: [number, Rejection][] = [
      [0, { entryId: "c", at: at(30), reason: "bad_origin", level: "info" }],
      [1, { entryId: "a", at: at(10), reason: "replayed", level: "info" }],
      [2, { entryId: "b", at: at(20), reason: "bad_signature", level: "info" }],
    ];
    for (const [slot, r] of slots) {
      await kv.set(rejectionKey(projectId, slot), r);
    }
    const out = json(await cli(kv, ["stats", projectId, "--json"]));
    assert.deepEqual(
      (out.recent as { entryId: string }[]).map((r) => r.entryId),
      ["c", "b", "a"],
    );
    assert.deepEqual(out.rejected, {});
    assert.equal(out.accepted, 0);
  });
});

Deno.test("stats shows the counters and the reason of each recent rejection for humans", async () => {
  await withHarness(async (h) => {
    const { projectId } = await create(h.kv, "https://app.example.com");
    await h.post(randomEntry({ projectId }), {
      Origin: "https://app.example.com",
    });
    h.clock.advance(1000);
    await h.post(randomEntry({ projectId }), {
      Origin: "https://evil.example.com",
    });
    await h.process();
    const run = await cli(h.kv, ["stats", projectId]);
    assert.equal(run.code, 0, run.stderr);
    assert.match(run.stdout, /^Accepted +1$/m);
    assert.match(run.stdout, /^Rejected +1$/m);
    assert.match(run.stdout, /^ {2}bad_origin +1$/m);
    assert.match(
      run.stdout,
      /^TIME +REASON +LEVEL +ORIGIN \/ APP ID +ENTRY\n2026-01-01 00:00:01Z +bad_origin +info +https:\/\/evil\.example\.com +[0-9a-f]{28}$/m,
    );
  });
});

Deno.test("stats --global counts the rejections of entries naming no project", async () => {
  await withHarness(async (h) => {
    await h.post(randomEntry({ projectId: "no-such-project" }));
    await h.process();
    const out = json(await cli(h.kv, ["stats", "--global", "--json"]));
    assert.deepEqual(out, { rejected: { unknown_project: 1 } });
  });
});

// ------------------------------------------------------------ deadletters

Deno.test("deadletters lists dead letters and replays them for the sweeper", async () => {
  await withHarness(async (h) => {
    const { projectId } = await create(h.kv, "https://app.example.com");
    const batchId = await deadLetter(
      h,
      randomEntry({ projectId }),
      "KV timed out",
    );

    const listed = json(await cli(h.kv, ["deadletters", "list", "--json"]));
    assert.deepEqual(listed, [{
      id: batchId,
      createdAt: "2026-01-01T00:00:00.000Z",
      count: 1,
      attempts: MAX_ATTEMPTS,
      error: "KV timed out",
      parts: 1,
    }]);
    const human = await cli(h.kv, ["deadletters", "list"]);
    assert.match(
      human.stdout,
      new RegExp(
        `^BATCH +CREATED +ENTRIES +ATTEMPTS +ERROR\n${batchId} +2026-01-01 00:00:00Z +1 +5 +KV timed out\n$`,
      ),
    );

    const replayed = await cli(h.kv, ["deadletters", "replay", batchId]);
    assert.equal(replayed.code, 0, replayed.stderr);
    assert.match(replayed.stdout, /^Replayed 1 dead letter \(1 entry\)/);
    assert.equal(
      (await cli(h.kv, ["deadletters", "list"])).stdout,
      "No dead letters\n",
    );
    await h.process();
    assert.equal((await h.logs(projectId)).length, 1);

    assertRefused(
      await cli(h.kv, ["deadletters", "replay", batchId]),
      `Cannot find dead letter "${batchId}"`,
    );
    assertRefused(
      await cli(h.kv, ["deadletters", "list", "nope"]),
      `Cannot find dead letter "nope"`,
    );
    const none = json(await cli(h.kv, ["deadletters", "replay", "--json"]));
    assert.deepEqual(none, { replayed: [] });
  });
});

// --------------------------------------------------------------- helpers

Deno.test("durations and times read as operators write them", () => {
  assert.equal(parseDuration("15m"), 900_000);
  assert.equal(parseDuration("1h30m"), 5_400_000);
  assert.equal(parseDuration("24h"), 86_400_000);
  assert.equal(parseDuration("0"), 0);
  assert.equal(parseDuration("soon"), undefined);
  const now = () => Date.UTC(2026, 0, 1, 12);
  assert.equal(parseTimeFlag("--since", "2h", now), Date.UTC(2026, 0, 1, 10));
  assert.equal(
    parseTimeFlag("--since", "2026-01-01T11:00:00Z", now),
    Date.UTC(2026, 0, 1, 11),
  );
  assert.equal(
    parseTimeFlag("--since", "2026-01-01", now),
    Date.UTC(2026, 0, 1),
  );
  assert.throws(
    () => parseTimeFlag("--since", "Tuesday", now),
    /Cannot read --since "Tuesday"/,
  );
});

Deno.test("tables align columns on visible width, colours not counted", () => {
  assert.equal(
    formatTable([["ID", "LEVEL", "X"], ["a", "\x1b[31merror\x1b[0m", "y"]]),
    "ID  LEVEL  X\na   \x1b[31merror\x1b[0m  y",
  );
});

// ------------------------------------------------------------- subprocess

Deno.test("deno task project runs against the KV named by KV_PATH", async () => {
  const dir = await Deno.makeTempDir();
  const root = new URL("../..", import.meta.url);
  const run = async (...args: string[]) => {
    const controller = new AbortController();
    const child = new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "--allow-env",
        "--allow-read",
        "--allow-write",
        "--allow-net",
        "cli/main.ts",
        ...args,
      ],
      cwd: root,
      env: { KV_PATH: `${dir}/kv.sqlite`, NO_COLOR: "1" },
      stdout: "piped",
      stderr: "piped",
      signal: controller.signal,
    }).spawn();
    const out = await withTimeout(
      child.output(),
      30_000,
      `"deno task ${args.join(" ")}" to exit`,
    ).catch(async (error) => {
      controller.abort();
      await child.status;
      throw error;
    });
    const decoder = new TextDecoder();
    return {
      code: out.code,
      stdout: decoder.decode(out.stdout),
      stderr: decoder.decode(out.stderr),
    };
  };
  try {
    const created = await run("project", "create", "--name", "x", "--json");
    assert.equal(created.code, 0, created.stderr);
    const project = JSON.parse(created.stdout);
    assert.equal(project.name, "x");
    const kv = await Deno.openKv(`${dir}/kv.sqlite`);
    try {
      assert.equal(
        (await getProject(kv, project.projectId))?.secret,
        project.secret,
      );
    } finally {
      kv.close();
    }
    const missing = await run("project", "show", "nope");
    assert.equal(missing.code, 1);
    assert.equal(missing.stderr, `Cannot find project "nope"\n`);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

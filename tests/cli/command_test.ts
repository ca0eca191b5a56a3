/**
 * What every operator command shares (cli/command.ts, cli/main.ts): one
 * line and an exit code for an unknown project or a bad flag, `--help`, the
 * positionals and `--`, and one run of the real entry point as a subprocess
 * on a temporary KV file.
 *
 * @module
 */
import assert from "node:assert/strict";
import { takePositionals, UsageError } from "../../cli/command.ts";
import { getProject } from "../../db/projects.ts";
import { withTimeout } from "../_helpers/harness.ts";
import { assertRefused, cli, create, withKv } from "../_helpers/cli.ts";

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

Deno.test("a project argument longer than any id or name is not found, in one line cut to 100 characters", async (t) => {
  await withKv(async (kv) => {
    const { projectId } = await create(kv);
    const long = "x".repeat(3000);
    const message = `Cannot find project "${"x".repeat(100)}"`;
    for (
      const args of [
        ["logs", long],
        ["stats", long],
        ["rejected", long],
        ["rejected", "replay", long],
        ["errors", long],
        ["errors", "resolve", long, "f".repeat(16)],
        ["releases", long],
        ["usage", long],
        ["audit", long],
        ["alert", "list", long],
        ["token", "list", long],
        ["sourcemap", "list", long],
        ["project", "show", long],
        ["project", "allow", long, "https://app.example.com"],
        ["user", "add", "a@example.com", "--role", "viewer", "--project", long]
          .concat("--password-stdin"),
      ]
    ) {
      await t.step(`${args.join(" ").slice(0, 40)}…`, async () => {
        const run = await cli(kv, args, {
          readLine: () => Promise.resolve("correct horse battery"),
        });
        assertRefused(run, message);
        assert.equal(run.code, 1);
      });
    }
    // A project of the longest name is found by it.
    const named = "n".repeat(200);
    const made = await cli(kv, ["project", "create", "--name", named]);
    assert.equal(made.code, 0, made.stderr);
    const shown = await cli(kv, ["project", "show", named, "--json"]);
    assert.equal(shown.code, 0, shown.stderr);
    assert.notEqual(JSON.parse(shown.stdout).projectId, projectId);
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
          ["project", "rotate-secret", projectId, "--grace", "366d"],
          /^Cannot read --grace "366d": .*at most 365d/,
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
          ["logs", projectId, "--limit", "100001"],
          /^Cannot read --limit "100001": expected a whole number from 1 to 100000$/m,
        ],
        [
          ["audit", projectId, "--limit", "501"],
          /^Cannot read --limit "501": expected a whole number from 1 to 500$/m,
        ],
        [["audit", "--limit", "1.5"], /^Cannot read --limit "1.5"/],
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
          /^Cannot run "deadletters": missing list\|replay\|delete \(see --help\)\n/,
        ],
        [["stats"], /^Cannot run "stats": missing ID/],
        [["deadletters", "purge"], /expected "list", "replay" or "delete"/],
        [["frobnicate"], /^Cannot run "frobnicate": unknown command/],
        // Names an object has by its prototype are no commands.
        [["toString"], /^Cannot run "toString": unknown command/],
        [["constructor"], /^Cannot run "constructor": unknown command/],
        [["project", "toString"], /^Cannot run "project toString": unknown/],
        [["user", "hasOwnProperty", "x"], /^Cannot run "user hasOwnProperty"/],
        [
          ["project", "create", "--name", "a", "--name", "b"],
          /^Cannot use option "--name" twice with "project create"/,
        ],
        // A value outside a fixed set is bad usage, whichever flag.
        [
          ["token", "create", projectId, "--name", "ci", "--scope", "write"],
          /^Cannot read --scope "write": expected read or upload$/m,
        ],
        [
          [
            "alert",
            "add",
            projectId,
            "--on",
            "sometimes",
            "--webhook",
            "https://hooks.example.com/a",
          ],
          /^Cannot read --on "sometimes": expected new, regressed or escalating$/m,
        ],
        [
          ["project", "scrub", projectId, "--action", "burn", "--key", "k"],
          /^Cannot read --action "burn": expected remove, mask or hash$/m,
        ],
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
    const long = await run("logs", "x".repeat(3000));
    assert.equal(long.code, 1);
    assert.equal(long.stderr, `Cannot find project "${"x".repeat(100)}"\n`);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
